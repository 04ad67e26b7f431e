"""A compiled MATCH_RECOGNIZE query and its run over rows: partitions, order, the matcher per
partition (:mod:`ceql.runtime.leftmost`) with DEFINE as its step, AFTER MATCH SKIP, WITHIN,
MATCH_NUMBER, and the output rows of ONE ROW / ALL ROWS PER MATCH (docs/match_recognize.md,
"Output")."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..frontends.mr import ast as A
from ..frontends.mr import format_body, parse
from ..frontends.mr.errors import ClauseError, MatchSkipError
from ..runtime import leftmost as L
from .expressions import Compiler, Need
from .lowering import lower
from .partitions import partition, sort
from .registers import Registers
from .values import arith, compare
from .views import Compiled, MatchView

__all__ = ["MatchRecognizeQuery", "match_recognize"]

Row = Mapping[str, object]


@dataclass(frozen=True)
class _Plan:
    """The query compiled against one set of input columns."""

    conditions: dict[str, Compiled]
    measures: tuple[tuple[str, Compiled], ...]
    registers: Registers


class MatchRecognizeQuery:
    """A MATCH_RECOGNIZE query compiled for the Python engine; :meth:`run` gives its output
    rows. ``str()`` shows the query and how it runs (the registers its threads carry)."""

    def __init__(self, body: A.MatchRecognize) -> None:
        self.body = body
        #: The query's body as canonical text.
        self.text = format_body(body)
        self.program = L.compile_pattern(lower(body.pattern))
        self._subsets = {s.name: s.members for s in body.subsets}
        self._plans: dict[tuple[str, ...] | None, _Plan] = {}
        self._plan(None)  # refuses what the Python engine lacks before any row comes

    def _plan(self, columns: tuple[str, ...] | None) -> _Plan:
        plan = self._plans.get(columns)
        if plan is None:
            needs: set[Need] = set()
            conditions: dict[str, Compiled] = {}
            for d in self.body.defines:
                compiler = Compiler(columns, self._subsets, own=d.var)
                conditions[d.var] = compiler.compile(d.condition)
                needs |= compiler.needs
            measure_compiler = Compiler(columns, self._subsets)
            measures = tuple((m.name, measure_compiler.compile(m.expr))
                             for m in self.body.measures)
            plan = _Plan(conditions, measures, Registers(needs, self.body.variables()))
            self._plans[columns] = plan
        return plan

    def __str__(self) -> str:
        regs = self._plan(None).registers
        what = "; ".join(regs.described) if regs.described else "none (conditions read rows only)"
        kind = "derived" if regs.derived else "fallback"
        body = "\n".join("  " + line for line in self.text.splitlines())
        return (f"MATCH_RECOGNIZE (\n{body}\n)\n"
                f"-- matcher: {len(self.program.insts)} instructions, leftmost preferred-first\n"
                f"-- registers ({kind}): {what}")

    def __repr__(self) -> str:
        return f"ceql.match_recognize({self.text!r})"

    def run(self, rows: Iterable[Row] | Any) -> list[dict[str, object]]:
        """The output rows over ``rows`` (mappings of column → value, or a pyarrow Table):
        partitions in the order of their first row, each partition's matches in the order
        found."""
        data: list[Row] = (rows.to_pylist() if hasattr(rows, "to_pylist") else list(rows))
        return self._run(data, presorted=False)

    def run_sorted(self, rows: Sequence[Row]) -> list[dict[str, object]]:
        """The output rows of ONE partition whose rows come in ORDER BY order already (an
        adapter had them sorted, as Spark does, ties broken its way): neither partitioned nor
        sorted again; the PARTITION BY columns' values are the first row's."""
        return self._run(rows, presorted=True)

    def _run(self, data: Sequence[Row], *, presorted: bool) -> list[dict[str, object]]:
        if not data:
            return []
        columns = tuple(dict.fromkeys(k for row in data for k in row))  # rows may differ
        plan = self._plan(columns)
        body = self.body
        resolve = Compiler(columns, self._subsets).column
        one_row = body.rows_per_match == "ONE"
        if not one_row:
            names = {c.lower() for c in columns}
            for m in body.measures:
                if m.name.lower() in names:
                    raise ClauseError(f"Measure {m.name!r} has the name of an input column: "
                                      "ALL ROWS PER MATCH outputs both; rename the measure")
        part_cols = [resolve(c) for c in body.partition_by]
        keys = [(resolve(k.column), k) for k in body.order_by]
        parts = ([(tuple(data[0].get(c) for c in part_cols), list(data))] if presorted
                 else partition(data, part_cols))
        out: list[dict[str, object]] = []
        for values, part in parts:
            part = sort(part, keys) if keys and not presorted else part
            matches = self._matches(plan, part, keys[0][0] if keys else None)
            if one_row:
                lead = dict(zip(body.partition_by, values, strict=True))
                for number, pm in enumerate(matches, 1):
                    view = MatchView(part, pm.start, [v for _, v, _ in pm.rows],
                                     None if pm.empty else pm.end, number)
                    out.append({**lead, **{n: f(view, None) for n, f in plan.measures}})
            else:
                lead_cols = [*part_cols, *(c for c, _ in keys)]
                out += self._all_rows(plan, part, matches, lead_cols)
        return out

    def _matches(self, plan: _Plan, part: list[Row], time_col: str | None) -> list[L.PMatch]:
        body = self.body
        skip = body.skip
        shared = skip.kind == "PAST LAST ROW"
        skip_to = None if skip.kind in ("PAST LAST ROW", "TO NEXT ROW") else _skip_rule(skip,
                                                                                    self._subsets)
        within = None
        if body.within is not None and time_col is not None:
            within = _window([r.get(time_col) for r in part], body.within)
        step = plan.registers.step_function(part, plan.conditions)
        matcher = L.LeftmostMatcher(self.program, step,
                                    L.SKIP_PAST_LAST_ROW if shared else L.SKIP_TO_NEXT_ROW,
                                    start_regs=plan.registers.initial, within=within,
                                    skip_to=skip_to)
        found: list[L.PMatch] = []
        for i in range(len(part)):
            found += matcher.feed(i)
        found += matcher.close()
        return found

    def _all_rows(self, plan: _Plan, part: list[Row], matches: list[L.PMatch],
                  lead: list[str]) -> list[dict[str, object]]:
        mode = self.body.rows_per_match.mode  # type: ignore[union-attr]
        lower_lead = {c.lower() for c in lead}

        def row_out(row: Row, measures: dict[str, object]) -> dict[str, object]:
            out = {c: row.get(c) for c in lead}
            out.update(measures)
            out.update({k: v for k, v in row.items() if k.lower() not in lower_lead})
            return out

        unmatched: list[int] = []
        if mode == "WITH UNMATCHED ROWS":
            seen = [False] * len(part)
            for m in matches:
                for r in range(m.start, max(m.end, m.start) + 1):
                    seen[r] = True
            unmatched = [r for r, s in enumerate(seen) if not s]
        nulls: dict[str, object] = {n: None for n, _ in plan.measures}
        out: list[dict[str, object]] = []
        u = 0
        for number, m in enumerate(matches, 1):
            while u < len(unmatched) and unmatched[u] < m.start:
                out.append(row_out(part[unmatched[u]], nulls))
                u += 1
            if m.empty:
                if mode != "OMIT EMPTY MATCHES":
                    view = MatchView(part, m.start, (), None, number)
                    out.append(row_out(part[m.start],
                                       {n: f(view, None) for n, f in plan.measures}))
                continue
            view = MatchView(part, m.start, [v for _, v, _ in m.rows], None, number)
            for r, _, excluded in m.rows:
                if not excluded:
                    view.cur = r
                    out.append(row_out(part[r], {n: f(view, None) for n, f in plan.measures}))
        out += [row_out(part[r], nulls) for r in unmatched[u:]]
        return out


def _skip_rule(skip: A.Skip, subsets: Mapping[str, tuple[str, ...]]
               ) -> Callable[[L.PMatch], int]:
    """Where matching resumes after a match under SKIP TO FIRST/LAST v (the standard's error
    when the match labels no ``v`` or the row is the match's first)."""
    var = skip.var
    assert var is not None
    members = frozenset(subsets.get(var, (var,)))
    first = skip.kind == "TO FIRST"
    count = [0]

    def skip_to(m: L.PMatch) -> int:
        count[0] += 1
        if m.empty:
            return m.start + 1
        rows = [r for r, v, _ in m.rows if v in members]
        if not rows:
            raise MatchSkipError(f"AFTER MATCH SKIP {skip.kind} {var}: match {count[0]} (rows "
                                 f"{m.start}–{m.end} of its partition) maps no row to {var}")
        target = rows[0] if first else rows[-1]
        if target == m.start:
            raise MatchSkipError(f"AFTER MATCH SKIP {skip.kind} {var}: match {count[0]} would "
                                 f"restart at its own first row (row {m.start} of its "
                                 "partition), so matching would never end")
        return target
    return skip_to


def _window(times: Sequence[object], interval: object) -> Callable[[int, int], bool]:
    """WITHIN: whether a match from row ``s`` may take row ``i`` (both times known, the span
    at most the interval). Rows are sorted by the time, so checking each row taken checks the
    match's last."""
    def within(s: int, i: int) -> bool:
        t0, t1 = times[s], times[i]
        if t0 is None or t1 is None:
            return False
        return compare("<=", arith("-", t1, t0), interval) is True
    return within


def match_recognize(text: str) -> MatchRecognizeQuery:
    """Compile MATCH_RECOGNIZE ``text`` — the clause's body (``PARTITION BY … PATTERN (…)
    DEFINE …``, with or without ``MATCH_RECOGNIZE ( … )``) or ``SELECT * FROM t
    MATCH_RECOGNIZE ( … )`` — for the Python engine (docs/match_recognize.md)."""
    tree = parse(text)
    if isinstance(tree, A.Query):
        if tree.select:
            raise ClauseError("The Python engine gives MATCH_RECOGNIZE's own output columns "
                              "(SELECT *): write SELECT * or the body alone, and pick columns "
                              "from the rows it returns")
        tree = tree.body
    return MatchRecognizeQuery(tree)
