"""The columnar engine: the incremental evaluator of a MATCH_RECOGNIZE query whose pattern has
one labelling (``A B``, ``A B C``, ``A (B C){2}``), ONE ROW PER MATCH, and DEFINE and MEASURES
in :mod:`ceql.mr.vectors`' subset, over Arrow input (docs/match_recognize.md, "Engines").

It decides what the fixed-length engine (:mod:`ceql.mr.fixed`) decides — each start alone,
each position's DEFINE, WITHIN on the first and last rows, then the skip — but for every start
of a batch at once: the batch and the rows each partition keeps are grouped by partition in one
stable sort, each DEFINE is Arrow compute over the grouped columns shifted by its offsets, and
only the starts that match are visited in Python (to apply the skip). Output rows are Arrow
columns taken at the matches' rows. Its state is columnar too: the rows each partition keeps
(the last row, and from the first undecided start less what PREV reaches back), and per
partition its values and four counts; a snapshot holds them as Arrow IPC.

Its interface is :class:`~ceql.mr.evaluator.MatchRecognizeEvaluator`'s (feed, advance,
waiting_until, close, snapshot, live), plus :meth:`ColumnarEvaluator.feed_table` and
:meth:`ColumnarEvaluator.close_table` giving the output as an Arrow table. Which evaluator runs
a query is chosen in one place, :meth:`ceql.mr.MatchRecognizeQuery.evaluator`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CeqlError, CeqlInputError, CeqlTypeError
from ..frontends.mr import ast as A
from .arrow_rows import arrow_rows
from .evaluator import CompiledQuery, MrLive, extra_columns, moves_time_on
from .expressions import Compiler
from .partitions import partition_key
from .setup import Setup
from .snapshot import dump
from .values import arith, compare
from .vectors import Frame, NotColumnar, Vec, kind_of, lower

__all__ = ["ColumnarEvaluator", "ColumnarPlan", "PlannedQuery", "columnar_plan",
           "partition_groups"]

_PART = "__ceql_part"  # the kept rows' partition ordinal


class PlannedQuery(CompiledQuery, Protocol):
    """What the columnar evaluator needs of a compiled query
    (:class:`ceql.mr.MatchRecognizeQuery`)."""

    def columnar(self, columns: tuple[str, ...], schema: pa.Schema) -> ColumnarPlan | None:
        """The query lowered for input ``columns`` of ``schema`` (None: the columnar engine
        cannot run it)."""
        ...
_UNITS = {"s": 1_000_000, "ms": 1_000, "us": 1}  # microseconds per unit


@dataclass(frozen=True)
class ColumnarPlan:
    """A query lowered for the columnar engine against one input schema."""

    setup: Setup
    length: int
    #: each DEFINE, lowered at its position
    conditions: tuple[Vec, ...]
    #: each measure lowered (None: MATCH_NUMBER())
    measures: tuple[tuple[str, Vec | None], ...]
    #: the next start after a match from ``s`` is ``s + step``
    step: int
    #: the input columns the engine reads (and keeps), with their types
    schema: pa.Schema
    #: WITHIN in the time column's unit (None: no WITHIN)
    within_units: int | None


def _columns_read(body: A.MatchRecognize) -> list[str]:
    out: list[str] = []
    for e in (*(d.condition for d in body.defines), *(m.expr for m in body.measures)):
        out += [n.name for n in A.walk(e) if isinstance(n, A.Column)]
    return out


def columnar_plan(setup: Setup, body: A.MatchRecognize, schema: pa.Schema,
                  columns: Sequence[str]) -> ColumnarPlan | None:
    """The query (``setup``, compiled for input ``columns``; ``body``) lowered for input of
    ``schema``, or None when the columnar engine cannot run it (the row engines do)."""
    labels = setup.fixed
    if labels is None or not setup.one_row:
        return None
    n = len(labels)
    kind = setup.skip.kind
    if kind == "PAST LAST ROW":
        step = n
    elif kind == "TO NEXT ROW":
        step = 1
    else:
        members = set(setup.subsets.get(setup.skip.var or "", (setup.skip.var,)))
        at = [j for j, v in enumerate(labels) if v in members]
        if not at:
            return None  # the standard's error: the row engines raise it on the first match
        step = at[0] if kind == "TO FIRST" else at[-1]
        if step == 0:
            return None
    types = {f.name: f.type for f in schema}
    resolve = Compiler(tuple(columns), setup.subsets).column
    try:
        read = list(dict.fromkeys([*setup.partition_columns, *setup.order_columns,
                                   *(resolve(c) for c in _columns_read(body))]))
        for c in read:
            if c not in types:
                return None
            kind_of(types[c])
        if any(kind_of(types[c]) in ("bool", "null") for c in setup.partition_columns):
            return None
        conditions = []
        for k, v in enumerate(labels):
            define = next((d for d in body.defines if d.var == v), None)
            if define is None:
                continue
            vec = lower(define.condition, labels[:k + 1], k, v, types, resolve,
                        setup.subsets)
            if vec.kind not in ("bool", "null"):
                return None
            conditions.append(vec)
        measures: list[tuple[str, Vec | None]] = []
        for m in body.measures:
            if isinstance(m.expr, A.MatchNumber):
                measures.append((m.name, None))
            else:
                measures.append((m.name, lower(m.expr, labels, n - 1, None, types, resolve,
                                               setup.subsets)))
    except NotColumnar:
        return None
    within_units = None
    if setup.within is not None:
        t = types.get(setup.time_column or "")
        if t is None or not pa.types.is_timestamp(t) or t.unit not in _UNITS \
                or not isinstance(setup.within, dt.timedelta):
            return None
        per = _UNITS[t.unit]
        within_us = setup.within // dt.timedelta(microseconds=1)
        within_units = within_us // per  # a span of whole units at most the interval
    fields = [pa.field(c, types[c]) for c in read]
    return ColumnarPlan(setup, n, tuple(conditions), tuple(measures), step,
                        pa.schema(fields), within_units)


def partition_groups(table: pa.Table, columns: Sequence[str]
                     ) -> tuple[np.ndarray, list[tuple[object, ...]]]:
    """Each row's partition by ``columns`` (PARTITION BY's grouping,
    :func:`~ceql.mr.partitions.partition_key`), numbered by first row, and each partition's
    values."""
    codes: np.ndarray | None = None
    indices = []
    dictionaries = []
    for c in columns:
        enc = pc.dictionary_encode(table.column(c), null_encoding="encode").combine_chunks()
        idx = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        indices.append(idx)
        dictionaries.append(enc.dictionary.to_pylist())
        codes = idx if codes is None else codes * len(enc.dictionary) + idx
    assert codes is not None
    uniq, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    mapping = np.empty(len(uniq), dtype=np.int64)
    keys: dict[tuple[object, ...], int] = {}
    values: list[tuple[object, ...]] = []
    for u in np.argsort(first, kind="stable").tolist():
        row = int(first[u])
        vals = tuple(d[int(ix[row])] for d, ix in zip(dictionaries, indices, strict=True))
        g = keys.setdefault(partition_key(vals), len(values))  # NaNs Arrow keeps apart: one
        if g == len(values):
            values.append(vals)
        mapping[u] = g
    return mapping[inverse.reshape(-1)], values


def _true(v: Any, n: int) -> np.ndarray:
    """A condition's values as a numpy mask (NULL is not true)."""
    if isinstance(v, pa.Scalar):
        return np.full(n, v.as_py() is True)
    return np.asarray(pc.fill_null(v, False).to_numpy(zero_copy_only=False), dtype=bool)


