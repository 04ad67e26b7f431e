"""The leftmost engine: one partition of a MATCH_RECOGNIZE query, row by row — the matcher
(:mod:`ceql.runtime.leftmost`) with DEFINE as its step, AFTER MATCH SKIP, WITHIN — its matches
handed to :class:`~ceql.mr.output.MatchOutput` as soon as they are final (the engine for every
pattern the fixed-length one does not take, :mod:`ceql.mr.engines`).

The batch run (:meth:`ceql.mr.MatchRecognizeQuery.run`) gives a :class:`PartitionRun` the whole
sorted partition and :meth:`~PartitionRun.finish`\\ es it; the incremental evaluator
(:mod:`ceql.mr.evaluator`) gives it a :class:`~ceql.mr.window.RowWindow` it appends to,
:meth:`~PartitionRun.advance`\\ s it after each batch and drops the rows before
:meth:`~PartitionRun.low_water`. Both give the same rows in the same order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import CeqlInputError
from ..runtime import leftmost as L
from .output import MatchOutput
from .setup import Setup, SkipRule, window_rule
from .values import arith, compare

__all__ = ["PartitionRun"]

Row = Mapping[str, object]


class PartitionRun:
    """The matching of one partition over ``rows`` (its rows so far, in order) whose
    PARTITION BY values are ``values``."""

    def __init__(self, setup: Setup, rows: Sequence[Row], values: tuple[object, ...]) -> None:
        self.setup = setup
        self.rows = rows
        self.values = values
        self.output = MatchOutput(setup, rows, values)
        skip = setup.skip
        shared = skip.kind == "PAST LAST ROW"
        self._skip = (None if skip.kind in ("PAST LAST ROW", "TO NEXT ROW") else
                      SkipRule(skip, setup.subsets))
        within = (None if setup.time_column is None else
                  window_rule(rows, setup.time_column, setup.within))
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
                self.output.emit(got, out)
        self.output.give_unmatched(m.open[0] if m.open else m.pos, out)

    def finish(self, out: list[dict[str, object]]) -> None:
        """The partition ended: match the rest and append every output row left to ``out``."""
        m = self.matcher
        n = len(self.rows)
        while m.pos < n:
            got = m.feed(m.pos)
            if got:
                self.output.emit(got, out)
        got = m.close()
        if got:
            self.output.emit(got, out)
        self.output.give_unmatched(n, out)

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
            self.output.emit(got, out)
        self.output.give_unmatched(m.open[0] if m.open else m.pos, out)

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

    def threads(self) -> int:
        """How many matcher threads are alive (for monitoring)."""
        return len(self.matcher.threads)

    def low_water(self) -> int:
        """The first row a match found later, a condition decided later or an output row
        given later may read: the earliest open start (or the next row) less what ``PREV``
        reaches back."""
        m = self.matcher
        first = m.open[0] if m.open else m.pos
        if self.output.unmatched:
            first = min(first, self.output.unmatched_from)
        return max(0, first - self.setup.back)

    # .................................................................. saving
    def export(self) -> dict[str, Any]:
        """What :meth:`load` needs besides the rows (plain data)."""
        return {**self.output.export(),
                "matcher": self.matcher.export(self.setup.registers.plain)}

    def load(self, state: Any) -> None:
        """Continue from what :meth:`export` gave (the rows already in place)."""
        if not isinstance(state, dict) or set(state) != {"number", "unmatched_from",
                                                         "matcher"}:
            raise CeqlInputError("A partition's saved state is damaged")
        if not self.output.load(state["number"], state["unmatched_from"], len(self.rows)):
            raise CeqlInputError("A partition's saved state is damaged (its counts)")
        self.matcher.load(state["matcher"], self.setup.registers.from_plain)
        if self.matcher.pos > len(self.rows):
            raise CeqlInputError("A partition's saved state is damaged (rows missing)")
        if self._skip is not None:
            self._skip.count = self.output.number
