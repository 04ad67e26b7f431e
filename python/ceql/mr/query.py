"""A compiled MATCH_RECOGNIZE query: DEFINE and MEASURES compiled per set of input columns, its
batch run over rows (partitions, order, one :mod:`~ceql.mr.engines` run each) and
its incremental evaluator (:mod:`ceql.mr.evaluator`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..frontends.mr import ast as A
from ..frontends.mr import format_body, parse
from ..frontends.mr.errors import ClauseError
from ..runtime import leftmost as L
from .arrow_rows import arrow_rows
from .columnar import ColumnarEvaluator, ColumnarPlan, columnar_plan, partition_groups
from .engines import partition_run
from .evaluator import MatchRecognizeEvaluator
from .expressions import Compiler, Need
from .fixed import single_labelling
from .lowering import lower
from .partitions import partition, sort
from .reach import reach
from .registers import Registers
from .setup import Setup
from .snapshot import load
from .views import Compiled

__all__ = ["Evaluator", "MatchRecognizeQuery", "match_recognize"]

Row = Mapping[str, object]

#: An incremental evaluator: the row engines' or the columnar engine's (one interface).
Evaluator = MatchRecognizeEvaluator | ColumnarEvaluator


@dataclass(frozen=True)
class _Plan:
    """The query compiled against one set of input columns."""

    conditions: dict[str, Compiled]
    measures: tuple[tuple[str, Compiled], ...]
    registers: Registers


class MatchRecognizeQuery:
    """A MATCH_RECOGNIZE query compiled for the Python engine; :meth:`run` gives its output
    rows over a finite input, :meth:`evaluator` evaluates a stream in pieces. ``str()`` shows
    the query and how it runs (the registers its threads carry)."""

    def __init__(self, body: A.MatchRecognize) -> None:
        self.body = body
        #: The query's body as canonical text.
        self.text = format_body(body)
        self.program = L.compile_pattern(lower(body.pattern))
        self._subsets = {s.name: s.members for s in body.subsets}
        self._plans: dict[tuple[str, ...] | None, _Plan] = {}
        self._setups: dict[tuple[str, ...], Setup] = {}
        self._columnar: dict[tuple[tuple[str, ...], str], ColumnarPlan | None] = {}
        self._reach = reach([*(d.condition for d in body.defines),
                             *(m.expr for m in body.measures)])
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

    def setup(self, columns: tuple[str, ...]) -> Setup:
        """The query compiled against input columns ``columns`` (what each partition's run
        shares); :class:`~ceql.mr.UnknownColumnError` for a column the input lacks."""
        got = self._setups.get(columns)
        if got is not None:
            return got
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
        order = tuple(resolve(k.column) for k in body.order_by)
        back, ahead = self._reach
        got = Setup(
            program=self.program, conditions=plan.conditions, measures=plan.measures,
            registers=plan.registers, skip=body.skip, subsets=self._subsets,
            time_column=order[0] if body.within is not None and order else None,
            within=body.within, one_row=one_row,
            mode=None if one_row else body.rows_per_match.mode,  # type: ignore[union-attr]
            partition_by=body.partition_by,
            partition_columns=tuple(resolve(c) for c in body.partition_by),
            order_columns=order, order_keys=body.order_by, back=back, ahead=ahead,
            fixed=single_labelling(body.pattern))
        self._setups[columns] = got
        return got

    def columnar(self, columns: tuple[str, ...], schema: pa.Schema) -> ColumnarPlan | None:
        """The query lowered for the columnar engine over input ``columns`` of Arrow
        ``schema`` (None: it runs on the row engines); kept per columns and schema."""
        key = (columns, str(schema))
        if key not in self._columnar:
            self._columnar[key] = columnar_plan(self.setup(columns), self.body, schema, columns)
        return self._columnar[key]

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
        if isinstance(rows, pa.Table | pa.RecordBatch):
            table = rows if isinstance(rows, pa.Table) else pa.Table.from_batches([rows])
            got = self._run_columnar(table, presorted=False)
            if got is not None:
                return arrow_rows(got)
        data: Sequence[Row] = (arrow_rows(rows) if hasattr(rows, "to_pylist") else list(rows))
        return self._run(data, presorted=False)

    def run_sorted_table(self, table: pa.Table) -> pa.Table | list[dict[str, object]]:
        """:meth:`run_sorted` over an Arrow table: the output as an Arrow table when the
        columnar engine runs the query, else as rows."""
        got = self._run_columnar(table, presorted=True) if table.num_rows else None
        return got if got is not None else self.run_sorted(arrow_rows(table))

    def _run_columnar(self, table: pa.Table, *, presorted: bool) -> pa.Table | None:
        """The output over ``table`` by the columnar engine (None: it cannot run the query
        over these columns, or cannot sort them as ORDER BY does)."""
        columns = tuple(table.schema.names)
        ev = self.evaluator(columns=columns, schema=table.schema)
        if not isinstance(ev, ColumnarEvaluator):
            return None
        if not presorted:
            setup = self.setup(columns)
            order = _sort_order(table, setup)
            if order is None:
                return None
            table = table.take(order)
        return ev.run_table(table)

    def run_sorted(self, rows: Sequence[Row]) -> list[dict[str, object]]:
        """The output rows of ONE partition whose rows come in ORDER BY order already (an
        adapter had them sorted, as Spark does, ties broken its way): neither partitioned nor
        sorted again; the PARTITION BY columns' values are the first row's."""
        return self._run(rows, presorted=True)

    def _run(self, data: Sequence[Row], *, presorted: bool) -> list[dict[str, object]]:
        if not data:
            return []
        columns = tuple(dict.fromkeys(k for row in data for k in row))  # rows may differ
        setup = self.setup(columns)
        keys = list(zip(setup.order_columns, self.body.order_by, strict=True))
        parts = ([(tuple(data[0].get(c) for c in setup.partition_columns), list(data))]
                 if presorted else partition(data, setup.partition_columns))
        out: list[dict[str, object]] = []
        for values, part in parts:
            part = sort(part, keys) if keys and not presorted else part
            partition_run(setup, part, values).finish(out)
        return out

    def evaluator(self, *, columns: Sequence[str] | None = None,
                  schema: pa.Schema | None = None) -> Evaluator:
        """An incremental evaluator: ``feed(rows)`` returns the output rows each batch makes
        final, ``close()`` the rest; ``snapshot()`` saves it and :meth:`restore` continues it.
        ``columns``: the input's columns (default: the first row's, or ``schema``'s).
        With ``schema`` (the Arrow schema of the batches to come) the columnar engine runs
        the query when it can (:mod:`ceql.mr.columnar`), else the row engines
        (:class:`~ceql.mr.evaluator.MatchRecognizeEvaluator`): the one place that
        chooses."""
        if schema is not None:
            names = tuple(columns) if columns is not None else tuple(schema.names)
            plan = self.columnar(names, schema)
            if plan is not None:
                return ColumnarEvaluator(self, plan, names)
            columns = names
        return MatchRecognizeEvaluator(self, columns=columns)

    def restore(self, data: bytes) -> Evaluator:
        """Continue an evaluation of this query saved by an evaluator's ``snapshot()`` (on
        the engine that took it)."""
        state = load(self.text, data)
        if isinstance(state, dict) and state.get("engine") == "columnar":
            return ColumnarEvaluator.from_state(self, state)
        return MatchRecognizeEvaluator.from_state(self, state)


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


def _sort_order(table: pa.Table, setup: Setup) -> pa.Array | None:
    """The row order :meth:`MatchRecognizeQuery.run` gives ``table``: partitions by their first
    row, each sorted stably by ORDER BY (None when Arrow cannot sort as
    :func:`ceql.mr.partitions.sort` does: NaN, or NULLs placed differently by different keys
    on a pyarrow without per-key placement)."""
    keys = []
    placements = set()
    for column, key in zip(setup.order_columns, setup.order_keys, strict=True):
        col = table.column(column)
        nulls_first = key.nulls_first if key.nulls_first is not None else not key.descending
        if col.null_count:
            placements.add(nulls_first)
        if pa.types.is_floating(col.type) and pc.any(pc.is_nan(col)).as_py():
            return None
        keys.append((column, "descending" if key.descending else "ascending",
                     "at_start" if nulls_first else "at_end"))
    rank = _partition_rank(table, setup.partition_columns)
    ranked = table.select(list(setup.order_columns)).append_column(
        "__ceql_rank", pa.array(rank))
    try:  # pyarrow >= 25: each key its own NULL placement
        return pc.sort_indices(ranked, sort_keys=[("__ceql_rank", "ascending", "at_end"),
                                                  *keys])
    except (TypeError, ValueError, pa.ArrowInvalid):
        if len(placements) > 1:
            return None
        return pc.sort_indices(ranked, sort_keys=[("__ceql_rank", "ascending"),
                                                  *(k[:2] for k in keys)],
                               null_placement="at_start" if placements == {True} else "at_end")


def _partition_rank(table: pa.Table, columns: Sequence[str]) -> np.ndarray:
    """Each row's partition, numbered by first row (PARTITION BY's grouping)."""
    if not columns:
        return np.zeros(table.num_rows, dtype=np.int64)
    return partition_groups(table, columns)[0]
