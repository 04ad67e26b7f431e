"""NEXT, LAST and MAX over explicit complex events with one end, each given as (start, D).

Used where the candidates are enumerated before the choice: the register runtime's
enumerator, and the edge stage when a leading or trailing NOT must pass before the strategy
chooses (:mod:`ceql.runtime.edges`).
"""

from __future__ import annotations

__all__ = ["choose"]

CE = tuple[int, tuple[int, ...]]


def choose(strategy: str, ces: list[CE]) -> list[CE]:
    """The complex events among ``ces`` (with one end) that NEXT, LAST or MAX keeps."""
    sets = [frozenset(d) for _, d in ces]
    if strategy == "MAX":
        return [ce for ce, d in zip(ces, sets, strict=True)
                if not any(d2 > d for d2 in sets)]
    pick = min if strategy == "NEXT" else max
    best = 0
    for i in range(1, len(ces)):
        diff = sets[best] ^ sets[i]
        if diff and pick(diff) in sets[i]:
            best = i
    return [ces[best]] if ces else []
