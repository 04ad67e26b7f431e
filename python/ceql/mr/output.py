"""The output rows of one partition's matches (docs/match_recognize.md, "Output"): ONE ROW PER
MATCH's partition columns and measures, ALL ROWS PER MATCH's rows (empty matches shown or
omitted, excluded rows left out), WITH UNMATCHED ROWS' rows in no match, MATCH_NUMBER.

Every engine that finds a partition's matches (:mod:`ceql.mr.engines`) gives them here, in the
order found, so that the rows are the same whichever engine found them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..runtime import leftmost as L
from .setup import Setup
from .views import MatchView

__all__ = ["MatchOutput"]

Row = Mapping[str, object]


class MatchOutput:
    """The output rows of the matches over ``rows`` (one partition's, PARTITION BY values
    ``values``): :attr:`number` matches numbered so far, rows before :attr:`unmatched_from`
    given or in a match."""

    def __init__(self, setup: Setup, rows: Sequence[Row], values: tuple[object, ...]) -> None:
        self.setup = setup
        self.rows = rows
        self.number = 0  # matches numbered so far (MATCH_NUMBER)
        self.unmatched_from = 0  # WITH UNMATCHED ROWS: rows before this are given or matched
        self.unmatched = setup.mode == "WITH UNMATCHED ROWS"
        self._lead = dict(zip(setup.partition_by, values, strict=True))
        self._lower_lead = {c.lower() for c in (*setup.partition_columns,
                                                *setup.order_columns)}

    def emit(self, matches: Sequence[L.PMatch], out: list[dict[str, object]]) -> None:
        """Append the output rows of ``matches`` (the next ones, in order) to ``out``."""
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
            if self.unmatched:
                self.give_unmatched(pm.start, out)
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

    def give_unmatched(self, before: int, out: list[dict[str, object]]) -> None:
        """WITH UNMATCHED ROWS: rows from :attr:`unmatched_from` up to ``before`` are in no
        match: append them to ``out`` (nothing in the other modes)."""
        if not self.unmatched or before <= self.unmatched_from:
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

    def export(self) -> dict[str, int]:
        """The counts as plain data."""
        return {"number": self.number, "unmatched_from": self.unmatched_from}

    def load(self, number: object, unmatched_from: object, rows: int) -> bool:
        """Take back :meth:`export`'s counts (``rows``: the partition's rows so far); False
        when they are not counts this partition can have."""
        if (type(number) is not int or number < 0 or type(unmatched_from) is not int
                or not 0 <= unmatched_from <= rows):
            return False
        self.number = number
        self.unmatched_from = unmatched_from
        return True
