"""What the zoo tests share: PyMC's log density and constrained values of a zoo model, compiled
once, and the log volume of its transforms by finite differences (to check a NumPy ``log_joint``
against PyMC's ``logp``); a zoo model's answer on the JAX backend against its gold and Numba's."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytest

import pm_evidence as pme
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.model.compile_mode import PYTHON_LINKER, without_c_compiler


def short_name(name: str) -> str:
    return name.split("::")[-1]


def _log_volume(jacobian: np.ndarray, transform_name: str | None) -> float:
    """Log volume factor of the backward map ``u -> value`` of one variable.

    Densities are w.r.t. Lebesgue measure on the value's coordinates, except a simplex
    (Dirichlet: its first K - 1 coordinates) and a zero-sum vector (the (n-1)-volume of its
    plane, ``sqrt(det J^T J)``).
    """
    if transform_name == "simplex":
        jacobian = jacobian[:-1]
    if jacobian.shape[0] != jacobian.shape[1]:
        return 0.5 * np.linalg.slogdet(jacobian.T @ jacobian)[1]
    return np.linalg.slogdet(jacobian)[1]


class CompiledZooModel:
    """One compiled function: ``[logp, logp without Jacobian, constrained values...]``."""

    def __init__(self, entry):
        self.entry = entry
        self.model, self.log_z = entry.build()
        model = self.model
        constrained = model.replace_rvs_by_values(model.free_RVs)
        # PyTensor's Python linker (NumPy per operation, the full rewrites): the same values as
        # the numba linker, without its compile (about 5 s per model from empty caches), and no
        # C for inner functions (without_c_compiler)
        with without_c_compiler():
            self.fn = model.compile_fn(
                [model.logp(), model.logp(jacobian=False), *constrained],
                point_fn=True,
                mode=PYTHON_LINKER,
            )
            self._initial_point = model.initial_point()  # PyMC compiles it on each call
        self.names = [short_name(rv.name) for rv in model.free_RVs]
        self.value_names = [v.name for v in model.value_vars]
        self.transforms = [model.rvs_to_transforms[rv] for rv in model.free_RVs]

    def initial_point(self) -> dict[str, np.ndarray]:
        """A copy of PyMC's initial point of the model (computed once, with no C compiled)."""
        return {k: np.array(v, copy=True) for k, v in self._initial_point.items()}

    def __call__(self, point):
        out = self.fn(point)
        return out[0], out[1], dict(zip(self.names, out[2:], strict=True))

    def jacobian_log_volume(self, point, h=1e-5) -> float:
        """Sum over variables of the log volume of ``u -> value``, by central differences."""
        total = 0.0
        for value_name, name, transform in zip(
            self.value_names, self.names, self.transforms, strict=True
        ):
            if transform is None:
                continue
            u = np.asarray(point[value_name], dtype=float)
            flat = u.ravel()
            columns = []
            for i in range(flat.size):
                step = np.zeros_like(flat)
                step[i] = h
                up = self(point | {value_name: (flat + step).reshape(u.shape)})[2][name]
                down = self(point | {value_name: (flat - step).reshape(u.shape)})[2][name]
                columns.append((np.ravel(up) - np.ravel(down)) / (2 * h))
            total += _log_volume(np.column_stack(columns), transform.name)
        return total


def assert_log_joint_is_pymc_logp(entry, n_points: int, seed: int = 0) -> None:
    """``entry.log_joint`` (NumPy, on the constrained values) equals PyMC's ``logp`` of the
    model without the transforms' Jacobians, to 1e-10, at ``n_points`` standard-normal points of
    the unconstrained space."""
    model, _ = entry.build()
    logp = model.compile_logp(jacobian=False)
    constrained = pm.pytensorf.compile(
        model.value_vars, model.replace_rvs_by_values(model.free_RVs), on_unused_input="ignore"
    )
    rng = np.random.default_rng(seed)
    shapes = {name: np.shape(value) for name, value in model.initial_point().items()}
    for _ in range(n_points):
        point = {name: rng.normal(size=shape) for name, shape in shapes.items()}
        values = {
            short_name(rv.name): value
            for rv, value in zip(model.free_RVs, constrained(**point), strict=True)
        }
        mine = entry.log_joint(values)
        assert np.isfinite(mine)
        assert logp(point) == pytest.approx(mine, rel=1e-10, abs=1e-10)


JAX_ZOO_SEED = 20261128


def _at_defaults(model, backend: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the result carries its warnings
        return pme.marginal_likelihood(
            model, random_seed=JAX_ZOO_SEED, progressbar=False, backend=backend
        )


def assert_jax_matches_gold_and_numba(entry) -> None:
    """``auto`` at defaults on the JAX backend within max(4 SE, 0.05) of the gold or flagged,
    and within 4 combined SEs of the Numba backend's answer for the same seed; a model that
    no kernel can move refused alike on both."""
    model, gold = entry.build()
    try:
        on_jax = _at_defaults(model, "jax")
    except EvidenceInputError as error:
        with pytest.raises(EvidenceInputError, match="unbounded support"):
            _at_defaults(model, "numba")
        assert "unbounded support" in str(error)
        return
    on_numba = _at_defaults(model, "numba")
    assert (on_jax.diagnostics["backend"], on_numba.diagnostics["backend"]) == ("jax", "numba")
    error = abs(on_jax.log_z - gold)
    assert error < max(4 * on_jax.se, 0.05) + entry.gold_error or not on_jax.reliable, (
        f"{entry.name} on JAX: {on_jax.log_z:.4f} ± {on_jax.se:.4f}, gold {gold:.4f}"
    )
    combined = np.hypot(on_jax.se, on_numba.se)
    assert abs(on_jax.log_z - on_numba.log_z) < 4 * combined, (
        f"{entry.name}: JAX {on_jax.log_z:.4f} ± {on_jax.se:.4f}, "
        f"Numba {on_numba.log_z:.4f} ± {on_numba.se:.4f}"
    )


# minutes on JAX's CPU (a million or a hundred thousand observations, a long sharp path)
JAX_SLOW = {"large_normal_mean_1e5", "large_normal_mean_1e6", "peaked_normal_mean"}


def jax_zoo_params(entries) -> list:
    """``entries`` as pytest parameters, the slow ones marked ``slow``."""
    return [
        pytest.param(e, id=e.name, marks=[pytest.mark.slow] if e.name in JAX_SLOW else [])
        for e in entries
    ]
