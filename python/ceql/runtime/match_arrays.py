"""Matches as arrays: what a consumer of many matches (MATCH_CEQL's output, Arrow) reads
without a Python object per match.

A chunk of matches is a ``Sequence[Match]``. The chain engines give a :class:`MatchBlock`:
its :class:`MatchArrays` (start and end positions, and the positions of each *shape* — the
matches whose events carry the same variables — as one 2-D array), and the
:class:`~ceql.runtime.match.Match` objects built only when someone indexes or iterates it.
:func:`arrays_of` gives any chunk's arrays: a block's own, or a list's gathered from its
matches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import chain
from operator import attrgetter
from typing import NamedTuple, overload

import numpy as np

from .match import Match

__all__ = ["MatchArrays", "MatchBlock", "Shape", "arrays_of", "concat_arrays", "cut_arrays",
           "flat_positions",
           "shapes_by_code"]

Labels = tuple[frozenset[str], ...]
_POSITIONS = attrgetter("positions")
_STARTS = attrgetter("start_position")
_ENDS = attrgetter("end_position")


class Shape(NamedTuple):
    """The matches (``members``: indices, ascending) whose events carry ``labels``, one row of
    ``positions`` each (``len(members)`` × ``len(labels)``, ascending along a row)."""

    labels: Labels
    members: np.ndarray
    positions: np.ndarray


class MatchArrays:
    """A chunk of matches as arrays: interval bounds (positions) and the shapes' positions."""

    __slots__ = ("ends", "shapes", "starts")

    def __init__(self, starts: np.ndarray, ends: np.ndarray, shapes: tuple[Shape, ...]) -> None:
        self.starts = starts
        self.ends = ends
        self.shapes = shapes

    def __len__(self) -> int:
        return int(self.starts.size)

    def lengths(self) -> np.ndarray:
        """How many events each match has (int64)."""
        out = np.zeros(self.starts.size, np.int64)
        for s in self.shapes:
            out[s.members] = len(s.labels)
        return out


def flat_positions(a: MatchArrays) -> tuple[np.ndarray, np.ndarray]:
    """Every match's positions one after the other, in match order, and the offsets of each
    match's first (``len(a) + 1`` of them)."""
    lengths = a.lengths()
    offsets = np.zeros(lengths.size + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.empty(int(offsets[-1]), np.int64)
    for s in a.shapes:
        w = len(s.labels)
        if w and s.members.size:
            flat[offsets[s.members][:, None] + np.arange(w)] = s.positions
    return flat, offsets


class MatchBlock(Sequence[Match]):
    """Matches given as arrays, built as :class:`Match` objects on first use (once)."""

    __slots__ = ("_built", "_make", "arrays")

    def __init__(self, arrays: MatchArrays, make: Callable[[], list[Match]]) -> None:
        self.arrays = arrays
        self._make: Callable[[], list[Match]] | None = make
        self._built: list[Match] | None = None

    def matches(self) -> list[Match]:
        """The matches as objects (built at the first call)."""
        got = self._built
        if got is None:
            assert self._make is not None
            got = self._built = self._make()
            self._make = None
        return got

    def __len__(self) -> int:
        return len(self.arrays)

    @overload
    def __getitem__(self, i: int) -> Match: ...
    @overload
    def __getitem__(self, i: slice) -> list[Match]: ...

    def __getitem__(self, i: int | slice) -> Match | list[Match]:
        return self.matches()[i]

    def __iter__(self) -> Iterator[Match]:
        return iter(self.matches())


def arrays_of(chunk: Sequence[Match]) -> MatchArrays:
    """The arrays of a chunk of matches (a :class:`MatchBlock`'s own)."""
    if isinstance(chunk, MatchBlock):
        return chunk.arrays
    n = len(chunk)
    groups: dict[Labels, list[int]] = {}
    for i, m in enumerate(chunk):
        groups.setdefault(m.labels, []).append(i)
    shapes = []
    for labels, members in groups.items():
        w = len(labels)
        pos = np.fromiter(chain.from_iterable(map(_POSITIONS, map(chunk.__getitem__, members))),
                          np.int64, len(members) * w).reshape(len(members), w)
        shapes.append(Shape(labels, np.asarray(members, np.int64), pos))
    return MatchArrays(np.fromiter(map(_STARTS, chunk), np.int64, n),
                       np.fromiter(map(_ENDS, chunk), np.int64, n), tuple(shapes))


def concat_arrays(parts: Sequence[MatchArrays]) -> MatchArrays:
    """The matches of ``parts``, one after the other (shapes of equal labels merged)."""
    if len(parts) == 1:
        return parts[0]
    merged: dict[Labels, tuple[list[np.ndarray], list[np.ndarray]]] = {}
    at = 0
    for a in parts:
        for s in a.shapes:
            got = merged.setdefault(s.labels, ([], []))
            got[0].append(s.members + at)
            got[1].append(s.positions)
        at += len(a)
    shapes = tuple(Shape(labels, np.concatenate(ms), np.concatenate(ps))
                   for labels, (ms, ps) in merged.items())
    return MatchArrays(np.concatenate([a.starts for a in parts]),
                       np.concatenate([a.ends for a in parts]), shapes)


def cut_arrays(a: MatchArrays, start: int, stop: int) -> MatchArrays:
    """Matches ``start:stop`` of ``a``."""
    if start == 0 and stop >= len(a):
        return a
    shapes = []
    for s in a.shapes:
        lo, hi = np.searchsorted(s.members, (start, stop))
        if hi > lo:
            shapes.append(Shape(s.labels, s.members[lo:hi] - start, s.positions[lo:hi]))
    return MatchArrays(a.starts[start:stop], a.ends[start:stop], tuple(shapes))


def shapes_by_code(codes: np.ndarray, positions: np.ndarray,
                   labels_of: Callable[[int], Labels]) -> tuple[Shape, ...]:
    """The shapes of matches whose labels are given by a code each (``labels_of(code)``)."""
    if not codes.size:
        return ()
    uniq, inverse = np.unique(codes, return_inverse=True)
    if uniq.size == 1:
        return (Shape(labels_of(int(uniq[0])), np.arange(codes.size, dtype=np.int64),
                      positions),)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(uniq.size + 1))
    return tuple(Shape(labels_of(int(c)), order[lo:hi], positions[order[lo:hi]])
                 for c, lo, hi in zip(uniq.tolist(), bounds[:-1].tolist(), bounds[1:].tolist(),
                                      strict=True))

