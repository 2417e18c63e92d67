r"""Binary energy-based models as PyMC models: a grid MRF and a restricted Boltzmann machine.

Both are written in PyMC as Bernoulli(1/2) free variables plus a ``pm.Potential`` holding the
energy, so the model's evidence is

.. math:: \log Z_{\text{model}} = \log \sum_x 2^{-d} e^{E(x)} = \log Z - d \log 2,

with ``Z`` the usual partition function of the energy ``E`` and ``d`` the number of binary
variables. Each class gives the exact ``log Z`` where enumeration is feasible (a transfer
matrix over grid columns; summing out one RBM layer in closed form and enumerating the other),
the references of the seeds (uniform, mean-field for the MRF, seed 000 Fig. 2b; the data base
rate (DBR) distribution for RBMs, seed 004 §4.2) and kernels: checkerboard Gibbs blocks for the
grid, and the RBM's block Gibbs sampler ``h | v, v | h`` for the custom kernel hook.

References
----------
seed 000 §6 (grid MRF set-up; RBM experiments); seed 004 §4 (RBMs, DBR reference, eq. (24)).
Salakhutdinov & Murray (2008) for the base-rate reference and AIS on RBMs; Hinton (2002) for
contrastive divergence.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import special

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.references import BernoulliProductReference

__all__ = [
    "RBM",
    "GridMRF",
    "binary_digits",
    "checkerboard_blocks",
    "grid_mrf",
    "random_rbm",
    "set_rbm_parameters",
    "train_rbm",
    "uniform_reference",
]

LOG2 = float(np.log(2.0))


def uniform_reference(dim: int) -> BernoulliProductReference:
    """The uniform distribution on ``{0, 1}^dim`` (seed 000 Fig. 2a)."""
    return BernoulliProductReference(np.zeros(int(dim)), name="uniform")


def checkerboard_blocks(shape: tuple[int, int]) -> list[np.ndarray]:
    """The two colours of a grid (flat C-order indices): on a nearest-neighbour grid MRF the
    entries of one colour are conditionally independent given the other, so a Gibbs kernel may
    update each colour in one batched step."""
    black = _black_squares(shape).ravel()
    return [np.flatnonzero(black), np.flatnonzero(~black)]


def _black_squares(shape: tuple[int, int]) -> np.ndarray:
    """Boolean ``(rows, cols)`` mask of one checkerboard colour."""
    return np.add.outer(np.arange(shape[0]), np.arange(shape[1])) % 2 == 0


def _bilinear(table, a, b):
    """``table[..., a, b]`` written multilinearly in ``a, b`` (exact at 0/1, smooth between):
    ``t00 (1-a)(1-b) + t01 (1-a) b + t10 a (1-b) + t11 a b``."""
    return (
        table[..., 0, 0] * (1 - a) * (1 - b)
        + table[..., 0, 1] * (1 - a) * b
        + table[..., 1, 0] * a * (1 - b)
        + table[..., 1, 1] * a * b
    )


# ---------------------------------------------------------------------- grid MRF
@dataclass(frozen=True)
class GridMRF:
    r"""Pairwise binary MRF on a ``rows x cols`` grid (seed 000 §6):

    .. math:: E(x) = \sum_{(ij)} \theta_{ij}(x_i, x_j) + \sum_i \theta_i(x_i),
              \qquad x_i \in \{0, 1\},

    over nearest-neighbour edges. ``unary[r, c, k]`` is ``theta_i(k)``; ``horizontal[r, c, k, l]``
    couples ``(r, c)`` and ``(r, c + 1)``; ``vertical[r, c, k, l]`` couples ``(r, c)`` and
    ``(r + 1, c)``.
    """

    unary: np.ndarray  # (rows, cols, 2)
    horizontal: np.ndarray  # (rows, cols - 1, 2, 2)
    vertical: np.ndarray  # (rows - 1, cols, 2, 2)

    @property
    def shape(self) -> tuple[int, int]:
        return self.unary.shape[:2]

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def energy(self, x: np.ndarray) -> np.ndarray:
        """``E(x)`` for binary ``x`` of shape ``(..., rows, cols)`` (or ``(..., rows * cols)``)."""
        x = self._grid(x)
        return self._site_energies(x).sum(axis=(-2, -1))

    def _site_energies(self, x):
        """Per-site energy terms ``(..., rows, cols)``: the unary term plus the edges to the right
        and below. Written with arithmetic only, so ``x`` may be a numpy array or a PyTensor
        variable (the PyMC model and :meth:`energy` share this one formula)."""
        h, v = self.horizontal, self.vertical
        terms = self.unary[..., 0] * (1 - x) + self.unary[..., 1] * x
        terms = terms + _pad_last(_bilinear(h, x[..., :, :-1], x[..., :, 1:]), axis=-1)
        return terms + _pad_last(_bilinear(v, x[..., :-1, :], x[..., 1:, :]), axis=-2)

    def _grid(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        if x.shape[-2:] == self.shape:
            return x
        if x.shape[-1] == self.size:
            return x.reshape(*x.shape[:-1], *self.shape)
        raise EvidenceInputError(
            f"Expected grid states of shape (..., {self.shape[0]}, {self.shape[1]}) or "
            f"(..., {self.size}), got {x.shape}."
        )

    def exact_log_z(self) -> float:
        r"""``log sum_x exp(E(x))`` by a transfer matrix over columns, in log space:
        ``alpha_{c+1}(t) = logsumexp_s [alpha_c(s) + H_c(s, t)] + V_{c+1}(t)``, with ``s, t``
        the ``2^rows`` states of a column. Cost ``O(cols 4^rows)``; rows up to about 12."""
        rows, cols = self.shape
        if rows > 14:
            raise EvidenceInputError(
                f"The transfer matrix has 2^{rows} states per column; use a grid with at most "
                f"14 rows (transpose it if it has fewer columns)."
            )
        states = np.array(list(itertools.product([0.0, 1.0], repeat=rows)))  # (S, rows)

        def column(c):
            unary = self.unary[:, c, 0] * (1 - states) + self.unary[:, c, 1] * states
            vert = _bilinear(self.vertical[:, c], states[:, :-1], states[:, 1:])
            return unary.sum(axis=1) + vert.sum(axis=1)

        def coupling(c):  # H_c(s, t) = sum_i h_i(s_i, t_i), expanded bilinearly: one matmul
            h = self.horizontal[:, c]
            h00, h01, h10, h11 = h[:, 0, 0], h[:, 0, 1], h[:, 1, 0], h[:, 1, 1]
            return (
                h00.sum()
                + (states @ (h10 - h00))[:, None]
                + (states @ (h01 - h00))[None, :]
                + (states * (h00 - h01 - h10 + h11)) @ states.T
            )

        alpha = column(0)
        for c in range(1, cols):
            alpha = special.logsumexp(alpha[:, None] + coupling(c - 1), axis=0) + column(c)
        return float(special.logsumexp(alpha))

    def exact_model_log_z(self) -> float:
        """The PyMC model's ``log Z``: :meth:`exact_log_z` minus ``rows * cols * log 2``."""
        return self.exact_log_z() - self.size * LOG2

    def to_pymc(self, name: str = "grid_mrf") -> pm.Model:
        """``x ~ Bernoulli(1/2)`` of shape ``(rows, cols)`` plus ``pm.Potential("energy", E(x))``."""
        with pm.Model(name=name) as model:
            x = pm.Bernoulli("x", np.float64(0.5), shape=self.shape)
            xf = x.astype("float64")
            pm.Potential("energy", self._site_energies(xf).sum())
        return model

    def conditional_logits(self, x: np.ndarray) -> np.ndarray:
        """``log p(x_i = 1 | rest) - log p(x_i = 0 | rest)`` for every site, ``(..., rows, cols)``."""
        x = self._grid(x)
        logit = self.unary[..., 1] - self.unary[..., 0]
        logit = np.broadcast_to(logit, x.shape).copy()
        h, v = self.horizontal, self.vertical
        # neighbour to the right / left / below / above: theta(1, x_j) - theta(0, x_j)
        logit[..., :, :-1] += _lin(h[..., 1, :] - h[..., 0, :], x[..., :, 1:])
        logit[..., :, 1:] += _lin(h[..., :, 1] - h[..., :, 0], x[..., :, :-1])
        logit[..., :-1, :] += _lin(v[..., 1, :] - v[..., 0, :], x[..., 1:, :])
        logit[..., 1:, :] += _lin(v[..., :, 1] - v[..., :, 0], x[..., :-1, :])
        return logit

    def mean_field(self, *, n_iter: int = 500, damping: float = 0.5, tol: float = 1e-10):
        r"""Naive mean-field marginals ``q_i = sigma(m_i)``, the fixed point of
        ``m_i = E_q[log p(x_i = 1 | rest) - log p(x_i = 0 | rest)]`` (exact in ``q`` because the
        conditional logits are linear in the neighbours), iterated with damping."""
        q = np.full(self.shape, 0.5)
        for _ in range(n_iter):
            new = (1 - damping) * special.expit(self.conditional_logits(q)) + damping * q
            if np.max(np.abs(new - q)) < tol:
                q = new
                break
            q = new
        return q

    def mean_field_reference(self, **kwargs) -> BernoulliProductReference:
        """The mean-field distribution as a reference ``p0`` (seed 000 Fig. 2b)."""
        return BernoulliProductReference.from_probabilities(
            self.mean_field(**kwargs).ravel(), name="mean_field"
        )

    def gibbs_sweep(self, rng, x: np.ndarray, n_sweeps: int = 1) -> np.ndarray:
        """Checkerboard Gibbs sweeps of ``p(x) ∝ exp(E(x))`` for states ``(n, rows, cols)``,
        batched over states (target draws for seed 000 Fig. 2)."""
        x = self._grid(x).copy()
        black = _black_squares(self.shape)
        for _ in range(n_sweeps):
            for colour in (black, ~black):
                prob = special.expit(self.conditional_logits(x))
                draw = (rng.random(x.shape) < prob).astype(float)
                x = np.where(colour, draw, x)
        return x


