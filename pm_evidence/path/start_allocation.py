r"""Where AIS's chains start when its reference is a mixture: the components chosen by
importance, towards those whose chains carry the weight.

AIS from a mixture reference ``p0 = sum_k pi_k q_k`` (the exploration's, or one fitted to the
posterior draws) has ``E[w] = Z`` with ``x_0 ~ p0`` (seed 000 eq. (8)), and
``E[w] = sum_k pi_k E_k[w]``, ``E_k`` over chains that start in component ``k``. Chains may
start in component ``k`` at any rate ``Lambda_k > 0`` (a share of all the run's chains) and
carry the factor ``pi_k / Lambda_k`` on their weights:

.. math::
    \hat Z = \frac{1}{N} \sum_i \frac{\pi_{k_i}}{\Lambda_{k_i}} w_i, \qquad
    E[\hat Z] = \sum_k \Lambda_k \frac{\pi_k}{\Lambda_k} E_k[w] = Z,

importance sampling of the starting component (the path ``p0^{1-beta} f^beta`` is the same for
every chain, so AIS stays unbiased whatever ``Lambda``). The relative variance of the factored
weights is

.. math::
    v(\Lambda) = \sum_k \frac{\pi_k^2 M_k}{\Lambda_k} - 1, \qquad M_k = E_k[w^2] / Z^2,

smallest at ``Lambda_k ∝ pi_k sqrt(M_k)`` (the optimal allocation of stratified sampling,
Neyman 1934, in its importance-sampling form). Where the mixture's weights are far from the
posterior's shares of its modes, ``Lambda = pi`` (plain AIS) spends most chains in components
that hold almost nothing. On a two-planet radial-velocity orbit
(:func:`~pm_evidence.zoo.support.eccentric_rv`) one component of the exploration's 37, weighted
1.1 %, held all the mass in 2,000 chains; an allocation corrects such weights, not the shape of
the components: where the weights within a component are heavy-tailed, as there, the gain is
what those tails leave (measured: docs/benchmarks.rst, "Where AIS's chains start").

A run's first batch starts from ``p0`` itself (``lambda = pi``: plain AIS). After each batch,
:meth:`StartAllocation.after` estimates ``M_k`` from every chain started in component ``k``
so far and proposes, for the next batch, the defensive
allocation

.. math::
    \lambda_k = a \pi_k + (1 - a) \frac{\pi_k \sqrt{M_k}}{\sum_j \pi_j \sqrt{M_j}},

``a = DEFENSIVE_SHARE``: a component that the first chains misjudged keeps ``a`` of its share.
A component that no chain has started in yet is taken to be as heavy as the heaviest seen (its
``M_k`` the largest of the others), so that the next batch starts chains in it: a component
weighted 0.5 % that holds half the mass, cut to ``a`` of its share because no chain had started
in it, could leave the estimate ``log 2`` low with weights that look even. The next batch uses
the allocation only where its ``v`` is at most ``1 / ADAPT_GAIN`` of ``v(pi)`` (both from the
same estimates; a ``v`` below ``VARIANCE_FLOOR`` counted as that, since the moments of a few
hundred chains cannot tell it from 0); elsewhere it starts from ``p0``, as plain AIS.

The run's rate ``Lambda`` is the average of its batches' allocations weighted by their chains,
and every chain's factor is ``pi_k / Lambda_k`` (the balance heuristic of multiple importance
sampling: Veach & Guibas 1995, Owen & Zhou 2000), so that the first batch's few chains in a
heavy component do not weigh on the estimate as they would with their own batch's factor.
With allocations fixed in advance this is exactly unbiased. Chosen from earlier batches, as
here, a chain's factor depends a little on its own weight (through the later allocations), a
bias of order ``1 / N``; it is consistent, since every factor is at most ``1 / a`` and each
component's count over ``N Lambda_k`` tends to 1 (the adaptive multiple importance sampling of
Cornuet, Marin, Mira & Robert 2012). The SE is stratified by batch
(:func:`~pm_evidence.estimators.annealed.ais_core` with ``batch_sizes``): each batch is an
i.i.d. sample of its own allocation, and the batches' different means are not noise. The tests
check it against the errors of repeated runs (tests/path/test_start_allocation.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pm_evidence.references import MixtureReference

__all__ = ["ADAPT_GAIN", "DEFENSIVE_SHARE", "VARIANCE_FLOOR", "StartAllocation"]

# The share of each component's weight that its chains keep whatever the first batches showed.
DEFENSIVE_SHARE = 0.3
# How many times smaller the projected relative variance of the weights must be before the
# chains start elsewhere than from the reference itself: a small gain is not worth a run that
# differs from plain AIS.
ADAPT_GAIN = 2.0
# The projected relative variance below which an allocation is not told apart from a perfect
# one: the moments of a hundred chains cannot, and an allocation's gain is counted against it.
VARIANCE_FLOOR = 0.1


@dataclass(frozen=True)
class StartAllocation:
    """How an AIS run's chains choose their starting components.

    Attributes
    ----------
    weights : numpy.ndarray, shape (K,)
        ``pi``: the reference mixture's weights.
    shares : numpy.ndarray, shape (K,)
        ``lambda``: the chance that a chain of the next batch starts in each component.
    allotted : numpy.ndarray, shape (K,)
        The expected number of the run's chains so far that started in each component (the
        sum over its batches of chains times ``lambda``): ``Lambda`` times the chains.
    gain : float
        ``v(pi) / v(lambda)`` of ``shares`` (1 where they are ``weights``).
    drawn_gain : float
        ``gain`` of the latest batch drawn with shares of their own; 1 where every batch
        started from the reference itself.
    moments : tuple or None
        ``(second, z)``, the per-component second moments and the estimate of ``Z`` that
        ``shares`` were chosen from (:meth:`after`), for :meth:`chains_to_reach`; None where
        ``shares`` are ``weights``.
    """

    weights: np.ndarray
    shares: np.ndarray
    allotted: np.ndarray
    gain: float = 1.0
    drawn_gain: float = 1.0
    moments: tuple | None = None

    @classmethod
    def of(cls, reference) -> StartAllocation | None:
        """The allocation of a run from ``reference``: ``None`` unless it is a mixture of at
        least two components (a single distribution has nothing to allocate)."""
        if not isinstance(reference, MixtureReference) or reference.n_components < 2:
            return None
        weights = reference.weights
        return cls(weights, weights, np.zeros(weights.size))

    @property
    def adapted(self) -> bool:
        """Whether some batch started elsewhere than from the reference itself."""
        return self.drawn_gain > 1.0

    def draw(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, StartAllocation]:
        """The starting components of a batch of ``n`` chains (the same random numbers as
        ``MixtureReference.sample`` where ``shares`` is ``weights``), and this allocation with
        the batch allotted."""
        which = rng.choice(self.weights.size, size=n, p=self.shares)
        allotted = self.allotted + n * self.shares
        drawn_gain = self.gain if self.gain > 1.0 else self.drawn_gain
        return which, StartAllocation(self.weights, self.shares, allotted, self.gain, drawn_gain)

    def log_factors(self, which: np.ndarray) -> np.ndarray:
        """``log(pi_k / Lambda_k)`` of each chain's component ``k = which[i]`` (zeros where no
        batch was allocated: plain AIS, to the last bit)."""
        if not self.adapted:
            return np.zeros(np.shape(which))
        rate = self.allotted / self.allotted.sum()
        return np.log(self.weights[which]) - np.log(rate[which])

    def after(self, which: np.ndarray, log_weights: np.ndarray) -> StartAllocation:
        """This allocation with the next batch's ``shares`` chosen from every chain of the run
        so far: its starting component (``which``) and its AIS log weight without the factor
        (``log_weights``; non-finite ones count as zero weights)."""
        plain = StartAllocation(self.weights, self.weights, self.allotted, 1.0, self.drawn_gain)
        second, z = self._second_moments(which, log_weights)
        if z is None:
            return plain
        optimal = self.weights * np.sqrt(second)
        shares = DEFENSIVE_SHARE * self.weights + (1.0 - DEFENSIVE_SHARE) * optimal / optimal.sum()
        v_plain = relative_variance(self.weights, self.weights, second, z)
        v_chosen = relative_variance(self.weights, shares, second, z)
        v_chosen = max(v_chosen, VARIANCE_FLOOR)  # below it, noise (it can come out < 0)
        if not v_chosen * ADAPT_GAIN <= v_plain:
            return plain
        gain = v_plain / v_chosen
        return StartAllocation(
            self.weights, shares, self.allotted, gain, self.drawn_gain, (second, z)
        )

    def chains_to_reach(self, target_se: float, cap: int) -> int:
        """The fewest chains, at most ``cap``, that a next batch drawn with ``shares`` needs for
        the run's projected SE, ``sqrt(v(Lambda') / N')`` with ``Lambda'`` and ``N'`` the
        rate and chains after it, to reach ``target_se`` (``cap`` where it cannot), the run's
        chains with a tenth more for the noise of the moments it projects from (sizing only:
        the run stops on the SE it measures), from the ``moments`` ``shares`` were chosen
        from."""
        if self.moments is None:
            return cap
        second, z = self.moments
        done = self.allotted.sum()

        def projected_se(n: int) -> float:
            rate = (self.allotted + n * self.shares) / (done + n)
            return np.sqrt(max(relative_variance(self.weights, rate, second, z), 0.0) / (done + n))

        if projected_se(cap) > target_se:
            return cap
        low, high = 0, cap  # projected_se(high) <= target_se; it falls as chains are added
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (low, middle) if projected_se(middle) <= target_se else (middle, high)
        return min(cap, int(np.ceil(1.1 * (done + high) - done)))

    def _second_moments(self, which, log_weights):
        """Per component, the mean of ``w^2`` over the chains started in it (where none did, the
        largest of the others: as heavy as the heaviest seen), and the run's estimate of ``Z``
        with the current factors, both on the scale ``exp(max log w)``; ``(None, None)``
        where every weight is zero."""
        log_weights = np.asarray(log_weights, dtype=float)
        finite = np.isfinite(log_weights)
        if not finite.any():
            return None, None
        top = log_weights[finite].max()
        w = np.where(finite, np.exp(np.where(finite, log_weights, top) - top), 0.0)
        k = self.weights.size
        counts = np.bincount(which, minlength=k)
        sums = np.bincount(which, weights=w**2, minlength=k)
        second = np.divide(sums, counts, out=np.zeros(k), where=counts > 0)
        second[counts == 0] = second.max()
        z = float(np.mean(w * np.exp(self.log_factors(which))))
        return (second, z) if z > 0 and np.sum(self.weights * np.sqrt(second)) > 0 else (None, None)


def relative_variance(weights, rate, second, z: float) -> float:
    """``v(Lambda) = sum_k pi_k^2 M_k / Lambda_k - 1`` with ``M_k = second_k / z^2``."""
    return float(np.sum(weights**2 * second / rate) / z**2 - 1.0)
