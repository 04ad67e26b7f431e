"""One partition of a MATCH_RECOGNIZE query, row by row: the matcher
(:mod:`ceql.runtime.leftmost`) with DEFINE as its step, AFTER MATCH SKIP, WITHIN,
MATCH_NUMBER, and the output rows of ONE ROW / ALL ROWS PER MATCH (docs/match_recognize.md,
"Output") given as soon as they are final.

The batch run (:meth:`ceql.mr.MatchRecognizeQuery.run`) gives a :class:`PartitionRun` the whole
sorted partition and :meth:`~PartitionRun.finish`\\ es it; the incremental evaluator
(:mod:`ceql.mr.evaluator`) gives it a :class:`~ceql.mr.window.RowWindow` it appends to,
:meth:`~PartitionRun.advance`\\ s it after each row and drops the rows before
:meth:`~PartitionRun.low_water`. Both give the same rows in the same order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import CeqlInputError
from ..frontends.mr import ast as A
from ..frontends.mr.errors import MatchSkipError
from ..runtime import leftmost as L
from .registers import Registers
from .values import arith, compare
from .views import Compiled, MatchView

__all__ = ["PartitionRun", "Setup"]

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


class _SkipRule:
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


def _window(rows: Sequence[Row], column: str, interval: object) -> Callable[[int, int], bool]:
    """WITHIN: whether a match from row ``s`` may take row ``i`` (both times known, the span
    at most the interval). Rows are sorted by the time, so checking each row taken checks the
    match's last."""
    def within(s: int, i: int) -> bool:
        t0, t1 = rows[s].get(column), rows[i].get(column)
        if t0 is None or t1 is None:
            return False
        return compare("<=", arith("-", t1, t0), interval) is True
    return within