def _pad_last(terms, axis: int):
    """Append one zero slice along ``axis`` (numpy or PyTensor), aligning edge terms with sites."""
    if isinstance(terms, np.ndarray):
        widths = [(0, 0)] * terms.ndim
        widths[axis] = (0, 1)
        return np.pad(terms, widths)
    zeros_shape = list(terms.shape)
    zeros_shape[axis] = 1
    return pt.concatenate([terms, pt.zeros(zeros_shape)], axis=axis)


def _lin(diff_table, x):
    """``diff_table[..., x]`` for a 2-vector table, linear in ``x``."""
    return diff_table[..., 0] * (1 - x) + diff_table[..., 1] * x


def grid_mrf(
    rows: int = 10, cols: int = 10, *, sigma_p: float = 0.5, sigma_s: float = 0.1, seed: int = 0
) -> GridMRF:
    """Seed 000 §6: ``theta_i(k) ~ N(0, sigma_s^2)``, ``theta_ij(k, l) ~ N(0, sigma_p^2)``."""
    rng = np.random.default_rng(seed)
    return GridMRF(
        unary=rng.normal(0.0, sigma_s, (rows, cols, 2)),
        horizontal=rng.normal(0.0, sigma_p, (rows, cols - 1, 2, 2)),
        vertical=rng.normal(0.0, sigma_p, (rows - 1, cols, 2, 2)),
    )


