"""The fixed-length engine: one partition of a MATCH_RECOGNIZE query whose pattern has a single
labelling — a fixed sequence of variables, such as ``A B C`` or ``A (B C){2}`` — so that a match
from row ``s`` is rows ``s … s + n − 1`` labelled that way or none (docs/match_recognize.md,
"Engines").

No thread is needed: each start is decided on its own, in order, by the DEFINE of each position
read in a :class:`~ceql.mr.views.SlidingView` (the labels so far, placed at the start) and
WITHIN, then the next start is the skip's. The rows, the conditions, the skip, WITHIN and the output
(:class:`~ceql.mr.output.MatchOutput`) are the leftmost engine's (:mod:`ceql.mr.matching`), so
the output rows are the same; only the work differs (no thread per row and start).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import CeqlInputError
from ..frontends.mr import ast as A
from ..runtime import leftmost as L
from .output import MatchOutput
from .setup import Setup, SkipRule, window_rule
from .values import arith, compare, truth
from .views import SlidingView

__all__ = ["FixedRun", "single_labelling"]

Row = Mapping[str, object]


def single_labelling(p: A.Pattern) -> tuple[str, ...] | None:
    """The one labelling every match of ``p`` has (variables, row by row), or None when
    matches may differ (alternation, PERMUTE of several, a quantifier with a range, anchors,
    exclusion) or are empty."""
    got = _labels(p)
    return got or None


def _labels(p: A.Pattern) -> tuple[str, ...] | None:
    if isinstance(p, A.PatternVar):
        return (p.name,)
    if isinstance(p, A.Concatenation):
        out: tuple[str, ...] = ()
        for q in p.items:
            part = _labels(q)
            if part is None:
                return None
            out += part
        return out
    if isinstance(p, A.Quantified) and p.high == p.low:
        part = _labels(p.item)
        return None if part is None else part * p.low
    if isinstance(p, A.Alternation | A.Permute) and len(p.items) == 1:
        return _labels(p.items[0])
    return None


class FixedRun:
    """The matching of one partition over ``rows`` (its rows so far, in order) whose
    PARTITION BY values are ``values``, for a pattern of one labelling (``setup.fixed``)."""

    def __init__(self, setup: Setup, rows: Sequence[Row], values: tuple[object, ...]) -> None:
        labels = setup.fixed
        if not labels:
            raise ValueError("the fixed-length engine needs a pattern of one labelling")
        self.setup = setup
        self.rows = rows
        self.values = values
        self.output = MatchOutput(setup, rows, values)
        self.labels = labels
        self.length = len(labels)
        self.pos = 0  # the first start not decided yet
        conditions = setup.conditions
        # per position with a DEFINE: the condition and the view it reads (the labels so far)
        self._checks = [(k, cond, SlidingView(rows, labels[:k + 1]))
                        for k, v in enumerate(labels)
                        if (cond := conditions.get(v)) is not None]
        kind = setup.skip.kind
        self._skip = (None if kind in ("PAST LAST ROW", "TO NEXT ROW") else
                      SkipRule(setup.skip, setup.subsets))
        self._step = self.length if kind == "PAST LAST ROW" else 1
        self._within = (None if setup.time_column is None else
                        window_rule(rows, setup.time_column, setup.within))

    # .................................................................. rows
    def _matches(self, s: int) -> bool:
        """Whether rows ``s …`` are a match: each DEFINE in turn, then WITHIN. The rows are in
        time order (NULLs at one end), so the window holds for every row if it holds for the
        first and the last."""
        for k, cond, view in self._checks:
            got = cond(view.place(s, s + k), None)
            if got is not True:
                if got is not None and got is not False:
                    truth(got)  # raises: not a condition's value
                return False
        within = self._within
        return within is None or within(s, s + self.length - 1)

    def _decide(self, last: int, out: list[dict[str, object]]) -> None:
        """Decide the starts from :attr:`pos` to ``last`` (their rows, and the rows NEXT
        reads, are in)."""
        s = self.pos
        labels, n, step, skip = self.labels, self.length, self._step, self._skip
        matches = self._matches
        while s <= last:
            if not matches(s):
                s += 1
                continue
            pm = L.PMatch(s, s + n - 1, tuple((s + k, v, False) for k, v in enumerate(labels)))
            self.output.emit((pm,), out)
            s = s + step if skip is None else skip(pm)
        self.pos = max(self.pos, s)

    def advance(self, out: list[dict[str, object]]) -> None:
        """Decide the starts whose rows (and what NEXT reads after them) are in; append the
        output rows now final to ``out``."""
        last = len(self.rows) - self.setup.ahead - self.length
        if self.pos <= last:
            self._decide(last, out)
        self.output.give_unmatched(self.pos, out)

    def finish(self, out: list[dict[str, object]]) -> None:
        """The partition ended: decide the rest and append every output row left to ``out``."""
        n = len(self.rows)
        self._decide(n - self.length, out)
        self.pos = max(self.pos, n)
        self.output.give_unmatched(n, out)

    def expire(self, time: object, out: list[dict[str, object]]) -> None:
        """No row still to come has a time before ``time``: the starts whose match would
        need such a row and whose WITHIN window that closes are decided (no match); append
        the output rows now final to ``out``."""
        column = self.setup.time_column
        if column is None:
            return
        rows, interval = self.rows, self.setup.within
        n = len(rows)
        while self.pos < n and self.pos + self.length > n:
            t0 = rows[self.pos].get(column)
            if t0 is not None and compare("<=", arith("-", time, t0), interval) is True:
                break
            self.pos += 1
        self.output.give_unmatched(self.pos, out)

    def waiting_until(self) -> object:
        """The time after which :meth:`expire` decides the first undecided start (None: no
        window, or no start waits for a row still to come)."""
        column = self.setup.time_column
        n = len(self.rows)
        if column is None or self.pos >= n or self.pos + self.length <= n:
            return None
        t0 = self.rows[self.pos].get(column)
        return None if t0 is None else arith("+", t0, self.setup.within)

    def threads(self) -> int:
        """How many starts received wait for a decision (for monitoring)."""
        return max(0, len(self.rows) - self.pos)

    def low_water(self) -> int:
        """The first row a start decided later, or an output row given later, may read."""
        first = self.pos
        if self.output.unmatched:
            first = min(first, self.output.unmatched_from)
        return max(0, first - self.setup.back)

    # .................................................................. saving
    def export(self) -> dict[str, Any]:
        """What :meth:`load` needs besides the rows (plain data)."""
        return {**self.output.export(), "engine": "fixed", "pos": self.pos}

    def load(self, state: Any) -> None:
        """Continue from what :meth:`export` gave (the rows already in place)."""
        if not isinstance(state, dict) or state.get("engine") != "fixed":
            raise CeqlInputError("A partition's saved state is not the fixed-length engine's: "
                                 "restore a snapshot this query's evaluator took with this "
                                 "version of ceql")
        pos = state.get("pos")
        if (set(state) != {"engine", "number", "unmatched_from", "pos"}
                or type(pos) is not int or not 0 <= pos <= len(self.rows)
                or not self.output.load(state["number"], state["unmatched_from"],
                                        len(self.rows))):
            raise CeqlInputError("A partition's saved state is damaged (its counts)")
        self.pos = pos
        if self._skip is not None:
            self._skip.count = self.output.number
