r"""Centered hierarchies computed in their non-centered coordinates, where the data inform the
groups weakly (a funnel).

A latent ``theta ~ Normal(mu, tau)`` (or ``StudentT``, ``Laplace``, ``Cauchy``, ``Logistic``,
``Gumbel``: any location-scale family, ``LOCATION_SCALE_FAMILIES``; or ``LogNormal``, whose log
is one) whose scale ``tau`` is itself a free variable makes the posterior a funnel in
``(theta, log tau)`` where the data say little about each ``theta_j``:
as ``tau -> 0`` every ``theta_j`` is squeezed onto ``mu``, a neck that fixed-step kernels and
fitted references do not reach, so the evidence comes back low with an SE that cannot see it.
In the coordinates ``z = (theta - mu) / tau`` (the value transform
:class:`LocScaleTransform`, whose Jacobian ``tau`` per element PyMC adds to the density) the
neck is gone; correlated group effects ``theta_j ~ MvNormal(mu, cov)`` (an ``LKJCholeskyCov``
prior) get ``z_j = L^{-1} (theta_j - mu)`` with ``L`` the Cholesky factor of ``cov``
(:class:`MvLocScaleTransform`). The integral is the same (a change of variables, Jacobian included), so is
``log Z``: the model as written, computed in other coordinates.

Where each group is well informed (``tau^2`` times the likelihood's curvature in ``theta_j``
large), the centered form is the easy one and the non-centered form has the funnel instead
(Betancourt and Girolami 2015, §4); :func:`weakly_informed` decides by that product at the
model's initial point. PyMC's own ``change_value_transforms`` makes the model in the new
coordinates; its data containers are the user's own (``pm.set_data`` still reaches them).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.logprob.transforms import LogTransform, Transform
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.basic import (
    CauchyRV,
    GumbelRV,
    LaplaceRV,
    LogisticRV,
    LogNormalRV,
    MvNormalRV,
    NormalRV,
    StudentTRV,
)

from pm_evidence.model.compile_mode import python_linker_function, without_c_compiler

__all__ = [
    "LOCATION_SCALE_FAMILIES",
    "NONCENTERING_TRANSFORMS",
    "WEAK_INFORMATION",
    "LocScaleTransform",
    "LogLocScaleTransform",
    "MvLocScaleTransform",
    "funnel_candidates",
    "noncentered_model",
    "noncentering_log_jacobian",
    "weakly_informed",
]

#: ``median_j(tau^2 * -d^2 log L / d theta_j^2)`` below this at the model's initial point (where
#: ``tau`` is the prior's central value, not the posterior's): the variable is non-centered.
#: Measured at defaults: 0.08-0.25 (eight schools) and 1.0 (30 groups of one observation, true
#: ``tau`` 0.3) were funnels, slow and biased centered, right non-centered; 19 (40 groups of 12)
#: was right either way; 312 (20 groups of 200) was right centered in 14-19 s and took minutes
#: non-centered. The threshold sits between, on the log scale.
WEAK_INFORMATION = 10.0


class _NonCentering(Transform):
    """What the non-centering transforms share: their name, and a log Jacobian beyond that of
    PyMC's own coordinates that is all of it (the variable had no transform there)."""

    name = "noncentered"

    def log_jac_det_beyond_pymc(self, value, *inputs):
        """The log Jacobian beyond that of PyMC's own coordinates (here: all of it)."""
        return self.log_jac_det(value, *inputs)


class LocScaleTransform(_NonCentering):
    """``z = (theta - loc) / scale`` for ``theta ~ Normal(loc, scale)`` or another
    location-scale family whose last two parameters are its location and scale
    (``LOCATION_SCALE_FAMILIES``): the non-centered coordinates, as a value transform
    (``log |d theta / d z| = log scale`` per element)."""

    ndim_supp = 0

    def forward(self, value, *inputs):
        loc, scale = inputs[-2:]
        return (value - loc) / scale

    def backward(self, value, *inputs):
        loc, scale = inputs[-2:]
        return loc + scale * value

    def log_jac_det(self, value, *inputs):
        scale = inputs[-1]
        return pt.log(scale) + pt.zeros_like(value)