# ---------------------------------------------------------------------- RBM
@dataclass(frozen=True)
class RBM:
    r"""Restricted Boltzmann machine ``E(v, h) = v^T W h + b^T v + c^T h`` on binary ``v, h``.

    The flat vector of its PyMC model is ``[v, h]`` (visible first).
    """

    weights: np.ndarray  # (n_visible, n_hidden)
    visible_bias: np.ndarray  # (n_visible,)
    hidden_bias: np.ndarray  # (n_hidden,)

    @property
    def n_visible(self) -> int:
        return self.weights.shape[0]

    @property
    def n_hidden(self) -> int:
        return self.weights.shape[1]

    @property
    def size(self) -> int:
        return self.n_visible + self.n_hidden

    def energy(self, x: np.ndarray) -> np.ndarray:
        """``E(v, h)`` at flat states ``x = [v, h]`` of shape ``(..., n_visible + n_hidden)``."""
        v, h = self.split(x)
        return (
            np.einsum("...i,ij,...j->...", v, self.weights, h)
            + v @ self.visible_bias
            + (h @ self.hidden_bias)
        )

    def split(self, x):
        x = np.asarray(x, dtype=float)
        return x[..., : self.n_visible], x[..., self.n_visible :]

    def log_marginal_visible(self, v: np.ndarray) -> np.ndarray:
        """``log sum_h exp(E(v, h)) = b^T v + sum_j softplus(c_j + (W^T v)_j)`` (unnormalized)."""
        v = np.asarray(v, dtype=float)
        return v @ self.visible_bias + np.logaddexp(0.0, v @ self.weights + self.hidden_bias).sum(
            axis=-1
        )

    def log_marginal_hidden(self, h: np.ndarray) -> np.ndarray:
        """``log sum_v exp(E(v, h)) = c^T h + sum_i softplus(b_i + (W h)_i)`` (unnormalized)."""
        h = np.asarray(h, dtype=float)
        return h @ self.hidden_bias + np.logaddexp(0.0, h @ self.weights.T + self.visible_bias).sum(
            axis=-1
        )

    def exact_log_z(self, *, max_states: int = 2**22, chunk: int = 2**14) -> float:
        """``log sum_{v,h} exp(E(v, h))``: enumerate the smaller layer and sum out the other in
        closed form, in chunks and log space."""
        small = min(self.n_visible, self.n_hidden)
        if 2**small > max_states:
            raise EvidenceInputError(
                f"Exact log Z enumerates 2^{small} states of the smaller layer; that is more "
                f"than max_states={max_states}. Use a smaller layer, or a long AIS run as the "
                f"reference value."
            )
        marginal = (
            self.log_marginal_hidden if self.n_hidden <= self.n_visible
            else self.log_marginal_visible
        )  # fmt: skip
        parts = []
        for start in range(0, 2**small, chunk):
            idx = np.arange(start, min(start + chunk, 2**small))
            states = ((idx[:, None] >> np.arange(small)) & 1).astype(float)
            parts.append(special.logsumexp(marginal(states)))
        return float(special.logsumexp(parts))

    def exact_model_log_z(self) -> float:
        """The PyMC model's ``log Z``: :meth:`exact_log_z` minus ``(n_v + n_h) log 2``."""
        return self.exact_log_z() - self.size * LOG2

    def to_pymc(self, name: str = "rbm", *, mutable: bool = False) -> pm.Model:
        """``v, h ~ Bernoulli(1/2)`` plus ``pm.Potential("energy", E(v, h))``.

        With ``mutable=True`` the parameters are ``pm.Data`` containers (``weights``,
        ``visible_bias``, ``hidden_bias``): :func:`set_rbm_parameters` changes them in place and
        the compiled log-density follows without recompiling (for tracking ``log Z`` during
        training, seed 004 §4.4).
        """
        with pm.Model(name=name) as model:
            if mutable:
                weights = pm.Data("weights", self.weights)
                visible_bias = pm.Data("visible_bias", self.visible_bias)
                hidden_bias = pm.Data("hidden_bias", self.hidden_bias)
            else:
                weights, visible_bias, hidden_bias = (
                    self.weights, self.visible_bias, self.hidden_bias
                )  # fmt: skip
            v = pm.Bernoulli("v", np.float64(0.5), shape=self.n_visible)
            h = pm.Bernoulli("h", np.float64(0.5), shape=self.n_hidden)
            vf, hf = v.astype("float64"), h.astype("float64")
            energy = vf @ weights @ hf + vf @ visible_bias + hf @ hidden_bias
            pm.Potential("energy", energy)
        return model

    def data_base_rate_reference(
        self, data: np.ndarray, *, pseudocount: float = 1.0
    ) -> BernoulliProductReference:
        """The data base rate (DBR) distribution (Salakhutdinov & Murray 2008; seed 004 §4.2):
        visible units independent with the training data's smoothed marginal rates
        ``(count + pseudocount) / (n + 2 pseudocount)``, hidden units uniform."""
        data = np.asarray(data, dtype=float)
        if data.ndim != 2 or data.shape[1] != self.n_visible:
            raise EvidenceInputError(
                f"Training data must have shape (n, {self.n_visible}); got {data.shape}."
            )
        rate = (data.sum(axis=0) + pseudocount) / (data.shape[0] + 2 * pseudocount)
        logits = np.concatenate([special.logit(rate), np.zeros(self.n_hidden)])
        return BernoulliProductReference(logits, name="data_base_rate")

    def block_gibbs_kernel(self, reference: BernoulliProductReference | None = None):
        r"""A kernel ``step(rng, x, beta) -> x`` for the custom kernel hook: ``h | v`` then
        ``v | h`` under ``f_beta = p0^{1-beta} f^beta`` with ``p0`` a Bernoulli product
        (uniform when ``None``, which is also the model's prior). Both conditionals factorize:
        the logits are ``(1 - beta) l_0 + beta (W^T v + c)`` and
        ``(1 - beta) l_0 + beta (W h + b)``."""
        logits0 = np.zeros(self.size) if reference is None else np.asarray(reference.logits)
        if logits0.shape != (self.size,):
            raise EvidenceInputError(
                f"The reference has {logits0.size} logits; the RBM has {self.size} units."
            )
        l0_v, l0_h = logits0[: self.n_visible], logits0[self.n_visible :]

        def step(rng, x, beta):
            beta = np.asarray(beta, dtype=float)[:, None]
            v, _ = self.split(x)
            h_logit = (1 - beta) * l0_h + beta * (v @ self.weights + self.hidden_bias)
            h = (rng.random(h_logit.shape) < special.expit(h_logit)).astype(float)
            v_logit = (1 - beta) * l0_v + beta * (h @ self.weights.T + self.visible_bias)
            v = (rng.random(v_logit.shape) < special.expit(v_logit)).astype(float)
            return np.concatenate([v, h], axis=1)

        return step

    def sample(self, rng, n: int, *, n_sweeps: int = 1000, init: np.ndarray | None = None):
        """``n`` approximate draws of ``[v, h]`` by ``n_sweeps`` block Gibbs sweeps at beta = 1."""
        step = self.block_gibbs_kernel()
        x = (rng.random((n, self.size)) < 0.5).astype(float) if init is None else init.copy()
        ones = np.ones(n)
        for _ in range(n_sweeps):
            x = step(rng, x, ones)
        return x

    def average_log_likelihood(self, data: np.ndarray, log_z: float) -> float:
        """Mean ``log p(v)`` over rows of ``data`` given the RBM's ``log Z``."""
        return float(np.mean(self.log_marginal_visible(data)) - log_z)


