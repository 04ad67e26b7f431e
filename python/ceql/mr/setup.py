"""A MATCH_RECOGNIZE query compiled against one set of input columns (:class:`Setup`: what
every partition's run shares, whichever engine runs it) and the rules the engines share: where
matching resumes after a match under SKIP TO FIRST/LAST (:class:`SkipRule`) and WITHIN's window
(:func:`window_rule`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..frontends.mr import ast as A
from ..frontends.mr.errors import MatchSkipError
from ..runtime import leftmost as L
from .registers import Registers
from .values import arith, compare
from .views import Compiled

__all__ = ["Setup", "SkipRule", "window_rule"]

Row = Mapping[str, object]


@dataclass(frozen=True)
class Setup:
    """A query compiled against one set of input columns: what every partition's run
    shares."""

    program: L.Program
    conditions: Mapping[str, Compiled]
    measures: tuple[tuple[str, Compiled], ...]
    registers: Registers
    skip: A.Skip
    subsets: Mapping[str, tuple[str, ...]]
    #: the first ORDER BY column (the input's spelling) when there is a WITHIN, else None
    time_column: str | None
    within: object
    one_row: bool
    #: ALL ROWS PER MATCH's mode (None: ONE ROW PER MATCH)
    mode: str | None
    #: PARTITION BY as written (ONE ROW's leading columns)
    partition_by: tuple[str, ...]
    #: PARTITION BY and ORDER BY columns in the input's spelling
    partition_columns: tuple[str, ...]
    order_columns: tuple[str, ...]
    order_keys: tuple[A.SortKey, ...]
    #: rows before a match's first row and after a row its expressions may read
    back: int
    ahead: int
    #: the pattern's one labelling when it has a single one (a fixed row sequence: the
    #: fixed-length engine runs it), else None
    fixed: tuple[str, ...] | None = None


class SkipRule:
    """Where matching resumes after a match under SKIP TO FIRST/LAST v (the standard's error
    when the match labels no ``v`` or the row is the match's first); ``count``: matches
    numbered so far, for the message."""

    def __init__(self, skip: A.Skip, subsets: Mapping[str, tuple[str, ...]]) -> None:
        var = skip.var
        assert var is not None
        self.kind = skip.kind
        self.var = var
        self.members = frozenset(subsets.get(var, (var,)))
        self.first = skip.kind == "TO FIRST"
        self.count = 0

    def __call__(self, m: L.PMatch) -> int:
        self.count += 1
        if m.empty:
            return m.start + 1
        rows = [r for r, v, _ in m.rows if v in self.members]
        if not rows:
            raise MatchSkipError(f"AFTER MATCH SKIP {self.kind} {self.var}: match {self.count} "
                                 f"(rows {m.start}–{m.end} of its partition) maps no row to "
                                 f"{self.var}")
        target = rows[0] if self.first else rows[-1]
        if target == m.start:
            raise MatchSkipError(f"AFTER MATCH SKIP {self.kind} {self.var}: match {self.count} "
                                 f"would restart at its own first row (row {m.start} of its "
                                 "partition), so matching would never end")
        return target


def window_rule(rows: Sequence[Row], column: str, interval: object) -> Callable[[int, int], bool]:
    """WITHIN: whether a match from row ``s`` may take row ``i`` (both times known, the span
    at most the interval). Rows are sorted by the time, so checking each row taken checks the
    match's last."""
    quick = type(interval) is dt.timedelta

    def within(s: int, i: int) -> bool:
        t0, t1 = rows[s].get(column), rows[i].get(column)
        if t0 is None or t1 is None:
            return False
        if quick and type(t0) is dt.datetime and type(t1) is dt.datetime:
            return t1 - t0 <= interval  # type: ignore[operator]  # arith's and compare's answer
        return compare("<=", arith("-", t1, t0), interval) is True
    return within