class PartitionRun:
    """The matching of one partition over ``rows`` (its rows so far, in order) whose
    PARTITION BY values are ``values``."""

    def __init__(self, setup: Setup, rows: Sequence[Row], values: tuple[object, ...]) -> None:
        self.setup = setup
        self.rows = rows
        self.values = values
        self.number = 0  # matches numbered so far (MATCH_NUMBER)
        self.unmatched_from = 0  # WITH UNMATCHED ROWS: rows before this are given or matched
        self._lead = dict(zip(setup.partition_by, values, strict=True))
        self._lower_lead = {c.lower() for c in (*setup.partition_columns,
                                                *setup.order_columns)}
        self._unmatched = setup.mode == "WITH UNMATCHED ROWS"
        skip = setup.skip
        shared = skip.kind == "PAST LAST ROW"
        self._skip = (None if skip.kind in ("PAST LAST ROW", "TO NEXT ROW") else
                      _SkipRule(skip, setup.subsets))
        within = (None if setup.time_column is None else
                  _window(rows, setup.time_column, setup.within))
        regs = setup.registers
        self.matcher = L.LeftmostMatcher(
            setup.program, regs.step_function(rows, setup.conditions),
            L.SKIP_PAST_LAST_ROW if shared else L.SKIP_TO_NEXT_ROW,
            start_regs=regs.initial, within=within, skip_to=self._skip)

    # .................................................................. rows
    def advance(self, out: list[dict[str, object]]) -> None:
        """Match the rows received so far whose conditions can be decided (all but the last
        ``ahead``, which NEXT may read past); append the output rows now final to ``out``."""
        m = self.matcher
        end = len(self.rows) - self.setup.ahead
        while m.pos < end:
            got = m.feed(m.pos)
            if got:
                self._emit(got, out)
        if self._unmatched:
            self._give_unmatched(m.open[0] if m.open else m.pos, out)

    def finish(self, out: list[dict[str, object]]) -> None:
        """The partition ended: match the rest and append every output row left to ``out``."""
        m = self.matcher
        n = len(self.rows)
        while m.pos < n:
            got = m.feed(m.pos)
            if got:
                self._emit(got, out)
        got = m.close()
        if got:
            self._emit(got, out)
        if self._unmatched:
            self._give_unmatched(n, out)

    def expire(self, time: object, out: list[dict[str, object]]) -> None:
        """No row still to come has a time before ``time``: end the matches whose WITHIN
        window that closes and append the output rows now final to ``out``."""
        setup = self.setup
        column = setup.time_column
        if column is None:
            return
        rows, interval = self.rows, setup.within
        m = self.matcher
        if m.pos < len(rows):
            # a row received but not matched yet (NEXT waits for more) comes to the matcher
            # first: it is the earliest still to come
            nxt = rows[m.pos].get(column)
            if nxt is None or compare("<", nxt, time) is True:
                time = nxt
            if time is None:
                return

        def dead(s: int) -> bool:
            t0 = rows[s].get(column)
            return t0 is None or compare("<=", arith("-", time, t0), interval) is not True
        got = m.expire(dead)
        if got:
            self._emit(got, out)
        if self._unmatched:
            self._give_unmatched(m.open[0] if m.open else m.pos, out)

    def waiting_until(self) -> object:
        """The time after which :meth:`expire` ends the earliest open match's window (None:
        no window, no open match, or none time alone can end before the next row)."""
        column = self.setup.time_column
        m = self.matcher
        if column is None or not m.open:
            return None
        t0 = self.rows[m.open[0]].get(column)
        if t0 is None:
            return None
        due = arith("+", t0, self.setup.within)
        if m.pos < len(self.rows):
            # a row waiting for what NEXT reads holds time back (expire): the window closes
            # by time alone only if it closes before that row
            nxt = self.rows[m.pos].get(column)
            if nxt is None or compare("<", due, nxt) is not True:
                return None
        return due

    def low_water(self) -> int:
        """The first row a match found later, a condition decided later or an output row
        given later may read: the earliest open start (or the next row) less what ``PREV``
        reaches back."""
        m = self.matcher
        first = m.open[0] if m.open else m.pos
        if self._unmatched:
            first = min(first, self.unmatched_from)
        return max(0, first - self.setup.back)

    # .................................................................. output
    def _emit(self, matches: list[L.PMatch], out: list[dict[str, object]]) -> None:
        setup = self.setup
        rows = self.rows
        measures = setup.measures
        for pm in matches:
            self.number += 1
            number = self.number
            if setup.one_row:
                view = MatchView(rows, pm.start, [v for _, v, _ in pm.rows],
                                 None if pm.empty else pm.end, number)
                out.append({**self._lead, **{n: f(view, None) for n, f in measures}})
                continue
            if self._unmatched:
                self._give_unmatched(pm.start, out)
                self.unmatched_from = max(self.unmatched_from, pm.end + 1, pm.start + 1)
            if pm.empty:
                if setup.mode != "OMIT EMPTY MATCHES":
                    view = MatchView(rows, pm.start, (), None, number)
                    out.append(self._row_out(rows[pm.start],
                                             {n: f(view, None) for n, f in measures}))
                continue
            view = MatchView(rows, pm.start, [v for _, v, _ in pm.rows], None, number)
            for r, _, excluded in pm.rows:
                if not excluded:
                    view.cur = r
                    out.append(self._row_out(rows[r], {n: f(view, None) for n, f in measures}))

    def _give_unmatched(self, before: int, out: list[dict[str, object]]) -> None:
        """Rows from :attr:`unmatched_from` up to ``before`` are in no match: give them."""
        if before <= self.unmatched_from:
            return
        nulls: dict[str, object] = {n: None for n, _ in self.setup.measures}
        rows = self.rows
        for r in range(self.unmatched_from, before):
            out.append(self._row_out(rows[r], nulls))
        self.unmatched_from = before

    def _row_out(self, row: Row, measures: dict[str, object]) -> dict[str, object]:
        setup = self.setup
        out = {c: row.get(c) for c in setup.partition_columns}
        out.update({c: row.get(c) for c in setup.order_columns})
        out.update(measures)
        lower = self._lower_lead
        out.update({k: v for k, v in row.items() if k.lower() not in lower})
        return out

    # .................................................................. saving
    def export(self) -> dict[str, Any]:
        """What :meth:`load` needs besides the rows (plain data)."""
        return {"number": self.number, "unmatched_from": self.unmatched_from,
                "matcher": self.matcher.export(self.setup.registers.plain)}

    def load(self, state: Any) -> None:
        """Continue from what :meth:`export` gave (the rows already in place)."""
        if not isinstance(state, dict) or set(state) != {"number", "unmatched_from",
                                                         "matcher"}:
            raise CeqlInputError("A partition's saved state is damaged")
        number, unmatched_from = state["number"], state["unmatched_from"]
        if (type(number) is not int or number < 0 or type(unmatched_from) is not int
                or not 0 <= unmatched_from <= len(self.rows)):
            raise CeqlInputError("A partition's saved state is damaged (its counts)")
        self.matcher.load(state["matcher"], self.setup.registers.from_plain)
        if self.matcher.pos > len(self.rows):
            raise CeqlInputError("A partition's saved state is damaged (rows missing)")
        self.number = number
        self.unmatched_from = unmatched_from
        if self._skip is not None:
            self._skip.count = number