def set_rbm_parameters(model: pm.Model, rbm: RBM) -> None:
    """Write ``rbm``'s parameters into a model built by ``RBM.to_pymc(mutable=True)``."""
    prefix = f"{model.name}::" if model.name else ""
    for field in ("weights", "visible_bias", "hidden_bias"):
        key = prefix + field
        if key not in model.named_vars:
            raise EvidenceInputError(
                f"The model has no data container {key!r}; build it with RBM.to_pymc(mutable=True)."
            )
        model[key].set_value(np.asarray(getattr(rbm, field), dtype=float))


def binary_digits(*, threshold: float = 7.0, n_validation: int = 297, seed: int = 0):
    """scikit-learn's bundled 8x8 digits (1797 images, offline), thresholded to binary
    ``pixel > threshold`` (pixels are 0..16) and split at random into train and validation rows.
    Needs scikit-learn (``pip install pm_evidence[examples]``)."""
    try:
        from sklearn.datasets import load_digits
    except ImportError as err:  # optional dependency
        raise ImportError(
            "binary_digits needs scikit-learn: pip install 'pm_evidence[examples]'."
        ) from err
    data = (load_digits().data > threshold).astype(float)
    order = np.random.default_rng(seed).permutation(data.shape[0])
    return data[order[n_validation:]], data[order[:n_validation]]


