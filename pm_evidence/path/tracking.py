r"""Tracking ``log Z`` of a model whose parameters change slowly (seed 004 §4.4).

During training (of an RBM, say) the parameters move a little between gradient updates, so a
set of tempered chains can be carried along: after each update a few sweeps of simulated
tempering give this step's occupancies ``c_k`` and the running ``log Zhat_k`` takes a partial
step towards the RTS estimate (seed 004 eq. (24)),

.. math:: \hat Z_k^{(t+1)} = \hat Z_k^{(t)}
          \left(\frac{r_1}{r_k}\frac{\hat c_k^{(t)}}{\hat c_1^{(t)}}\right)^{\alpha}.

The model must read its changing parameters from ``pm.Data`` containers, so that the compiled
log-density follows ``set_value`` without recompiling (``RBM.to_pymc(mutable=True)`` does this).
The estimate lags a fast-moving model by about ``1/alpha`` updates and carries the Monte Carlo
noise of ``n_sweeps`` sweeps, smoothed by the same factor; occasional long runs of AIS or RTS
are the check (examples/seed004_fig5_tracking.py).
"""

from __future__ import annotations

import numpy as np
import pymc as pm

from pm_evidence.core.utils import as_generator
from pm_evidence.estimators.tempered import rts_partial_update
from pm_evidence.model.log_density import LogDensity, as_target
from pm_evidence.path.plan import PathOptions, make_plan
from pm_evidence.path.runs import TemperingOptions, log_r_of
from pm_evidence.tempering.samplers import (
    TemperingChains,
    TemperingSamplerSettings,
    rts_initial_iterations,
    temper,
)

__all__ = ["LogZTracker"]


class LogZTracker:
    """Running RTS estimate of ``log Z`` for a model with slowly changing ``pm.Data``.

    Parameters
    ----------
    model : pymc.Model or LogDensity, optional
        The model (from the context if omitted). Its changing parameters must be ``pm.Data``.
    n_chains, n_rungs, ladder, beta_min, prior_r, kernel, blocks, reference
        As :func:`pm_evidence.rao_blackwellized_tempered_sampling` (the reference, the ladder
        and the kernel's step size are fixed at construction; pass a reference that stays
        sensible while the model changes, e.g. the data base rate of an RBM). Two defaults
        differ from :class:`~pm_evidence.path.runs.TemperingOptions`': 200 chains, not 1000 (every
        :meth:`update` sweeps all of them), and a linear ladder of 100 rungs, not the adaptive
        one (the pilot would place that for the initial parameters only, and the tracker
        keeps its ladder while they move).
    n_init_sweeps, max_init_iterations
        The initial iterations of seed 004 §2.4, run once at construction.
    random_seed, progressbar
        As elsewhere; the generator is kept and advanced by :meth:`update`.
    backend : {"auto", "numba", "jax"}
        The engine of the model's compiled functions (:mod:`pm_evidence.model.backend`).

    Attributes
    ----------
    options : TemperingOptions
        The tempering options built from the arguments above (the tracker reads the chains,
        the ladder, ``prior_r`` and the initial iterations from it; each :meth:`update` runs
        its own ``n_sweeps``).
    log_z : float
        Current estimate of ``log Z`` (``log Zhat_K``; ``Z_1 = 1`` for the normalized reference).
    history : list of float
        ``log_z`` after construction and after every :meth:`update`.
    n_evaluations : int
        Log-density evaluations so far (the cost of tracking).
    """

    def __init__(
        self,
        model: pm.Model | LogDensity | None = None,
        *,
        n_chains: int = 200,
        n_rungs: int = 100,
        ladder: str | np.ndarray = "linear",
        beta_min: float = 1e-4,
        prior_r="uniform",
        kernel="auto",
        blocks: list | None = None,
        reference="auto",
        n_init_sweeps: int = 50,
        max_init_iterations: int = 10,
        random_seed=None,
        progressbar: bool = False,
        backend: str = "auto",
    ):
        self._target = as_target(model, backend)
        self.options = TemperingOptions(
            n_chains=n_chains, ladder=ladder, n_rungs=n_rungs, beta_min=beta_min,
            prior_r=prior_r, n_init_sweeps=n_init_sweeps, max_init_iterations=max_init_iterations,
        ).sized(self._target.backend.width)  # fmt: skip
        options = self.options
        self._rng = as_generator(random_seed)
        self._progressbar = progressbar
        plan = make_plan(
            self._target,
            PathOptions(reference=reference, kernel=kernel, blocks=blocks),
            random_seed=self._rng,
            progressbar=progressbar,
        )
        self._plan = plan
        self._ladder = plan.ladder(
            options.ladder, options.n_rungs, options.beta_min, default_rungs=options.n_rungs
        )
        self._log_r = log_r_of(options.prior_r, self._ladder.n_rungs)
        state = plan.path.sample_reference(
            self._rng, options.n_chains, with_grad=plan.kernel.needs_grad
        )
        # one run from here on: the chains, their rungs and the points moved carry over
        log_zhat, self._chains, self.init_history, n_eval = rts_initial_iterations(
            self._rng, plan.path, plan.kernel, self._ladder, self._log_r, TemperingChains(state),
            n_sweeps=options.n_init_sweeps, tol=options.init_tol,
            max_iterations=options.max_init_iterations, progressbar=progressbar,
        )  # fmt: skip
        self._log_zhat = log_zhat - log_zhat[0]
        self.n_evaluations = int(n_eval + plan.n_setup_evaluations)
        self.history = [self.log_z]

    @property
    def log_z(self) -> float:
        return float(self._log_zhat[-1])

    @property
    def log_z_rungs(self) -> np.ndarray:
        """Current ``log Zhat_k`` at every rung (``log Zhat_1 = 0``)."""
        return self._log_zhat.copy()

    def update(self, *, n_sweeps: int = 25, alpha: float = 0.2) -> float:
        """Re-evaluate the chains under the model's current parameters, run ``n_sweeps`` sweeps
        of simulated tempering from where they were, and apply eq. (24). Returns ``log_z``."""
        plan = self._plan
        state = plan.path.evaluate(self._chains.points.x, with_grad=plan.kernel.needs_grad)
        settings = TemperingSamplerSettings(
            n_sweeps, progressbar=self._progressbar, description="tracking log Z",
            allow_interrupt=False,
        )  # fmt: skip
        run = temper(
            self._rng, plan.path, plan.kernel, self._ladder, self._log_r, self._log_zhat,
            self._chains._replace(points=state), settings,
        )  # fmt: skip
        self._log_zhat = rts_partial_update(self._log_zhat, run.c_hat, self._log_r, alpha)
        self._chains = run.chains
        self.n_evaluations += int(run.n_evaluations + state.x.shape[0])
        self.history.append(self.log_z)
        return self.log_z
