"""The Python table function behind MATCH_SPASEQ (Arrow eval type, with an ``analyze`` step):
a SPAseq query (docs/SPASEQ.md) over a table whose rows are events — a stream, a time and an
RDF graph each —, one output row per match.

``analyze`` (:mod:`._spaseq_plan`) compiles the query on the driver and asks Spark for the
partitioning and for the order (time, then stream); each task gets its partitions' rows as
Arrow batches, one partition after another, and runs a :class:`ceql.spaseq.Evaluator` per
partition. The JVM shim references :class:`MatchSpaseq` by name (its entry in
``ceql.constants.TABLE_FUNCTIONS``).
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from itertools import pairwise
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.errors import PySparkValueError
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import StructType
from pyspark.sql.udtf import AnalyzeArgument, AnalyzeResult, OrderingColumn, PartitioningColumn

import ceql
import ceql.spaseq
from ceql.constants import (
    CALL_ARGUMENT,
    COLUMN_MATCH_END,
    COLUMN_MATCH_ID,
    COLUMN_MATCH_START,
    CONF_OUTPUT_MAX_BATCH_BYTES,
    MATCH_SPASEQ,
    OPTION_QUERY,
)
from ceql.runtime import canonical_key

from ._batching import BatchLimits, shown_bytes, shown_query
from ._errors import MatchCeqlError
from ._ids import ordinal_match_id
from ._runner import partition_starts
from ._spaseq_plan import COLUMN_POSITIONS, SpaseqSpec, compiled, plan_spaseq, spaseq_schema
from ._spec import CallInfo

__all__ = ["MatchSpaseq", "SpaseqAnalysis", "SpaseqRunner", "analyze_call"]

_USAGE = "MATCH_SPASEQ(TABLE(t) PARTITION BY k ORDER BY (time), query => '<SPAseq>')"


@dataclass
class SpaseqAnalysis(AnalyzeResult):
    """``analyze``'s result, handed to every task: the plan of the call and its schema."""

    spec: SpaseqSpec | None = None
    out: StructType | None = None


def analyze_call(args: tuple[AnalyzeArgument, ...], kwargs: Mapping[str, AnalyzeArgument]
                 ) -> tuple[SpaseqSpec, StructType]:
    """The plan and output schema of one call (what ``analyze`` decides)."""
    tables = [a for a in (*args, *kwargs.values()) if a.isTable]
    if len(tables) != 1:
        raise MatchCeqlError(f"{MATCH_SPASEQ} takes exactly one table argument, got "
                             f"{len(tables)}: {_USAGE}.")
    scalars = [a for a in args if not a.isTable]
    if len(scalars) > 1:
        raise MatchCeqlError(
            f"{MATCH_SPASEQ} takes the query and then named options (time => 'time', …), got "
            f"{len(scalars)} unnamed values: {_USAGE}.")
    named = {k: v for k, v in kwargs.items() if not v.isTable}
    if scalars:
        named = {OPTION_QUERY: scalars[0], **named}
    options: dict[str, Any] = {}
    for k, v in named.items():
        if not v.isConstantExpression:
            raise MatchCeqlError(f"{MATCH_SPASEQ}: option {k} must be a constant string, not "
                                 "an expression over the rows.")
        options[k] = v.value
    call = CallInfo.from_json(options.get(CALL_ARGUMENT))
    schema = tables[0].dataType
    assert isinstance(schema, StructType)
    spec = plan_spaseq(schema, options, call)
    return spec, spaseq_schema(spec, schema)


def _reported(e: ceql.CeqlError) -> MatchCeqlError:
    """The error a task reports: ceql's message without a Python traceback (see
    ``ceql.spark._udtf``: the worker exits after reporting, so the setting ends with it)."""
    os.environ["SPARK_HIDE_TRACEBACK"] = "1"
    message = str(e)
    return e if isinstance(e, MatchCeqlError) else MatchCeqlError(
        message if message.startswith(MATCH_SPASEQ) else f"{MATCH_SPASEQ}: {message}")


