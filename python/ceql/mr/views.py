"""What an expression sees of a match: the partition's rows, the current row, the rows labelled
with a variable (so far, or all under FINAL), their labels, aggregates, the match's number.

:class:`View` is the interface compiled expressions read; :class:`MatchView` answers it from a
match's labels (MEASURES, and DEFINE where registers keep the labels so far);
:class:`SlidingView` is a :class:`MatchView` of one labelling placed at any start (the
fixed-length engine's DEFINE); :class:`ceql.mr.registers.RegisterView` answers it from a
thread's registers.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from itertools import count
from typing import Protocol

from .values import Accumulator

__all__ = ["AggSpec", "Compiled", "MatchView", "RowSet", "SlidingView", "View"]

#: The rows of a variable: the primary variables it stands for (a SUBSET: its members), or
#: None for the universal row pattern variable (every row).
RowSet = frozenset[str] | None


class View(Protocol):
    """A match as far as an expression may read it."""

    rows: Sequence[Mapping[str, object]]
    cur: int | None  # the current row (None: an empty match)
    number: int | None  # MATCH_NUMBER() (None in DEFINE)

    def last(self, rows: RowSet, k: int, final: bool) -> int | None:
        """The k-th last row of the match labelled in ``rows`` (so far unless ``final``)."""

    def first(self, rows: RowSet, k: int, final: bool) -> int | None:
        """The k-th first row of the match labelled in ``rows``."""

    def count(self, rows: RowSet, final: bool) -> int:
        """How many rows of the match are labelled in ``rows``."""

    def label(self, r: int) -> str | None:
        """Row ``r``'s variable; None outside the match (or not labelled yet)."""

    def classifier(self, rows: RowSet, final: bool) -> str | None:
        """The variable of the last row labelled in ``rows`` (the current row for None)."""

    def aggregate(self, spec: AggSpec, final: bool) -> object:
        """The aggregate ``spec`` over the match's rows."""


#: A compiled expression: its value in a view, ``at`` the row navigation chose (None: read
#: columns by their variable).
Compiled = Callable[[View, "int | None"], object]


_SEQ = count()


class AggSpec:
    """An aggregate of an expression: its accumulator, the rows it reads, its argument
    (compiled; reads the row it is given). Compared by identity."""

    def __init__(self, acc: Accumulator, rows: RowSet, arg: Compiled) -> None:
        self.acc = acc
        self.rows = rows
        self.arg = arg
        #: the order of creation: a query compiled again numbers its aggregates in the same
        #: order, so registers keep one layout across processes (snapshots)
        self.seq = next(_SEQ)


class MatchView:
    """A view of a match given by its labels: ``labels[j]`` is row ``start + j``'s variable.
    In DEFINE the labels are those so far (the current row's last)."""

    def __init__(self, rows: Sequence[Mapping[str, object]], start: int,
                 labels: Sequence[str], cur: int | None, number: int | None) -> None:
        self.rows = rows
        self.start = start
        self.labels = labels
        self.cur = cur
        self.number = number
        self._of: dict[RowSet, list[int]] = {}

    def _rows_of(self, rows: RowSet) -> list[int]:
        got = self._of.get(rows)
        if got is None:
            s = self.start
            got = ([s + j for j in range(len(self.labels))] if rows is None else
                   [s + j for j, v in enumerate(self.labels) if v in rows])
            self._of[rows] = got
        return got

    def _cut(self, rows: list[int], final: bool) -> int:
        if final or self.cur is None:
            return len(rows)
        return bisect_right(rows, self.cur)

    def last(self, rows: RowSet, k: int, final: bool) -> int | None:
        of = self._rows_of(rows)
        j = self._cut(of, final) - 1 - k
        return of[j] if j >= 0 else None

    def first(self, rows: RowSet, k: int, final: bool) -> int | None:
        of = self._rows_of(rows)
        return of[k] if k < self._cut(of, final) else None

    def count(self, rows: RowSet, final: bool) -> int:
        return self._cut(self._rows_of(rows), final)

    def label(self, r: int) -> str | None:
        j = r - self.start
        return self.labels[j] if 0 <= j < len(self.labels) else None

    def classifier(self, rows: RowSet, final: bool) -> str | None:
        if rows is None:
            if self.cur is None:
                return None
            if final:
                return self.labels[-1] if self.labels else None
            return self.label(self.cur)
        r = self.last(rows, 0, final)
        return None if r is None else self.label(r)

    def aggregate(self, spec: AggSpec, final: bool) -> object:
        of = self._rows_of(spec.rows)
        acc = spec.acc
        state = acc.initial
        for r in of[:self._cut(of, final)]:
            state = acc.add(state, spec.arg(self, r))
        return acc.result(state)


class SlidingView(MatchView):
    """A :class:`MatchView` of fixed ``labels`` whose start moves (:meth:`place`): the rows of
    each variable are offsets found once, whatever the start."""

    def __init__(self, rows: Sequence[Mapping[str, object]], labels: Sequence[str]) -> None:
        super().__init__(rows, 0, labels, None, None)
        self._offsets: dict[RowSet, list[int]] = {}

    def place(self, start: int, cur: int) -> SlidingView:
        """The view with the labels from row ``start``, the current row ``cur``."""
        self.start = start
        self.cur = cur
        return self

    def _rows_of(self, rows: RowSet) -> list[int]:
        rel = self._offsets.get(rows)
        if rel is None:
            rel = self._offsets[rows] = [j for j, v in enumerate(self.labels)
                                         if rows is None or v in rows]
        s = self.start
        return [s + j for j in rel]