def random_rbm(n_visible: int, n_hidden: int, *, scale: float = 0.5, seed: int = 0) -> RBM:
    """An RBM with ``N(0, scale^2)`` weights and biases (for tests)."""
    rng = np.random.default_rng(seed)
    return RBM(
        rng.normal(0.0, scale, (n_visible, n_hidden)),
        rng.normal(0.0, scale, n_visible),
        rng.normal(0.0, scale, n_hidden),
    )


def train_rbm(
    data: np.ndarray,
    n_hidden: int,
    *,
    epochs: int = 20,
    learning_rate: float = 0.05,
    cd_steps: int = 1,
    batch_size: int = 50,
    weight_decay: float = 1e-4,
    seed: int = 0,
    callback=None,
    callback_every: str = "epoch",
) -> RBM:
    """Contrastive divergence CD-k (Hinton 2002) on binary ``data (n, n_visible)``.

    Visible biases start at the base-rate logits. ``callback(step, rbm)``, if given, is called
    after every epoch (``callback_every="epoch"``, ``step`` = epoch) or after every gradient
    update (``"update"``, ``step`` = update index), e.g. to track the log-likelihood during
    training (seed 004 Fig. 5).
    """
    if callback_every not in ("epoch", "update"):
        raise EvidenceInputError(
            f"callback_every must be 'epoch' or 'update', got {callback_every!r}."
        )
    rng = np.random.default_rng(seed)
    data = np.asarray(data, dtype=float)
    n, n_visible = data.shape
    rate = np.clip(data.mean(axis=0), 1e-3, 1 - 1e-3)
    weights = rng.normal(0.0, 0.01, (n_visible, n_hidden))
    b, c = special.logit(rate), np.zeros(n_hidden)
    update = 0
    for epoch in range(epochs):
        order = rng.permutation(n)
        for start in range(0, n, batch_size):
            v0 = data[order[start : start + batch_size]]
            p_h0 = special.expit(v0 @ weights + c)
            h = (rng.random(p_h0.shape) < p_h0).astype(float)
            for _ in range(cd_steps):
                p_v = special.expit(h @ weights.T + b)
                v = (rng.random(p_v.shape) < p_v).astype(float)
                p_h = special.expit(v @ weights + c)
                h = (rng.random(p_h.shape) < p_h).astype(float)
            m = v0.shape[0]
            weights += learning_rate * ((v0.T @ p_h0 - v.T @ p_h) / m - weight_decay * weights)
            b += learning_rate * (v0 - v).mean(axis=0)
            c += learning_rate * (p_h0 - p_h).mean(axis=0)
            update += 1
            if callback is not None and callback_every == "update":
                callback(update - 1, RBM(weights.copy(), b.copy(), c.copy()))
        if callback is not None and callback_every == "epoch":
            callback(epoch, RBM(weights.copy(), b.copy(), c.copy()))
    return RBM(weights, b, c)