def _full(v: Any, n: int) -> pa.Array:
    """``v`` as an array of ``n`` values (a scalar repeated)."""
    if isinstance(v, pa.Scalar):
        return pa.repeat(v, n)
    if isinstance(v, pa.ChunkedArray):
        return v.combine_chunks()
    return v


class _Part:
    """One partition's state: PARTITION BY values, the first row kept, the rows so far, the
    first start not decided, the matches numbered."""

    __slots__ = ("first", "n", "number", "pos", "values")

    def __init__(self, values: tuple[object, ...], first: int = 0, n: int = 0, pos: int = 0,
                 number: int = 0) -> None:
        self.values = values
        self.first = first
        self.n = n
        self.pos = pos
        self.number = number


class ColumnarEvaluator:
    """The columnar engine's incremental evaluation of one query (see the module docstring);
    ``plan`` is the query lowered for the input's schema, ``columns`` the input's columns."""

    def __init__(self, query: PlannedQuery, plan: ColumnarPlan,
                 columns: Sequence[str]) -> None:
        self._query = query
        self._plan = plan
        self._setup = plan.setup
        self._columns = tuple(columns)
        self._colset = frozenset(self._columns)
        self._seen = 0
        self._closed = False
        self._watermark: object = None
        self._parts: list[_Part] = []
        self._keys: dict[tuple[object, ...], int] = {}
        self._kept = plan.schema.empty_table().append_column(
            _PART, pa.array([], pa.int64()))

    # ------------------------------------------------------------------ facts
    @property
    def query(self) -> PlannedQuery:
        """The query evaluated."""
        return self._query

    @property
    def columns(self) -> tuple[str, ...]:
        """The input's columns."""
        return self._columns

    @property
    def rows_seen(self) -> int:
        """How many rows have been fed so far."""
        return self._seen

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def held_rows(self) -> int:
        """How many rows the evaluator keeps now (over all partitions)."""
        return int(self._kept.num_rows)

    def live(self) -> MrLive:
        """How much state the evaluator keeps now (counts, for monitoring and tests)."""
        return MrLive(len(self._parts), self._kept.num_rows,
                      sum(max(0, p.n - p.pos) for p in self._parts))

    # ------------------------------------------------------------------ feeding
    def feed(self, rows: Iterable[Mapping[str, object]] | Any) -> list[dict[str, object]]:
        """:meth:`feed_table`'s output rows as mappings (as the row evaluator gives them)."""
        return arrow_rows(self.feed_table(rows))

    def feed_table(self, rows: Any) -> pa.Table:
        """Take the next rows (a pyarrow Table or RecordBatch of the plan's columns, or
        mappings), each partition's in ORDER BY order; return the output rows they make
        final. A row that sorts before the previous row of its partition, or before the
        watermark, is refused (:class:`~ceql.errors.CeqlInputError`) and the batch is not
        taken."""
        if self._closed:
            raise CeqlInputError("feed() after close(): the input ended; create a new "
                                 "evaluator (MatchRecognizeQuery.evaluator) for more rows")
        table = self._table(rows)
        if table.num_rows == 0:
            return pa.table({})
        ords, touched = self._ordinals(table)
        batch = table.append_column(_PART, pa.array(ords))
        return self._match(batch, touched, final=False)

    def run_table(self, rows: Any) -> pa.Table:
        """The whole input at once (a new evaluator's first and last call): :meth:`feed_table`
        and :meth:`close_table` in one pass, each partition's output rows together, partitions
        in the order of their first row."""
        if self._seen or self._closed:
            raise CeqlInputError("run_table() takes the whole input: call it on a new "
                                 "evaluator")
        table = self._table(rows)
        self._closed = True
        if table.num_rows == 0:
            return pa.table({})
        ords, touched = self._ordinals(table)
        return self._match(table.append_column(_PART, pa.array(ords)), touched, final=True)

    def feed_output(self, rows: Any) -> pa.Table:
        """:meth:`feed_table` (the output in this engine's own form)."""
        return self.feed_table(rows)

    def close_output(self) -> pa.Table:
        """:meth:`close_table` (the output in this engine's own form)."""
        return self.close_table()

    def _table(self, rows: Any) -> pa.Table:
        schema = self._plan.schema
        if isinstance(rows, pa.RecordBatch):
            rows = pa.Table.from_batches([rows])
        elif not isinstance(rows, pa.Table):
            listed = list(rows)
            for i, row in enumerate(listed):
                if not isinstance(row, Mapping):
                    raise CeqlTypeError(f"Row {self._seen + i} of the input is a "
                                        f"{type(row).__name__}, not a mapping of column to "
                                        "value")
                if not self._colset.issuperset(row):
                    raise self._extra_columns(row)
            if not len(schema):
                return pa.table({"_": pa.nulls(len(listed))}).drop_columns(["_"])
            try:
                return pa.Table.from_pylist(listed, schema)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError,
                    OverflowError) as exc:
                raise CeqlTypeError(f"The rows do not fit the columns this evaluator was "
                                    f"made for ({schema}): {exc}") from None
        if not self._colset.issuperset(rows.schema.names):
            raise self._extra_columns(rows.schema.names)
        arrays = []
        for f in schema:
            if f.name not in rows.schema.names:
                arrays.append(pa.nulls(rows.num_rows, f.type))
                continue
            col = rows.column(f.name)
            if col.type != f.type:
                try:
                    col = col.cast(f.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    raise CeqlInputError(f"Column {f.name} is {col.type} in this batch, "
                                         f"{f.type} before ({exc})") from None
            arrays.append(col)
        if not arrays:  # no column read: the rows are still there
            return pa.table({"_": pa.nulls(rows.num_rows)}).drop_columns(["_"])
        return pa.Table.from_arrays(arrays, schema=schema).combine_chunks()

    def _extra_columns(self, names: Iterable[object]) -> CeqlInputError:
        return extra_columns(self._seen, names, self._columns)

    def _ordinals(self, table: pa.Table) -> tuple[np.ndarray, list[int]]:
        """Each row's partition ordinal (new partitions made, in the order of their first
        row), and the partitions touched in that order."""
        pcols = self._setup.partition_columns
        if not pcols:
            if not self._parts:
                self._parts.append(_Part(()))
                self._keys[()] = 0
            return np.zeros(table.num_rows, dtype=np.int64), [0]
        groups, values = partition_groups(table, pcols)
        mapping = np.empty(len(values), dtype=np.int64)
        for g, vals in enumerate(values):
            key = partition_key(vals)
            ordinal = self._keys.get(key)
            if ordinal is None:
                ordinal = self._keys[key] = len(self._parts)
                self._parts.append(_Part(vals))
            mapping[g] = ordinal
        return mapping[groups], mapping.tolist()

    # ------------------------------------------------------------------ matching
    def _grouped(self, batch: pa.Table | None, touched: list[int]
                 ) -> tuple[pa.Table, np.ndarray, np.ndarray, np.ndarray]:
        """The kept rows of ``touched`` partitions and ``batch``, grouped by partition in
        ``touched`` order (kept rows first); the combined order, each grouped row's rank, and
        which kept rows were taken (of ``touched`` partitions)."""
        kept = self._kept
        rank = np.full(len(self._parts), -1, dtype=np.int64)
        rank[touched] = np.arange(len(touched))
        kp = kept.column(_PART).to_numpy()
        mine = rank[kp] >= 0 if len(kp) else np.zeros(0, dtype=bool)
        kept_sel = kept.filter(pa.array(mine)) if not mine.all() else kept
        combined = kept_sel if batch is None else pa.concat_tables([kept_sel, batch])
        keys = rank[combined.column(_PART).to_numpy()]
        order = np.argsort(keys, kind="stable")
        grouped = combined.take(pa.array(order)).combine_chunks()
        return grouped, order, keys[order], mine

    def _match(self, batch: pa.Table | None, touched: list[int], *, final: bool) -> pa.Table:
        plan = self._plan
        setup = self._setup
        grouped, order, ranks, taken = self._grouped(batch, touched)
        n_kept = int(taken.sum())
        m = grouped.num_rows
        if m == 0:
            return pa.table({})
        starts = np.flatnonzero(np.r_[True, ranks[1:] != ranks[:-1]])
        ends = np.r_[starts[1:], m]
        sizes = ends - starts
        if batch is not None and setup.order_columns:
            self._check_order(grouped, order, starts, n_kept)
        # the rows each partition gains; the starts decided now
        parts = [self._parts[touched[int(r)]] for r in ranks[starts]]
        if batch is not None:
            for part, size in zip(parts, sizes.tolist(), strict=True):
                part.n = part.first + size
        reach = 0 if final else setup.ahead
        decide = np.zeros(m, dtype=bool)
        lasts = []
        for part, lo in zip(parts, starts.tolist(), strict=True):
            last = part.n - reach - plan.length
            lasts.append(last)
            if last >= part.pos:
                decide[lo + part.pos - part.first:lo + last - part.first + 1] = True
        base = np.flatnonzero(decide)
        lo_row = np.repeat(starts, sizes)
        hi_row = np.repeat(ends, sizes)
        columns = {c: grouped.column(c).combine_chunks() for c in plan.schema.names}
        matches = np.zeros(0, dtype=np.int64)
        if len(base):
            frame = Frame(columns, base, lo_row[base], hi_row[base])
            ok = np.ones(len(base), dtype=bool)
            for cond in plan.conditions:
                ok &= _true(cond.run(frame), len(base))
                if not ok.any():
                    break
            if plan.within_units is not None and ok.any():
                ok &= self._within(frame)
            matches = self._skip(base[ok], starts, ends)
        group = np.repeat(np.arange(len(starts)), sizes)
        mg = group[matches]
        first_in_group = np.searchsorted(mg, mg, side="left")
        numbers = np.fromiter((p.number for p in parts), dtype=np.int64, count=len(parts))
        match_numbers = numbers[mg] + (np.arange(len(matches)) - first_in_group) + 1
        # each partition's next start, its count, the rows it keeps
        last_match = np.full(len(parts), -1, dtype=np.int64)
        if len(matches):
            ends_of_runs = np.r_[mg[1:] != mg[:-1], True]  # each group's last match
            last_match[mg[ends_of_runs]] = matches[ends_of_runs]
            np.add.at(numbers, mg, 1)
        keep = np.zeros(m, dtype=bool)
        back = setup.back
        for g, part in enumerate(parts):
            lo = int(starts[g])
            if lasts[g] >= part.pos:
                pos = lasts[g] + 1
                if last_match[g] >= 0:
                    pos = max(pos, part.first + int(last_match[g]) - lo + plan.step)
                part.pos = max(part.pos, min(pos, part.n) if final else pos)
            part.number = int(numbers[g])
            keep_from = max(part.first, min(part.pos - back, part.n - 1))
            keep[lo + keep_from - part.first:int(ends[g])] = True
            part.first = keep_from
        others = self._kept.filter(pa.array(~taken)) if taken.any() else self._kept
        self._kept = pa.concat_tables([others, grouped.filter(pa.array(keep))]).combine_chunks()
        if batch is not None:
            self._seen += batch.num_rows
        return self._output(grouped, matches, lo_row, hi_row, match_numbers)

    def _within(self, frame: Frame) -> np.ndarray:
        plan = self._plan
        column = self._setup.time_column
        assert column is not None and plan.within_units is not None
        t0 = frame.at(column, 0).cast(pa.int64())
        t1 = frame.at(column, plan.length - 1).cast(pa.int64())
        span = pc.subtract(t1, t0)
        return _true(pc.less_equal(span, plan.within_units), frame.size)

    def _skip(self, candidates: np.ndarray, starts: np.ndarray, ends: np.ndarray
              ) -> np.ndarray:
        """The matches among ``candidates`` (ascending rows of the grouped table): each
        partition's first, then the first at or after the skip's next start."""
        step = self._plan.step
        if step == 1 or len(candidates) == 0:
            return candidates
        group = np.searchsorted(starts, candidates, side="right") - 1
        out = []
        nxt = -1
        cur = -1
        for i, g in zip(candidates.tolist(), group.tolist(), strict=True):
            if g != cur:
                cur = g
                nxt = -1
            if i >= nxt:
                out.append(i)
                nxt = i + step
        return np.asarray(out, dtype=np.int64)

    def _output(self, grouped: pa.Table, matches: np.ndarray, lo_row: np.ndarray,
                hi_row: np.ndarray, numbers: np.ndarray) -> pa.Table:
        if not len(matches):
            return pa.table({})
        setup = self._setup
        out: dict[str, pa.Array] = {}
        idx = pa.array(matches)
        for name, column in zip(setup.partition_by, setup.partition_columns, strict=True):
            out[name] = grouped.column(column).take(idx)
        frame = Frame({c: grouped.column(c).combine_chunks() for c in self._plan.schema.names},
                      matches,
                      lo_row[matches], hi_row[matches])
        for name, vec in self._plan.measures:
            if vec is None:
                out[name] = pa.array(numbers, pa.int64())
            else:
                out[name] = _full(vec.run(frame), len(matches))
        if not out:  # rows without columns (no PARTITION BY, no MEASURES)
            return pa.table({"_": pa.nulls(len(matches))}).drop_columns(["_"])
        return pa.table(out)

    def _check_order(self, grouped: pa.Table, order: np.ndarray, starts: np.ndarray,
                     n_kept: int) -> None:
        """Refuse a batch row that sorts before the previous row of its partition, or before
        the watermark: the first such row of the batch, with the row evaluator's message."""
        setup = self._setup
        m = grouped.num_rows
        new = order >= n_kept  # grouped rows that come from the batch
        pair = new[1:].copy()
        pair[starts[1:] - 1] = False  # the first row of a group follows another partition
        bad = np.zeros(m, dtype=bool)
        if m > 1 and pair.any():
            before = [grouped.column(c).slice(0, m - 1) for c in setup.order_columns]
            after = [grouped.column(c).slice(1) for c in setup.order_columns]
            bad[1:] = pair & _sorts_before(after, before, setup.order_keys)
        late = np.zeros(m, dtype=bool)
        if self._watermark is not None:
            col = grouped.column(setup.order_columns[0])
            try:
                mark = pa.scalar(self._watermark, col.type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
                mark = None
            if mark is not None:
                late = new & _sorts_before([col], [pa.repeat(mark, m)], setup.order_keys[:1])
        if not (bad.any() or late.any()):
            return
        rows = np.flatnonzero(bad | late)
        at = rows[np.argmin(order[rows])]
        row_no = self._seen + int(order[at]) - n_kept
        now = arrow_rows(grouped.slice(int(at), 1))[0]
        shown = ", ".join(f"{c}={now.get(c)!r}" for c in setup.order_columns)
        if bad[at]:
            last = arrow_rows(grouped.slice(int(at) - 1, 1))[0]
            shown_keys = ", ".join(f"{c}{' DESC' if k.descending else ''}"
                                   for c, k in zip(setup.order_columns, setup.order_keys,
                                                   strict=True))
            where = (" of partition " + ", ".join(
                f"{c}={now.get(p)!r}" for c, p in zip(setup.partition_by,
                                                       setup.partition_columns, strict=True))
                if setup.partition_by else "")
            previous = ", ".join(f"{c}={last.get(c)!r}" for c in setup.order_columns)
            raise CeqlInputError(
                f"Row {row_no} of the input ({shown}) sorts before the previous row"
                f"{where} ({previous}) by ORDER BY {shown_keys}: feed each partition's rows in "
                "that order (sort each batch; no later batch may bring an earlier row)")
        first = setup.order_columns[0]
        raise CeqlInputError(
            f"Row {row_no} of the input has {first}={now.get(first)!r}, before "
            f"{self._watermark!r}, which advance() said no row still to come would be: leave "
            "late rows out (a stream counts them)")

    # ------------------------------------------------------------------ progress
    def advance(self, time: object) -> list[dict[str, object]]:
        """As :meth:`ceql.mr.evaluator.MatchRecognizeEvaluator.advance`: no row still to come
        is before ``time``; the starts whose WITHIN window that closes are decided (no match:
        ONE ROW PER MATCH gives no row for them)."""
        if not moves_time_on(self._query.body, self._closed, time, self._watermark):
            return []
        self._watermark = time
        within = self._setup.within
        if within is None:
            return []
        moved = False
        now = self._time_us(time)
        assert isinstance(within, dt.timedelta)  # columnar_plan's condition
        within_us = within // dt.timedelta(microseconds=1)
        for part, times in self._waiting():
            pos = part.pos
            for t0 in times:
                if t0 is not None and (
                        now - t0 <= within_us if now is not None else
                        compare("<=", arith("-", time, self._time_of(t0)), within) is True):
                    break
                pos += 1
            if pos != part.pos:
                part.pos = pos
                moved = True
        if moved:
            self._trim()
        return []

    def _time_us(self, time: object) -> int | None:
        """``time`` in microseconds since the epoch on the time column's scale (None: not a
        time of the column's kind; the Python values then decide)."""
        column = self._setup.time_column
        assert column is not None
        kind = self._plan.schema.field(column).type
        if not isinstance(time, dt.datetime) or (time.tzinfo is None) != (kind.tz is None):
            return None
        return int(pa.scalar(time, pa.timestamp("us", kind.tz)).cast(pa.int64()).as_py())

    def _time_of(self, us: int) -> object:
        """The time column's value (as a row gives it) ``us`` microseconds from the epoch."""
        column = self._setup.time_column
        assert column is not None
        kind = self._plan.schema.field(column).type
        return pa.scalar(us // _UNITS[kind.unit], pa.int64()).cast(kind).as_py()

    def _waiting(self) -> list[tuple[_Part, list[int | None]]]:
        """The partitions whose first undecided start waits for rows still to come, with the
        times of their rows from that start on (microseconds since the epoch)."""
        length = self._plan.length
        waiting = [(p, part) for p, part in enumerate(self._parts)
                   if part.pos < part.n < part.pos + length]
        if not waiting:
            return []
        kp = self._kept.column(_PART).to_numpy()
        _, where = np.unique(kp, return_index=True)
        at = {int(kp[i]): int(i) for i in where}
        column = self._setup.time_column
        assert column is not None
        rows: list[int] = []
        spans = []
        for p, part in waiting:
            start = at[p] + part.pos - part.first
            spans.append((len(rows), part.n - part.pos))
            rows += range(start, start + part.n - part.pos)
        col = self._kept.column(column).take(pa.array(rows, pa.int64()))
        per = _UNITS[self._plan.schema.field(column).type.unit]
        times = [None if t is None else t * per for t in col.cast(pa.int64()).to_pylist()]
        return [(part, times[a:a + k]) for (_, part), (a, k) in zip(waiting, spans, strict=True)]

    def _trim(self) -> None:
        """Drop the kept rows no start still to decide reads."""
        kp = self._kept.column(_PART).to_numpy()
        if not len(kp):
            return
        _, where = np.unique(kp, return_index=True)
        keep = np.ones(len(kp), dtype=bool)
        back = self._setup.back
        for i in where.tolist():
            part = self._parts[int(kp[i])]
            keep_from = max(part.first, min(part.pos - back, part.n - 1))
            keep[i:i + keep_from - part.first] = False
            part.first = keep_from
        if not keep.all():
            self._kept = self._kept.filter(pa.array(keep))

    def waiting_until(self) -> object:
        """The time after which :meth:`advance` decides the earliest waiting start (None:
        no WITHIN, or no start waits)."""
        within = self._setup.within
        if within is None:
            return None
        firsts = [times[0] for _, times in self._waiting() if times[0] is not None]
        return None if not firsts else arith("+", self._time_of(min(firsts)), within)

    def close(self) -> list[dict[str, object]]:
        """The input ended: decide every start left; the rest of the output rows."""
        return arrow_rows(self.close_table())

    def close_table(self) -> pa.Table:
        """:meth:`close`'s rows as an Arrow table."""
        if self._closed:
            return pa.table({})
        self._closed = True
        touched = [p for p, part in enumerate(self._parts) if part.pos < part.n]
        out = self._match(None, touched, final=True) if touched else pa.table({})
        self._parts.clear()
        self._keys.clear()
        self._kept = self._kept.slice(0, 0)
        return out

    # ------------------------------------------------------------------ saving
    def snapshot(self) -> bytes:
        """The evaluation's state as bytes (:mod:`ceql.mr.snapshot`; the kept rows and the
        partitions as Arrow IPC); :meth:`ceql.mr.MatchRecognizeQuery.restore` continues
        it."""
        parts = self._parts
        types = [self._plan.schema.field(c).type for c in self._setup.partition_columns]
        columns = {f"v{i}": pa.array([p.values[i] for p in parts], t)
                   for i, t in enumerate(types)}
        for name in _COUNTS:
            columns[name] = pa.array([getattr(p, name) for p in parts], pa.int64())
        state = {"engine": "columnar", "columns": list(self._columns), "seen": self._seen,
                 "closed": self._closed, "watermark": self._watermark,
                 "kept": _ipc(self._kept), "parts": _ipc(pa.table(columns))}
        return dump(self._query.text, state)

    @classmethod
    def from_state(cls, query: PlannedQuery, state: dict[str, Any]) -> ColumnarEvaluator:
        """The evaluator whose :meth:`snapshot` saved ``state``."""
        try:
            return cls._restored(query, state)
        except CeqlError:
            raise
        except (TypeError, ValueError, KeyError, IndexError, AttributeError,
                pa.ArrowInvalid) as exc:
            raise CeqlInputError(f"The MATCH_RECOGNIZE snapshot is damaged ({exc})") from None

    @classmethod
    def _restored(cls, query: PlannedQuery, state: dict[str, Any]) -> ColumnarEvaluator:
        if set(state) != {"engine", "columns", "seen", "closed", "watermark", "kept",
                          "parts"}:
            raise CeqlInputError("The MATCH_RECOGNIZE snapshot is damaged (its layout)")
        columns, seen, closed = state["columns"], state["seen"], state["closed"]
        if (not isinstance(columns, list) or type(seen) is not int or seen < 0
                or type(closed) is not bool or not isinstance(state["kept"], bytes)
                or not isinstance(state["parts"], bytes)):
            raise CeqlInputError("The MATCH_RECOGNIZE snapshot is damaged (its counts)")
        kept = pa.ipc.open_stream(state["kept"]).read_all()
        if _PART not in kept.schema.names:
            raise CeqlInputError("The MATCH_RECOGNIZE snapshot is damaged (its rows)")
        schema = pa.schema([f for f in kept.schema if f.name != _PART])
        setup = query.setup(tuple(columns))
        plan = query.columnar(tuple(columns), schema)
        if plan is None or plan.schema != schema:
            raise CeqlInputError("The MATCH_RECOGNIZE snapshot is damaged (its rows do not "
                                 "fit the query)")
        ev = cls(query, plan, columns)
        ev._seen = seen
        ev._closed = closed
        ev._watermark = state["watermark"]
        parts = pa.ipc.open_stream(state["parts"]).read_all()
        width = len(setup.partition_columns)
        if parts.schema.names != [*(f"v{i}" for i in range(width)), *_COUNTS]:
            raise CeqlInputError("The MATCH_RECOGNIZE snapshot is damaged (its partitions)")
        got = parts.to_pydict()
        values = list(zip(*(got[f"v{i}"] for i in range(width)), strict=True)) if width \
            else [()] * parts.num_rows
        counts = np.bincount(kept.column(_PART).to_numpy(), minlength=parts.num_rows)
        if len(counts) > parts.num_rows:
            raise CeqlInputError("The MATCH_RECOGNIZE snapshot is damaged (rows of no "
                                 "partition)")
        for p, (vals, first, n, pos, number) in enumerate(zip(
                values, *(got[c] for c in _COUNTS), strict=True)):
            if (any(x is None for x in (first, n, pos, number))
                    or not 0 <= first <= n or pos < 0 or number < 0
                    or n - first != int(counts[p]) or pos > n):
                raise CeqlInputError("The MATCH_RECOGNIZE snapshot is damaged (a partition)")
            key = partition_key(vals)
            if key in ev._keys:
                raise CeqlInputError("The MATCH_RECOGNIZE snapshot is damaged (a partition "
                                     "twice)")
            ev._keys[key] = p
            ev._parts.append(_Part(tuple(vals), first, n, pos, number))
        ev._kept = kept.select([*schema.names, _PART]).combine_chunks()
        return ev


_COUNTS = ("first", "n", "pos", "number")  # a partition's counts, as saved


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def _sorts_before(after: Sequence[Any], before: Sequence[Any], keys: Sequence[A.SortKey]
                  ) -> np.ndarray:
    """Row by row, whether ``after``'s ORDER BY values sort strictly before ``before``'s
    (:func:`ceql.mr.partitions.out_of_order`, over columns)."""
    bad: np.ndarray | None = None
    for a_col, b_col, key in reversed(list(zip(after, before, keys, strict=True))):
        nulls_first = key.nulls_first if key.nulls_first is not None else not key.descending
        an = np.asarray(pc.is_null(a_col).to_numpy(zero_copy_only=False), dtype=bool)
        bn = np.asarray(pc.is_null(b_col).to_numpy(zero_copy_only=False), dtype=bool)
        lt = _true(pc.less(a_col, b_col), len(an))
        gt = _true(pc.greater(a_col, b_col), len(an))
        earlier, later = (gt, lt) if key.descending else (lt, gt)
        one_null = an ^ bn
        k_bad = (~an & ~bn & earlier) | (one_null & (an == nulls_first))
        k_eq = (an & bn) | (~an & ~bn & ~earlier & ~later)
        bad = k_bad if bad is None else k_bad | (k_eq & bad)
    assert bad is not None
    return bad
