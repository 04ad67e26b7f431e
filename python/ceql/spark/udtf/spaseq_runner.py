"""One MATCH_SPASEQ partition's evaluation: rows in (time, then stream), a
:class:`ceql.spaseq.Evaluator` over them, output rows out in bounded batches — the bindings of
each match converted to the Spark types ``types`` declares."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import StructType

import ceql
import ceql.spaseq
from ceql.constants import (
    COLUMN_MATCH_END,
    COLUMN_MATCH_ID,
    COLUMN_MATCH_START,
    CONF_OUTPUT_MAX_BATCH_BYTES,
    MATCH_SPASEQ,
)
from ceql.spark.errors import MatchCeqlError
from ceql.spark.udtf.batching import BatchLimits, shown_bytes, shown_query
from ceql.spark.udtf.ids import ordinal_match_id
from ceql.spark.udtf.spaseq_plan import COLUMN_POSITIONS, SpaseqSpec, compiled

__all__ = ["SpaseqRunner", "converted", "value_text"]


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