class MatchSpaseq:
    """MATCH_SPASEQ: the matches of a SPAseq query over a table of events, one Spark partition
    at a time."""

    @staticmethod
    def analyze(*args: AnalyzeArgument, **kwargs: AnalyzeArgument) -> AnalyzeResult:
        """Compile the query, derive the output schema, request partitioning and ordering."""
        try:
            spec, out = analyze_call(args, kwargs)
        except MatchCeqlError as e:
            raise PySparkValueError(str(e)) from None
        except ceql.CeqlError as e:
            raise PySparkValueError(f"{MATCH_SPASEQ}: {e}") from None
        return SpaseqAnalysis(
            schema=out,
            withSinglePartition=not spec.partition,
            partitionBy=[PartitioningColumn(c) for c in spec.request_partition_by],
            orderBy=[OrderingColumn(c) for c in spec.request_order_by],
            spec=spec, out=out)

    def __init__(self, analysis: SpaseqAnalysis) -> None:
        assert analysis.spec is not None and analysis.out is not None
        self._spec = analysis.spec
        self._out = analysis.out
        self._runner: SpaseqRunner | None = None
        self._key: tuple[Any, ...] | None = None
        self._limits: BatchLimits | None = None  # read in the task (a bad value: its error)

    def eval(self, *args: Any, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        """Feed one Arrow batch (it may hold several partitions, one after another); yield
        the rows of the matches it completes."""
        try:
            yield from self._eval(args, kwargs)
        except ceql.CeqlError as e:
            raise _reported(e) from None

    def _eval(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[pa.RecordBatch]:
        if self._limits is None:
            self._limits = BatchLimits.of_task()
        for a in (*args, *kwargs.values()):
            if isinstance(a, pa.RecordBatch):
                for key, part in self._segments(a):
                    if self._runner is None or key != self._key:
                        if self._runner is not None:
                            yield from self._runner.close(self._limits)
                        self._runner = SpaseqRunner(self._spec, self._out, key)
                        self._key = key
                    yield from self._runner.feed(part, self._limits)
                return
        raise MatchCeqlError(f"{MATCH_SPASEQ} received no table rows as an Arrow batch; it must "
                             "run with Spark's Arrow UDTF eval type and one TABLE argument.")

    def _segments(self, rb: pa.RecordBatch) -> Iterator[tuple[tuple[Any, ...], pa.RecordBatch]]:
        cols = self._spec.partition
        if not cols or rb.num_rows == 0:
            yield (), rb
            return
        valid = None
        for c in cols:
            v = pc.is_valid(rb.column(c))
            valid = v if valid is None else pc.and_(valid, v)
        if pc.all(valid).as_py() is False:
            rb = rb.filter(valid)  # a NULL key belongs to no partition, as in MATCH_CEQL
            if rb.num_rows == 0:
                return
        starts = [0, *partition_starts([rb.column(c) for c in cols]), rb.num_rows]
        for s, e in pairwise(starts):
            key = tuple(rb.column(c)[s].as_py() for c in cols)
            yield canonical_key(key) or key, rb.slice(s, e - s)  # NaN equals NaN

    def terminate(self) -> Iterator[pa.RecordBatch]:
        """The input ended: the matches of the last instant."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        try:
            yield from runner.close(self._limits or BatchLimits.of_task())
        except ceql.CeqlError as e:
            raise _reported(e) from None


_EVENTS = re.compile(r"(events? )(\d+)(?:( and )(\d+))?")


class SpaseqRunner:
    """One partition's evaluation: rows in, output batches out. ``positions`` count the
    partition's rows in the order read (time, then stream)."""

    def __init__(self, spec: SpaseqSpec, out: StructType, key: tuple[Any, ...]) -> None:
        self._spec = spec
        self._out = out
        self._key = key
        self._ev = compiled(spec.query, spec.dataset).evaluator()
        self._fed = 0
        self._ordinal = 0
        # (position, stream, time) of the rows of the newest time: the instant still open
        self._open: list[tuple[int, Any, Any]] = []
        self._current: list[tuple[int, Any, Any]] = []
        self._where = (f" in partition {dict(zip(spec.partition, key, strict=True))!r}"
                       if spec.partition else "")
        self._arrow = {f.name: to_arrow_type(f.dataType, timezone="UTC") for f in out.fields}

    def feed(self, rb: pa.RecordBatch, limits: BatchLimits) -> Iterator[pa.RecordBatch]:
        """Evaluate the partition's next rows; the output rows of the matches they complete,
        in batches within ``limits``."""
        spec = self._spec
        n = rb.num_rows
        if n == 0:
            return
        streams = rb.column(spec.stream).to_pylist()
        times = rb.column(spec.time).to_pylist()
        graphs = rb.column(spec.graph).to_pylist()
        base = self._fed
        self._current = [(base + i, streams[i], times[i]) for i in range(n)]
        events = [{"stream": s, "time": t, "graph": g}
                  for s, t, g in zip(streams, times, graphs, strict=True)]
        try:
            matches = self._ev.feed(events, positions=range(base, base + n))
        except ceql.CeqlError as e:
            raise MatchCeqlError(self._message(e)) from None
        self._fed += n
        last = times[-1]
        tail = [r for r in self._current if r[2] == last]
        if len(tail) == n and self._open and self._open[-1][2] == last:
            self._open.extend(tail)
        else:
            self._open = tail
        self._current = []
        yield from self._batches(matches, limits)

    def close(self, limits: BatchLimits) -> Iterator[pa.RecordBatch]:
        """The partition's rows ended: the matches of its last instant, in batches within
        ``limits``."""
        try:
            matches = self._ev.close()
        except ceql.CeqlError as e:
            raise MatchCeqlError(self._message(e)) from None
        yield from self._batches(matches, limits)

    def _message(self, e: ceql.CeqlError) -> str:
        """The engine's message with the events it starts with shown by their stream and time
        (the engine counts events from 0 in the partition's order)."""
        rows = {p: (s, t) for p, s, t in (*self._open, *self._current)}

        def shown(p: str) -> str:
            if int(p) not in rows:
                return p
            s, t = rows[int(p)]
            return f"{p} (stream {s!r}, time {t!r})"

        text = str(e)
        m = _EVENTS.match(text)
        if m is not None:
            text = (m.group(1) + shown(m.group(2))
                    + (m.group(3) + shown(m.group(4)) if m.group(3) else "") + text[m.end():])
        return f"{MATCH_SPASEQ}{self._where}: {text}"

    def _batches(self, matches: list[ceql.spaseq.Match], limits: BatchLimits
                 ) -> Iterator[pa.RecordBatch]:
        """The output rows of ``matches``, converted one match at a time and sent as a batch
        before it would pass ``limits`` (its size counted from the values themselves)."""
        spec = self._spec
        names = [f.name for f in self._out.fields]
        cols: dict[str, list[Any]] = {name: [] for name in names}
        held = 0
        for m in matches:
            row: dict[str, Any] = {
                COLUMN_MATCH_ID: ordinal_match_id(self._key, self._ordinal),
                COLUMN_MATCH_START: m.start_time,
                COLUMN_MATCH_END: m.end_time,
                COLUMN_POSITIONS: list(m.positions),
            }
            self._ordinal += 1
            for c, k in zip(spec.partition, self._key, strict=True):
                row[c] = k
            for v in spec.variables:
                kind = spec.type_of(v)
                if v in spec.lists:
                    row[v] = [self._value(v, kind, x) for x in m.bindings[v]]
                else:
                    row[v] = self._value(v, kind, m.bindings[v])
            size = sum(_value_bytes(x) for x in row.values())
            if size > limits.bytes:
                raise MatchCeqlError(
                    f"{MATCH_SPASEQ}: a match of the query {shown_query(spec.query)!r}"
                    f"{self._where} (from {m.start_time!r} to "
                    f"{m.end_time!r}, {len(m.positions)} events) needs about "
                    f"{shown_bytes(size)} as one output row, more than an output batch may "
                    f"hold ({CONF_OUTPUT_MAX_BATCH_BYTES} = {shown_bytes(limits.bytes)}). "
                    f"Raise {CONF_OUTPUT_MAX_BATCH_BYTES} (e.g. SET "
                    f"{CONF_OUTPUT_MAX_BATCH_BYTES}=1g) if the executors have that memory to "
                    "spare, or make the matches smaller (a shorter WITHIN, fewer variables).")
            if cols[COLUMN_MATCH_ID] and (held + size > limits.bytes
                                          or len(cols[COLUMN_MATCH_ID]) >= limits.rows):
                yield self._batch(cols)
                cols = {name: [] for name in names}
                held = 0
            for name in names:
                cols[name].append(row[name])
            held += size
        if cols[COLUMN_MATCH_ID]:
            yield self._batch(cols)

    def _batch(self, cols: dict[str, list[Any]]) -> pa.RecordBatch:
        fields = self._out.fields
        arrays = [pa.array(cols[f.name], self._arrow[f.name]) for f in fields]
        return pa.RecordBatch.from_arrays(arrays, names=[f.name for f in fields])

    def _value(self, variable: str, kind: str, value: Any) -> Any:
        if value is None:
            return None
        if kind == "string":
            return value_text(value)
        ok = converted(kind, value)
        if ok is _BAD:
            raise MatchCeqlError(
                f"{MATCH_SPASEQ}{self._where}: types says ?{variable} is {kind}, but a match "
                f"binds it to {value_text(value)!r} ({type(value).__name__}); declare it string "
                "(or leave it out of types, which gives its text).")
        return ok


_BAD = object()


def _value_bytes(value: Any) -> int:
    """About the bytes ``value`` takes in an Arrow column."""
    if isinstance(value, str | bytes):
        return len(value) + 4
    if isinstance(value, list):
        return 4 + sum(_value_bytes(x) for x in value)
    return 8


def value_text(value: Any) -> str:
    """A binding as text: an IRI as itself, a blank node as ``_:id``, a literal's value as
    text (numbers as written by Python, booleans ``true``/``false``, datetimes ISO 8601)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    return str(value)


def converted(kind: str, value: Any) -> Any:
    """``value`` as a value of the declared Spark type ``kind``, or ``_BAD``."""
    if kind in ("bigint", "long", "int", "integer"):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, Decimal) and value == value.to_integral_value():
            return int(value)
    elif kind in ("double", "float"):
        if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
            return float(value)
    elif kind == "boolean":
        if isinstance(value, bool):
            return value
    elif kind in ("timestamp", "timestamp_ntz"):
        if isinstance(value, dt.datetime):
            return value
    elif kind == "date":
        if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            return value
    return _BAD
