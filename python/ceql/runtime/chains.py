"""How NEXT, LAST and MAX compare two chains of one register run (tECS paths whose
unions each join paths with one set ``D`` of positions): by the first or last position where
their sets differ, or by inclusion. :mod:`ceql.runtime.correlated` keeps per run the chain
its strategy prefers (or MAX's maximal ones) with these; :mod:`ceql.runtime.run_index`'s
staircases prune dominated runs with them."""

from __future__ import annotations

from .tecs import KIND_POS, LEFT, MAX_START, NEXT, Node, union

__all__ = ["best", "differ", "rank"]

_FIRST, _LAST_MET, _BOTH = 0, 1, 2  # :func:`_walk`'s stops


def _walk(a: Node, b: Node, stop: int) -> tuple[int, int]:
    """Walk the sets ``D`` of two chains (every union in them joins paths with one set) down
    from their largest positions until they share their rest: (bits, side) — bit 1 when
    ``a`` has a position ``b`` lacks, bit 2 the converse; side 1 (``a``) or -1 (``b``): who
    holds the position in one only met last (the smallest), 0 if none. ``stop``: at the
    first such position (``_FIRST``), when both bits are set (``_BOTH``), or never
    (``_LAST_MET``)."""
    r = d = 0
    while True:
        while a[KIND_POS] < 0:
            a = a[LEFT]
        while b[KIND_POS] < 0:
            b = b[LEFT]
        if a is b:
            return r, d
        na = a[NEXT]
        nb = b[NEXT]
        pa = -1 if na is None else a[KIND_POS]  # a bottom is not itself in D
        pb = -1 if nb is None else b[KIND_POS]
        if pa == pb:
            if pa < 0:
                return r, d
            a = na
            b = nb
            continue
        if pa > pb:
            r |= 1
            d = 1
            a = na
        else:
            r |= 2
            d = -1
            b = nb
        if stop == _FIRST or (stop == _BOTH and r == 3):
            return r, d


def rank(a: Node, b: Node, last: bool) -> int:
    """Compare two chains by NEXT's order (``last`` False: ``min(D Δ D')`` decides) or
    LAST's (``max``): 1 when ``a`` wins, -1 when ``b`` does, 0 when their sets are equal
    (they may end at different events: a continuation both share does not change the
    answer). Both start with a marked event, so for NEXT an earlier start wins outright."""
    if not last and a[MAX_START] != b[MAX_START]:
        return 1 if a[MAX_START] < b[MAX_START] else -1
    return _walk(a, b, _FIRST if last else _LAST_MET)[1]


def best(a: Node, b: Node, last: bool) -> Node:
    """The chain of ``a`` and ``b`` the strategy prefers; both when their sets are equal
    (they may bind the events to different variables, and every binding is shown)."""
    r = rank(a, b, last)
    if r > 0:
        return a
    if r < 0:
        return b
    return union(a, b, None, None)


def differ(a: Node, b: Node) -> int:
    """How the sets ``D`` of two chains differ: bit 1 when ``a`` has a position ``b`` lacks,
    bit 2 when ``b`` has one ``a`` lacks (0: equal sets, 3: neither holds the other)."""
    return _walk(a, b, _BOTH)[0]