class LogLocScaleTransform(LocScaleTransform):
    """``z = (log theta - loc) / scale`` for ``theta ~ LogNormal(loc, scale)``, whose log is the
    normal's location-scale family: :class:`LocScaleTransform` of ``log theta``, in place of
    PyMC's ``log`` transform (``log |d theta / d z| = log scale + log theta`` per element)."""

    def forward(self, value, *inputs):
        return super().forward(pt.log(value), *inputs)

    def backward(self, value, *inputs):
        return pt.exp(super().backward(value, *inputs))

    def log_jac_det(self, value, *inputs):
        return super().log_jac_det(value, *inputs) + super().backward(value, *inputs)

    def log_jac_det_beyond_pymc(self, value, *inputs):
        """The log Jacobian beyond PyMC's ``log`` transform's (``log theta``): ``log scale``."""
        return super().log_jac_det(value, *inputs)


class MvLocScaleTransform(_NonCentering):
    """``z = L^{-1} (theta - mean)`` for ``theta ~ MvNormal(mean, cov)`` with ``L`` the
    Cholesky factor of ``cov`` (an ``LKJCholeskyCov`` prior's, say): the non-centered
    coordinates of correlated group effects (``log |d theta / d z| = sum log diag L`` per
    vector)."""

    ndim_supp = 1

    def forward(self, value, *inputs):
        mean, cov = inputs[-2:]
        chol = pt.linalg.cholesky(cov)
        return pt.linalg.solve_triangular(chol, (value - mean)[..., None], lower=True)[..., 0]

    def backward(self, value, *inputs):
        mean, cov = inputs[-2:]
        return mean + pt.matmul(pt.linalg.cholesky(cov), value[..., None])[..., 0]

    def log_jac_det(self, value, *inputs):
        cov = inputs[-1]
        log_diag = pt.log(pt.diagonal(pt.linalg.cholesky(cov), axis1=-2, axis2=-1))
        return pt.sum(log_diag, axis=-1) + pt.zeros_like(value[..., 0])


#: The distributions whose last two parameters are a location and a scale, ``theta = loc + scale
#: z`` with ``z`` of the same family at (0, 1) (the Student-t's degrees of freedom come
#: first): ``pm.Normal``, ``pm.StudentT``, ``pm.Laplace``, ``pm.Cauchy``, ``pm.Logistic`` and
#: ``pm.Gumbel``. A centered hierarchy of any of them has the normal's funnel.
LOCATION_SCALE_FAMILIES = (NormalRV, StudentTRV, LaplaceRV, CauchyRV, LogisticRV, GumbelRV)

# the transform of each distribution this module rewrites
_TRANSFORMS = {
    **dict.fromkeys(LOCATION_SCALE_FAMILIES, LocScaleTransform),
    LogNormalRV: LogLocScaleTransform,
    MvNormalRV: MvLocScaleTransform,
}
# the value transform a variable may carry to be rewritten: none, or its family's default
_REPLACEABLE = {LogNormalRV: LogTransform}

#: The non-centering transforms: bijections of the whole space, which cut no prior.
NONCENTERING_TRANSFORMS = tuple(_TRANSFORMS.values())


def _variance(rv):
    """The prior's spread of each element of ``rv`` squared (``scale^2``, the variance of a
    normal and the squared scale of the other families, or the covariance's diagonal), as a
    graph of the model's variables."""
    if isinstance(rv.owner.op, MvNormalRV):
        return pt.diagonal(rv.owner.inputs[-1], axis1=-2, axis2=-1)
    return rv.owner.inputs[-1] ** 2


def funnel_candidates(model: pm.Model) -> list:
    """Free variables of a location-scale family (``LOCATION_SCALE_FAMILIES``), ``MvNormal``
    or ``LogNormal`` (the exponential of a normal, with PyMC's default ``log`` transform)
    without a value transform of their own whose scale (covariance) depends on a free variable
    (the funnel's shape)."""
    free = set(model.free_RVs)

    def replaceable(rv) -> bool:
        transform = model.rvs_to_transforms.get(rv)
        default = _REPLACEABLE.get(type(rv.owner.op))
        return transform is None or (default is not None and type(transform) is default)

    return [
        rv
        for rv in model.free_RVs
        if isinstance(rv.owner.op, tuple(_TRANSFORMS))
        and replaceable(rv)
        and set(ancestors([rv.owner.inputs[-1]])) & free
    ]


