r"""Gibbs blocks found from the model: which binary sites interact, and a colouring of them.

A heat-bath update may draw the sites of a block ``B`` at once when they are conditionally
independent given the rest under every ``f_beta = p0^(1 - beta) f^beta`` (the checkerboard of a
grid MRF, a layer of an RBM). For binary sites ``i, j`` and a function ``g`` of ``x in {0,1}^d``
the **mixed second difference**

.. math:: I_{ij}(x) = g(x^{(ij)}) - g(x^{(i)}) - g(x^{(j)}) + g(x),

with ``x^{(i)}`` the state ``x`` with site ``i`` flipped, is zero at every ``x`` exactly when
``g`` has no term that depends on both ``x_i`` and ``x_j``, i.e. when ``exp(g)`` factorizes so
that ``x_i`` and ``x_j`` are conditionally independent given the other sites (the
Hammersley-Clifford view of a pairwise Markov network; Koller & Friedman 2009, §4.3).
``log f_beta = log p0 + beta Delta`` is free of such a term for every ``beta`` exactly when
``log p0`` and ``Delta`` are, so both are tested (:func:`interaction_graph` takes several
terms). With zero densities the condition reads ``f(x^{(ij)}) f(x) = f(x^{(i)}) f(x^{(j)})``.

:func:`interaction_graph` evaluates ``I_ij`` for all pairs ``i < j`` at ``K`` uniform random
binary states (``K (1 + d + d (d - 1) / 2)`` evaluations, in batched calls) and joins ``i`` and
``j`` when ``|I_ij| > tol (1 + max |g|)`` at any of them. :func:`colour_blocks` colours that
graph greedily (DSatur order); the colour classes are the blocks. :func:`gibbs_blocks` does both
and says what it found.

**The assumption.** An interaction that vanishes at all ``K`` tested states is missed, and its
sites may then be drawn together although they are not conditionally independent (the Gibbs
update is then not exact). A pairwise term ``theta_ij(x_i, x_j)`` has ``I_ij`` constant in
``x`` (``+-(theta_00 - theta_01 - theta_10 + theta_11)``), so it is never missed unless that is
zero, and then it couples nothing. A higher-order term vanishes at some states: ``c x_i x_j
x_k`` has ``I_ij = +-c x_k``, zero at a uniform random state with probability 1/2, so it is
missed with probability ``2^-K`` (``2.3e-10`` at the default ``K = 32``); a product over
``m`` further sites, with probability ``(1 - 2^-m)^K`` (``1.0e-4`` for ``m = 2``, ``0.014``
for ``m = 3``). Models written as pairwise potentials (grid MRFs, RBMs, Ising and Boltzmann
machines) have no such terms.

References
----------
Brélaz (1979), "New methods to color the vertices of a graph", CACM 22(4): the DSatur order.
Koller & Friedman (2009), *Probabilistic Graphical Models*, §4.3 (Markov network independencies).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

__all__ = [
    "DETECTION_MAX_EVALUATIONS",
    "DETECTION_STATES",
    "DETECTION_TOL",
    "BlockFinding",
    "colour_blocks",
    "detection_evaluations",
    "gibbs_blocks",
    "interaction_graph",
]

DETECTION_STATES = 32
DETECTION_TOL = 1e-9
# Above this many evaluations the detection is skipped and the sites stay single. K = 32 states
# allow up to d = 353 sites (2.0 million evaluations): a tenth of a run's default budget, a few
# seconds on a cheap discrete model (measured: docs/benchmarks.rst, Measurements behind the
# defaults).
DETECTION_MAX_EVALUATIONS = 2_000_000
# States per batched call of the detection's pairs.
DETECTION_CHUNK_ROWS = 8192


def detection_evaluations(dim: int, n_states: int = DETECTION_STATES) -> int:
    """Evaluations of :func:`interaction_graph`: ``K (1 + d + d (d - 1) / 2)``."""
    return int(n_states * (1 + dim + dim * (dim - 1) // 2))


def _terms(log_density: Callable, x: np.ndarray) -> np.ndarray:
    """The terms of ``log_density`` at ``x (n, d)`` as an array ``(n, T)``."""
    out = log_density(x)
    if isinstance(out, tuple | list):
        return np.stack([np.asarray(t, dtype=float) for t in out], axis=-1)
    return np.asarray(out, dtype=float)[:, None]


def interaction_graph(
    log_density: Callable,
    dim: int,
    rng: np.random.Generator,
    *,
    n_states: int = DETECTION_STATES,
    tol: float = DETECTION_TOL,
) -> np.ndarray:
    r"""Which pairs of binary sites interact in ``log_density``, from mixed second differences.

    At ``K = n_states`` states ``x`` drawn uniformly from ``{0, 1}^d``,
    ``I_ij(x) = g(x^{(ij)}) - g(x^{(i)}) - g(x^{(j)}) + g(x)`` for every pair ``i < j``
    (module docstring); ``i`` and ``j`` interact when ``|I_ij(x)| > tol (1 + max |g|)`` at any
    of the states, ``max |g|`` over every finite value evaluated. Where ``g = -inf`` (zero
    density) the test is ``g(x^{(ij)}) + g(x) = g(x^{(i)}) + g(x^{(j)})``: ``-inf`` on both
    sides is no interaction, on one side only it is one (the support couples ``i`` and ``j``);
    a NaN or ``+inf`` counts as an interaction. Cost: :func:`detection_evaluations`, in
    batched calls of at most ``DETECTION_CHUNK_ROWS`` states.

    Parameters
    ----------
    log_density : callable
        ``g(x)`` for states ``x (n, dim)``: an array ``(n,)``, or a tuple of arrays ``(n,)``
        (several terms, e.g. ``log p0`` and ``Delta``; a pair interacts if it does in any).
    dim : int
        Number of binary sites ``d``.
    rng : numpy.random.Generator
        Draws the ``K`` states.
    n_states : int
        ``K``.
    tol : float
        Relative tolerance of a zero interaction.

    Returns
    -------
    numpy.ndarray of bool, (dim, dim)
        Symmetric adjacency, ``False`` on the diagonal.
    """
    states = (rng.random((n_states, dim)) < 0.5).astype(float)
    sites = np.arange(dim)
    # g at every state and at every state with one site flipped: (K, 1 + d, terms)
    rows = np.repeat(states[:, None, :], 1 + dim, axis=1)
    rows[:, 1 + sites, sites] = 1.0 - rows[:, 1 + sites, sites]
    g_single = _terms(log_density, rows.reshape(-1, dim)).reshape(n_states, 1 + dim, -1)
    scale = float(np.max(np.abs(g_single[np.isfinite(g_single)]), initial=0.0))
    i_idx, j_idx = np.triu_indices(dim, k=1)
    n_pairs = i_idx.size
    interaction_max = np.zeros(n_pairs)  # max over states and terms of |I_ij|
    # g at every (state, pair) with both sites flipped, DETECTION_CHUNK_ROWS rows per call
    for start in range(0, n_states * n_pairs, DETECTION_CHUNK_ROWS):
        flat = np.arange(start, min(start + DETECTION_CHUNK_ROWS, n_states * n_pairs))
        s, p = flat // n_pairs, flat % n_pairs
        i, j = i_idx[p], j_idx[p]
        x = states[s]
        row = np.arange(flat.size)
        x[row, i] = 1.0 - x[row, i]
        x[row, j] = 1.0 - x[row, j]
        g_pair = _terms(log_density, x)
        finite = np.isfinite(g_pair)
        scale = max(scale, float(np.max(np.abs(g_pair[finite]), initial=0.0)))
        # I_ij as [g(x^ij) + g(x)] - [g(x^i) + g(x^j)]: -inf on both sides (zero density on
        # both) is no interaction, -inf on one side only is one (the support couples i, j)
        both = g_pair + g_single[s, 0]
        each = g_single[s, 1 + i] + g_single[s, 1 + j]
        with np.errstate(invalid="ignore"):
            mixed = np.abs(both - each)
        zero_both = (both == -np.inf) & (each == -np.inf)
        magnitude = np.where(zero_both, 0.0, np.where(np.isfinite(mixed), mixed, np.inf))
        np.maximum.at(interaction_max, p, magnitude.max(axis=1))
    adjacency = np.zeros((dim, dim), dtype=bool)
    joined = interaction_max > tol * (1.0 + scale)
    adjacency[i_idx[joined], j_idx[joined]] = True
    return adjacency | adjacency.T


def colour_blocks(adjacency: np.ndarray) -> list[np.ndarray]:
    r"""Colour classes of a greedy colouring of a graph, as index arrays (the Gibbs blocks).

    Sites are taken in DSatur order (Brélaz 1979): next the uncoloured site whose coloured
    neighbours use the most distinct colours, ties broken by the largest degree, then the
    smallest index; it gets the smallest colour none of its neighbours has. The first site is
    the one of largest degree (largest-degree-first greedy colouring, made adaptive). DSatur
    colours a bipartite graph (a grid, an RBM's layers) with two colours, where a fixed
    largest-degree-first order can need more. Sites of one colour share no edge: given the
    others they are conditionally independent.

    Parameters
    ----------
    adjacency : numpy.ndarray of bool, (d, d)
        Symmetric, from :func:`interaction_graph`.

    Returns
    -------
    list of numpy.ndarray
        One sorted index array per colour, in colour order; they cover ``0..d-1`` once.
    """
    adjacency = np.asarray(adjacency, dtype=bool)
    d = adjacency.shape[0]
    if d == 0:
        return []
    degree = adjacency.sum(axis=1)
    colour = np.full(d, -1)
    # neighbour_colours[v, c]: v has a neighbour of colour c (at most d colours)
    neighbour_colours = np.zeros((d, d), dtype=bool)
    for _ in range(d):
        saturation = neighbour_colours.sum(axis=1)
        # lexicographic key: saturation, degree, then the smallest index (argmax takes the first)
        key = np.where(colour < 0, saturation * (d + 1) + degree, -1)
        v = int(np.argmax(key))
        free = np.flatnonzero(~neighbour_colours[v])
        colour[v] = int(free[0])
        neighbour_colours[adjacency[v], colour[v]] = True
    return [np.flatnonzero(colour == c) for c in range(int(colour.max()) + 1)]


class BlockFinding(NamedTuple):
    """What :func:`gibbs_blocks` found: the blocks (``None``: one site at a time), the
    evaluations spent and a sentence saying what was done."""

    blocks: list[np.ndarray] | None
    n_evaluations: int
    how: str


def gibbs_blocks(
    log_density: Callable,
    dim: int,
    rng: np.random.Generator,
    *,
    n_states: int = DETECTION_STATES,
    tol: float = DETECTION_TOL,
    max_evaluations: int = DETECTION_MAX_EVALUATIONS,
) -> BlockFinding:
    """Gibbs blocks of a model's binary sites: :func:`interaction_graph` then
    :func:`colour_blocks`, unless the detection would cost more than ``max_evaluations``
    (:func:`detection_evaluations`; ``d`` above 353 sites at ``K = 32``), in which case the
    sites stay single and the sentence says so.

    Parameters
    ----------
    log_density, dim, rng, n_states, tol
        As :func:`interaction_graph`.
    max_evaluations : int
        Cost above which the detection is skipped.

    Returns
    -------
    BlockFinding
    """
    cost = detection_evaluations(dim, n_states)
    if cost > max_evaluations:
        return BlockFinding(
            None, 0,
            f"one site at a time: finding the blocks of {dim} sites would cost {cost:,} "
            f"evaluations (more than {max_evaluations:,}); pass blocks= to update sites together",
        )  # fmt: skip
    adjacency = interaction_graph(log_density, dim, rng, n_states=n_states, tol=tol)
    blocks = colour_blocks(adjacency)
    n_edges = int(adjacency.sum()) // 2
    how = (
        f"{len(blocks)} blocks (sizes {_sizes(blocks)}) from a greedy colouring of the "
        f"{n_edges} interacting pairs of {dim} binary sites, found from mixed second "
        f"differences at {n_states} random states ({cost:,} evaluations)"
    )
    return BlockFinding(blocks, cost, how)


def _sizes(blocks: list[np.ndarray]) -> str:
    sizes = [b.size for b in blocks]
    if len(sizes) <= 6:
        return ", ".join(map(str, sizes))
    return f"{', '.join(map(str, sizes[:5]))}, ..., {sizes[-1]}"