def weakly_informed(model: pm.Model, rv, point: dict | None = None) -> bool:
    """Whether the data inform ``rv``'s elements less than its prior does: the median over its
    elements of ``var_j * (-d^2 log L / d theta_j^2)`` (the prior variance, ``scale^2`` or the
    covariance's diagonal, times the likelihood's curvature, summed over
    the row of its Hessian: the diagonal where each observation reads one element) below
    :data:`WEAK_INFORMATION`, at ``point`` (default: the model's initial point, the prior's
    central values). Between about 1 and 100 either form does; below, the centered form is a
    funnel, above, the non-centered one.

    Evaluated once, so on PyTensor's Python linker with no compiler
    (:func:`~pm_evidence.model.compile_mode.python_linker_function`): compiling it with Numba,
    and PyMC's initial point with C, took 1.7 s of a 45-parameter model's first call."""
    value = model.rvs_to_values[rv]
    log_lik = model.datalogp
    if not model.observed_RVs and not model.potentials:
        return False
    grad = pytensor.grad(log_lik, value)
    curvature = -pytensor.grad(grad.sum(), value)
    variance = model.replace_rvs_by_values([_variance(rv)])[0]
    information = pt.broadcast_to(variance, value.shape) * curvature
    inputs = model.value_vars
    fn = python_linker_function(inputs, information, on_unused_input="ignore")
    point = _initial_point(model) if point is None else point
    values = np.asarray(fn(*[point[v.name] for v in inputs]), dtype=float)
    return bool(np.all(np.isfinite(values)) and np.median(values) < WEAK_INFORMATION)


def _initial_point(model: pm.Model) -> dict:
    """PyMC's initial point of ``model``, built with no C compiler (:func:`without_c_compiler`)."""
    with without_c_compiler():
        return model.initial_point()


def noncentered_model(model: pm.Model) -> tuple[pm.Model, tuple[str, ...]]:
    """``model`` with its weakly informed funnel variables (:func:`funnel_candidates`,
    :func:`weakly_informed`) in non-centered coordinates, and their names; ``model`` itself
    and ``()`` where there are none."""
    from pymc.model.transform.conditioning import change_value_transforms

    candidates = funnel_candidates(model)
    point = _initial_point(model) if candidates else None
    chosen = [rv for rv in candidates if weakly_informed(model, rv, point)]
    if not chosen:
        return model, ()
    new = change_value_transforms(
        model, {rv.name: _TRANSFORMS[type(rv.owner.op)]() for rv in chosen}
    )
    _share_data(model, new)
    return new, tuple(rv.name for rv in chosen)


def noncentering_log_jacobian(model: pm.Model, names: tuple[str, ...]):
    """``sum log scale`` over the elements of the non-centered variables ``names`` of ``model``
    (:func:`noncentered_model`'s), in ``model``'s value variables: its log density at a point
    minus that of the original model in PyMC's coordinates at the same point (what
    ``pm.sample`` stored as ``lp`` with its draws; a ``LogNormal``'s ``log theta`` is in both)."""
    terms = []
    for name in names:
        rv = model[name]
        value = model.rvs_to_values[rv]
        log_jac = model.rvs_to_transforms[rv].log_jac_det_beyond_pymc(value, *rv.owner.inputs)
        terms.append(pt.sum(model.replace_rvs_by_values([log_jac])[0]))
    return pt.add(*terms) if len(terms) > 1 else terms[0]


def _share_data(model: pm.Model, new: pm.Model) -> None:
    """Point the copy's data containers (``pm.Data``, symbolic dimension lengths) at the
    original's, so that ``pm.set_data`` on the user's model reaches the copy
    (``SharedVariable.clone`` shares a container the same way)."""
    from pytensor.compile.sharedvalue import SharedVariable

    for name, var in model.named_vars.items():
        copy = new.named_vars.get(name)
        if isinstance(var, SharedVariable) and isinstance(copy, SharedVariable):
            copy.container = var.container
    for name, var in model.dim_lengths.items():
        copy = new.dim_lengths.get(name)
        if isinstance(var, SharedVariable) and isinstance(copy, SharedVariable):
            copy.container = var.container
