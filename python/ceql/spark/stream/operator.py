"""MATCH_CEQL and MATCH_RECOGNIZE over a Structured Streaming DataFrame: :func:`match_stream`
and :func:`recognize_stream` (``ceql.spark.match_recognize`` on a stream), one operator.

A streaming DataFrame cannot be sorted, so the table function's ``ORDER BY`` is out; instead
the rows are grouped by the query's partition key and handed to Spark's
``transformWithStateInPandas`` in event-time mode. Each key keeps its
:class:`~ceql.spark.stream.keystate.KeyState` in the state store (RocksDB, in
:mod:`~ceql.spark.stream.state_codec`'s format): the rows the watermark has
not passed yet and the engine's state. Checkpoints make it exactly once; an event-time timer per
key evaluates held rows, releases matches waiting for a trailing NOT, and drops the engine of a
key idle past its window, and with it the key's state entry: ``match_id`` names a match by its
events' times (:mod:`ceql.spark.udtf.ids`), so it is the batch one without any count kept per key.
A MATCH_RECOGNIZE key runs the body's incremental evaluator instead
(:mod:`~ceql.spark.stream.recognize`), its rows in ORDER BY order (the watermarked event time
first), the body's row-local parts computed by Spark as columns beforehand, as for a table; its
engine is kept while the key is idle (MATCH_NUMBER() and PREV go on across matches).

Late rows (older than the watermark when they arrive) are counted in the query's progress —
``observedMetrics["ceql"]["late_rows"]``, under another name than ``"ceql"`` with ``metrics=`` —
and, if asked, routed to a temporary view.
"""

from __future__ import annotations

import datetime as _dt
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa

import ceql
from ceql.constants import (
    DEFAULT_ROWS,
    DEFAULT_TIME_UNIT,
    DEFAULT_TYPE_COLUMN,
    INTERNAL_PREFIX,
    OPTION_BODY,
    OPTION_BOUNDS,
    OPTION_QUERY,
    OPTION_ROWS,
    OPTION_TIE_BREAK,
    OPTION_TIME,
    OPTION_TIME_UNIT,
    OPTION_TYPE,
    WITHIN_ATTR,
)
from ceql.spark.compiling import compile_on_driver
from ceql.spark.errors import MatchCeqlError
from ceql.spark.stream.keystate import TIME_US, KeyState, StreamPlan, stream_plan
from ceql.spark.stream.state_codec import dump_state, load_state
from ceql.spark.udtf.call import CallInfo, quote_identifier
from ceql.spark.udtf.ceql_plan import output_schema, plan_match
from ceql.spark.udtf.mr_plan import plan_recognize
from ceql.spark.udtf.pushdown import prefilter

__all__ = [
    "LATE_METRIC",
    "METRICS",
    "ROCKSDB_CHANGELOG",
    "ROCKSDB_PROVIDER",
    "STATE_STORE_PROVIDER",
    "StreamProcessor",
    "match_stream",
    "recognize_stream",
    "stream_arguments",
]

#: The Spark setting naming the state store; streams need RocksDB's.
STATE_STORE_PROVIDER = "spark.sql.streaming.stateStore.providerClass"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
#: RocksDB commits write a changelog instead of a snapshot of every state store partition (a
#: fraction of a micro-batch's fixed cost); ``local_session`` and ``server_conf`` turn it on
ROCKSDB_CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
#: ``query.lastProgress["observedMetrics"][METRICS][LATE_METRIC]``: late rows in the batch.
METRICS = "ceql"
LATE_METRIC = "late_rows"

_LATE = INTERNAL_PREFIX + "late"          # output rows that count (or carry) late rows
_LATE_COLUMN = INTERNAL_PREFIX + "late_"  # a late row's columns, for the side output
_KEY = INTERNAL_PREFIX + "key"            # the group key of a query without PARTITION BY
_EVENT_TIME = INTERNAL_PREFIX + "event_time"
_ROWS = INTERNAL_PREFIX + "rows"          # a group key's rows of one input batch (Arrow IPC)
_NEWEST = INTERNAL_PREFIX + "newest"      # the newest time (µs) of the rows of that batch
#: State entries a partitioned stream spreads its keys over (``buckets``).
DEFAULT_BUCKETS = 16
_WATERMARK_DELAY = "spark.watermarkDelayMs"  # Spark marks a watermarked column with it


def _delay(watermark: str | _dt.timedelta) -> str:
    if isinstance(watermark, _dt.timedelta):
        ms = watermark // _dt.timedelta(milliseconds=1)
        if ms < 0:
            raise MatchCeqlError(f"match: watermark must not be negative, got {watermark}.")
        return f"{ms} milliseconds"
    if not isinstance(watermark, str) or not watermark.strip():
        raise MatchCeqlError(
            f"match: watermark is a delay such as '10 seconds' (or a timedelta), got "
            f"{watermark!r}.")
    return watermark


def _check_session(spark: Any, who: str = "match") -> None:
    provider = spark.conf.get(STATE_STORE_PROVIDER, None) or ""
    if "RocksDB" not in provider:
        raise MatchCeqlError(
            f"{who}: a stream keeps each key's state in Spark's state store, and "
            "transformWithState needs the RocksDB one; set "
            f"spark.conf.set({STATE_STORE_PROVIDER!r}, {ROCKSDB_PROVIDER!r}) before starting "
            "the query (ceql.spark.local_session() does).")


def _within(q: ceql.Query) -> None:
    w = q.ast.within
    if w is None:
        raise MatchCeqlError(
            "match: over a stream a query needs WITHIN, or its state grows without bound (a "
            "run may wait forever for its next event); add a window, e.g. WITHIN 10 MINUTES "
            "(or WITHIN 1000 EVENTS).")
    if w.kind == WITHIN_ATTR:
        raise MatchCeqlError(
            f"match: over a stream the window is in time or in events; WITHIN {w.amount} "
            f"[{w.attr}] measures an attribute the watermark knows nothing of. Write WITHIN "
            "<n> SECONDS/MINUTES/... or WITHIN <n> EVENTS.")


def _delay_ms(field: Any) -> int:
    """The delay Spark put on a watermarked column (its own reading of the interval)."""
    return int(field.metadata[_WATERMARK_DELAY])


def _watermarked(df: Any) -> str | None:
    for f in df.schema.fields:
        if _WATERMARK_DELAY in (f.metadata or {}):
            return str(f.name)
    return None


def match_stream(df: Any, query: str, *, watermark: str | _dt.timedelta | None = None,
                 partition_by: str | Sequence[str] | None = None, time: str | None = None,
                 type_col: str = DEFAULT_TYPE_COLUMN, rows: str = DEFAULT_ROWS,
                 time_unit: str = DEFAULT_TIME_UNIT, bounds: str | Sequence[str] = (),
                 tie_break: str | Sequence[str] = (), late_view: str | None = None,
                 buckets: int = DEFAULT_BUCKETS, metrics: str = METRICS) -> Any:
    """The matches of CEQL ``query`` over the streaming DataFrame ``df``, as a streaming
    DataFrame with :func:`ceql.spark.match`'s columns (write it with ``outputMode("append")``).

    ``watermark`` is how late a row may come (``"10 seconds"``), or leave it out when ``df``
    has a ``withWatermark`` on the time column. Rows are evaluated in event-time order once the
    watermark passes them (equal times by ``tie_break``, then as they arrived), so a match
    appears when the watermark passes its last event (a trailing NOT: its window). Rows older
    than the watermark when they arrive are late: not evaluated, counted in the progress's
    ``observedMetrics["ceql"]["late_rows"]`` (``metrics`` renames ``"ceql"``: give each ceql
    stream its own name when one streaming query unions several), and, with ``late_view``, sent
    to a temporary view of that name (a streaming DataFrame of the input's columns). The query
    needs WITHIN
    (in time or events); the time column is a TIMESTAMP or a number (``time_unit``).

    With a PARTITION BY, the keys are spread over ``buckets`` entries of the state store
    (hashed; 0: one entry per key). Keep it the same across restarts of one checkpoint (a
    different number is refused).

    Rows no variable of the query can use are dropped before the shuffle, as in a batch call,
    after the watermark has seen them; the late count then counts the rows the query could
    have used. With ``late_view`` every row is kept, so every late row reaches the view.
    """
    from pyspark.sql.types import NumericType, StringType, StructType, TimestampType

    if not df.isStreaming:
        raise MatchCeqlError(
            "match_stream reads a streaming DataFrame (spark.readStream…); for a table or a "
            "batch DataFrame use ceql.spark.match(df, query).")
    spark = df.sparkSession
    _check_session(spark)
    compiled = compile_on_driver(query, stacklevel=3)  # ← match_stream ← caller
    _within(compiled)
    options: dict[str, str] = {OPTION_QUERY: query, OPTION_ROWS: rows, OPTION_TIME_UNIT: time_unit,
                               OPTION_TYPE: type_col}
    if time is not None:
        options[OPTION_TIME] = time
    for name, value in ((OPTION_BOUNDS, bounds), (OPTION_TIE_BREAK, tie_break)):
        if value:
            options[name] = value if isinstance(value, str) else ",".join(value)
    parts = (partition_by,) if isinstance(partition_by, str) else tuple(partition_by or ())
    schema = StructType([f for f in df.schema.fields if not f.name.startswith(INTERNAL_PREFIX)])
    given = [f for f in schema.fields if time is not None and f.name.lower() == time.lower()]
    if given and isinstance(given[0].dataType, StringType):
        raise MatchCeqlError(
            f"match: over a stream the time column is a TIMESTAMP or a number; {time!r} holds "
            f"text. Convert it first, e.g. .withColumn({time!r}, to_timestamp({time!r}, "
            "'yyyy-MM-dd HH:mm:ss')).")
    with warnings.catch_warnings():  # compile_on_driver has issued them
        warnings.simplefilter("ignore", ceql.CeqlWarning)
        spec = plan_match(schema, options, CallInfo(partition_by=parts))
    time_field = next(f for f in schema.fields if f.name == spec.time)
    kind = time_field.dataType
    if not isinstance(kind, TimestampType) and not (
            isinstance(kind, NumericType) and kind.typeName() != "decimal"):
        raise MatchCeqlError(
            f"match: over a stream the time column is a TIMESTAMP or a number; {spec.time!r} "
            f"is {kind.simpleString()}. Convert it first, e.g. "
            f".withColumn({spec.time!r}, to_timestamp({spec.time!r}, 'yyyy-MM-dd HH:mm:ss')).")
    ties = tuple(c.strip() for c in options.get(OPTION_TIE_BREAK, "").split(",") if c.strip())
    _check_counts("match", metrics, buckets)
    plan = stream_plan(spec, compiled.ast.strategy, timestamp=isinstance(kind, TimestampType),
                       buckets=buckets, tie_break=tuple(next(f.name for f in schema.fields
                                            if f.name.lower() == c.lower()) for c in ties))
    marked = _watermarked(df)
    if watermark is None and marked is None:
        raise MatchCeqlError(
            "match: a stream needs a watermark to know when its rows are complete: pass "
            f"watermark='10 seconds' (how late a row may come), or call "
            f"df.withWatermark({spec.time!r}, '10 seconds') first.")
    if watermark is None and marked != spec.time:
        raise MatchCeqlError(
            f"match: the stream's watermark is on {marked!r}, but the query's time column is "
            f"{spec.time!r}; put the watermark on {spec.time!r} (or pass watermark=…).")
    events, plan = _timed(df, plan, watermark, marked)
    cond = prefilter(compiled, schema, spec) if late_view is None else None
    if cond is not None:
        # after the watermark, which so moves with every row as without the filter: Spark
        # pushes a filter below the watermark unless it reads the watermark's column
        if watermark is not None:
            cond = f"({cond}) OR {_EVENT_TIME} IS NULL"
        events = events.where(cond)
    return _operate(events, plan, partition=spec.partition if spec.spark_partitioned else (),
                    buckets=buckets, output=output_schema(spec, schema),
                    names=spec.output_names, input_schema=schema,
                    late_columns=plan.columns if late_view is not None else (),
                    late_view=late_view, metrics=metrics)


def recognize_stream(df: Any, body: str, *, tie_break: str | Sequence[str] = (),
                     watermark: str | _dt.timedelta | None = None, late_view: str | None = None,
                     buckets: int = DEFAULT_BUCKETS, metrics: str = METRICS) -> Any:
    """MATCH_RECOGNIZE ``body`` over the streaming DataFrame ``df``
    (:func:`ceql.spark.match_recognize` on a stream), as a streaming DataFrame with the batch
    call's columns (write it with ``outputMode("append")``).

    The body's ORDER BY starts with the event-time column (a TIMESTAMP, ascending), which
    carries ``df``'s watermark (``df.withWatermark(ts, …)``), or ``watermark`` gives the delay;
    PARTITION BY is the state key (hashed into ``buckets`` entries, as
    :func:`match_stream`'s); WITHIN is required. A key's rows reach the engine once the
    watermark passes them, in ORDER BY order (then ``tie_break``, then arrival), so the output
    is the batch call's over the same rows, each once: a match as soon as it is final (its
    window closed, or a later row of its partition ended it). Late rows are counted
    (``observedMetrics[metrics]["late_rows"]``) and with ``late_view`` sent to that view.
    """
    from pyspark.sql.types import StructType, TimestampType

    from ceql.spark.stream.recognize import recognize_plan, stream_refusal

    who = "match_recognize"
    spark = df.sparkSession
    _check_session(spark, who)
    _check_counts(who, metrics, buckets)
    ties = tie_break if isinstance(tie_break, str) else ",".join(tie_break)
    options: dict[str, str] = {OPTION_BODY: body}
    if ties:
        options[OPTION_TIE_BREAK] = ties
    schema = StructType([f for f in df.schema.fields if not f.name.startswith(INTERNAL_PREFIX)])
    spec = plan_recognize(schema, options, CallInfo())
    refusal = stream_refusal(spec)
    if refusal is not None:
        raise MatchCeqlError(f"{who}: {refusal}.")
    time = spec.order[0]
    kind = schema[time].dataType
    if not isinstance(kind, TimestampType):
        raise MatchCeqlError(
            f"{who}: over a stream the first ORDER BY column is the event time, a TIMESTAMP "
            f"with the watermark; {time!r} is {kind.simpleString()}. Convert it first, e.g. "
            f".withColumn({time!r}, to_timestamp({time!r})), and order by it.")
    marked = _watermarked(df)
    if watermark is None and marked is None:
        raise MatchCeqlError(
            f"{who}: a stream needs a watermark on its event-time column, the body's first "
            f"ORDER BY column {time!r}, to know when its rows are complete: call "
            f"df.withWatermark({time!r}, '10 seconds') first (how late a row may come), or "
            "pass watermark='10 seconds'.")
    if watermark is None and marked != time:
        raise MatchCeqlError(
            f"{who}: the stream's watermark is on {marked!r}, but the body's ORDER BY starts "
            f"with {time!r}; over a stream rows are ordered by the watermarked event time: "
            f"write ORDER BY {marked} first, or put the watermark on {time!r} "
            f"(df.withWatermark({time!r}, …)), or pass watermark=….")
    plan = recognize_plan(spec, buckets=buckets)
    # the row-local parts of DEFINE and MEASURES: Spark computes them, as for a table
    projected = df.selectExpr(*[sql if not alias else f"{sql} AS {quote_identifier(alias)}"
                                for sql, alias in spec.select])
    events, plan = _timed(projected, plan, watermark, marked)
    return _operate(events, plan, partition=spec.partition, buckets=buckets,
                    output=spec.schema, names=spec.schema.names, input_schema=schema,
                    late_columns=spec.input_columns if late_view is not None else (),
                    late_view=late_view, metrics=metrics)


def stream_arguments(who: str, streaming: bool, *, watermark: object, late_view: object,
                     buckets: int | None, metrics: str | None) -> dict[str, Any]:
    """The DataFrame calls' stream-only arguments: for a stream, ``buckets`` and ``metrics``
    as keyword arguments of :func:`match_stream`/:func:`recognize_stream` (left out when None:
    their defaults); for a table, none may be given (:class:`MatchCeqlError` naming ``who``)."""
    if not streaming:
        if (watermark is not None or late_view is not None or buckets is not None
                or metrics is not None):
            raise MatchCeqlError(
                f"{who}: watermark, late_view, buckets and metrics are for streaming "
                "DataFrames (spark.readStream…); a table is complete, so drop them.")
        return {}
    more: dict[str, Any] = {} if buckets is None else {"buckets": buckets}
    if metrics is not None:
        more["metrics"] = metrics
    return more


def _check_counts(who: str, metrics: Any, buckets: Any) -> None:
    if not isinstance(metrics, str) or not metrics.strip():
        raise MatchCeqlError(
            f"{who}: metrics names the stream's observed metrics (late rows), e.g. "
            f"'ceql_fraud'; got {metrics!r}.")
    if not isinstance(buckets, int) or isinstance(buckets, bool) or buckets < 0:
        raise MatchCeqlError(
            f"{who}: buckets is a number of state entries (0: one per key), got {buckets!r}.")


def _timed(df: Any, plan: StreamPlan, watermark: str | _dt.timedelta | None,
           marked: str | None) -> tuple[Any, StreamPlan]:
    """``df`` with :data:`TIME_US` (and, with ``watermark``, the watermarked event time);
    ``plan`` with the watermark's delay when it is the stream's only one."""
    from pyspark.sql import functions as F

    t = F.col(quote_identifier(plan.engine.time))
    us = (F.unix_micros(t) if plan.timestamp
          else F.floor(t.cast("double") * F.lit(float(plan.us_per_unit))).cast("long"))
    events = df.withColumn(TIME_US, us)
    if watermark is None:
        return events, plan
    events = (events.withColumn(_EVENT_TIME, F.timestamp_micros(F.col(TIME_US)))
              .withWatermark(_EVENT_TIME, _delay(watermark)))
    # with watermark= and none upstream, ours is the stream's only watermark, whose delay
    # then tells each key when its rows are complete, a micro-batch before Spark's watermark
    # does (an upstream one, perhaps of a union, could hold Spark's back)
    if marked is None:
        plan = replace(plan, delay_ms=_delay_ms(events.schema[_EVENT_TIME]))
    return events, plan


def _operate(events: Any, plan: StreamPlan, *, partition: Sequence[str], buckets: int,
             output: Any, names: Sequence[str], input_schema: Any,
             late_columns: Sequence[str], late_view: str | None, metrics: str) -> Any:
    """The operator over ``events`` (the rows with :data:`TIME_US`, watermarked): grouped by
    ``partition`` (hashed into ``buckets``; none: one key), each key's :class:`KeyState` run
    by ``plan``; the ``output`` rows as a streaming DataFrame of columns ``names``, the late
    rows counted under ``metrics`` and, with ``late_view``, their ``late_columns`` sent there."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    if partition and buckets:
        # keys spread over `buckets` state entries: a micro-batch calls each entry once
        # (PySpark's state calls cost per key), and each entry's engine keeps its keys apart
        key = F.pmod(F.xxhash64(*[F.col(quote_identifier(c)) for c in partition]),
                     F.lit(buckets))
        events, keys = events.withColumn(_KEY, key), [_KEY]
    elif partition:
        keys = list(partition)
    else:
        events, keys = events.withColumn(_KEY, F.lit(0)), [_KEY]
    # PySpark hands transformWithStateInPandas its rows one by one (a pandas row tuple each,
    # tens of µs); packed, a group key's rows of one input batch travel as one Arrow value
    carried = [*keys, *(c for c in (*plan.columns, TIME_US) if c not in keys)]
    packed = StructType([*(events.schema[c] for c in keys), StructField(_ROWS, BinaryType()),
                         StructField(_NEWEST, LongType())])
    grouped = (events.select(*[quote_identifier(c) for c in carried])
               .mapInArrow(RowPacker(keys, TIME_US), packed)
               .groupBy(*[quote_identifier(c) for c in keys]))
    out_fields = [*output.fields, StructField(_LATE, LongType(), True)]
    out_fields += [StructField(_LATE_COLUMN + c, f.dataType, True)
                   for c in late_columns for f in input_schema.fields if f.name == c]
    out = StructType(out_fields)
    processor = StreamProcessor(plan, out, late_columns)
    result = grouped.transformWithStateInPandas(processor, out, "Append", "EventTime")
    counted = result.observe(metrics, F.coalesce(F.sum(_LATE), F.lit(0)).alias(LATE_METRIC))
    matches = counted.where(F.col(_LATE).isNull()).select(
        *[F.col(quote_identifier(n)) for n in names])
    if late_view is not None:
        late = result.where(F.col(_LATE).isNotNull()).select(
            *[F.col(quote_identifier(_LATE_COLUMN + c)).alias(c) for c in late_columns])
        late.createOrReplaceTempView(late_view)
    return matches


class RowPacker:
    """``mapInArrow``'s function: each batch's rows, one output row per group key holding
    that key's rows as an Arrow IPC stream (in their order), in column :attr:`COLUMN`; with
    ``newest``, the batch's greatest value of that column too, in column :attr:`NEWEST`."""

    COLUMN = _ROWS
    NEWEST = _NEWEST

    def __init__(self, keys: Sequence[str], newest: str | None = None) -> None:
        self._keys = tuple(keys)
        self._newest = newest

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for rb in batches:
            if rb.num_rows:
                yield self._pack(rb)

    def _pack(self, rb: pa.RecordBatch) -> pa.RecordBatch:
        import numpy as np
        import pyarrow.compute as pc

        n = rb.num_rows
        order = pc.sort_indices(rb, sort_keys=[(k, "ascending") for k in self._keys])
        rows = rb.take(order)  # stable: a key's rows keep their order
        change = np.zeros(n, dtype=bool)
        change[0] = True
        for k in self._keys:
            col = rows.column(k)
            a, b = col.slice(1), col.slice(0, n - 1)
            differ = pc.fill_null(pc.not_equal(a, b), True)
            same_null = pc.and_(pc.is_null(a), pc.is_null(b))
            change[1:] |= pc.and_not(differ, same_null).to_numpy(zero_copy_only=False)
        starts = np.flatnonzero(change)
        blobs = []
        for s, e in zip(starts, [*starts[1:], n], strict=True):
            sink = pa.BufferOutputStream()
            part = rows.slice(int(s), int(e - s))
            with pa.ipc.new_stream(sink, part.schema) as writer:
                writer.write_batch(part)
            blobs.append(sink.getvalue().to_pybytes())
        firsts = pa.array(starts, pa.int64())
        columns = [*(rows.column(k).take(firsts) for k in self._keys), pa.array(blobs, pa.binary())]
        names = [*self._keys, _ROWS]
        if self._newest is not None:
            newest = pc.max(rb.column(self._newest)).as_py()
            columns.append(pa.array([newest] * len(blobs), pa.int64()))
            names.append(_NEWEST)
        return pa.RecordBatch.from_arrays(columns, names=names)


def _unpacked(frame: Any) -> Iterator[pa.RecordBatch]:
    """The rows a chunk of packed rows (:class:`RowPacker`, with ``newest``) carries."""
    for blob in frame.iloc[:, -2]:  # PySpark names the columns by position, not as packed
        with pa.ipc.open_stream(blob) as reader:
            yield from reader


def _processor_base() -> type:
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    return StatefulProcessor


class StreamProcessor(_processor_base()):  # type: ignore[misc]
    """The per-key operator: restore the key's :class:`KeyState`, give it the rows and the
    watermark, save it, set its timer, and return the output rows. (bench/mr_flink.py puts a
    processor that does nothing in its place to measure the plan's own cost.)"""

    def __init__(self, plan: StreamPlan, output: Any, late_columns: Sequence[str]) -> None:
        from pyspark.sql.pandas.types import to_arrow_type

        self._plan = plan
        self._outputs = [f.name for f in output.fields]
        # each output column's Arrow type: an engine's batch gains the columns it lacks
        # (the late-row ones) as typed NULLs, then becomes one pandas frame
        self._types = {f.name: to_arrow_type(f.dataType, timezone="UTC")
                       for f in output.fields}
        self._late_columns = tuple(late_columns)

    def init(self, handle: Any) -> None:
        from pyspark.sql.types import BinaryType, StructField, StructType

        self._handle = handle
        self._state = handle.getValueState(
            "ceql", StructType([StructField("key_state", BinaryType(), True)]))

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        ks = self._load()
        w = timerValues.getCurrentWatermarkInMs()
        late: list[pa.RecordBatch] = []
        for frame in rows:
            for rb in _unpacked(frame):
                got = ks.accept(self._plan, rb, w)
                if got.num_rows:
                    late.append(got)
            # the micro-batch's other keys' rows move Spark's next watermark too
            ks.saw(int(frame.iloc[:, -1].max()))
        # output flows batch by batch as the engine finds it; the state is saved after it
        yield from self._frames(ks.release(self._plan, w), late)
        self._save(ks)

    def handleExpiredTimer(self, key: Any, timerValues: Any,
                           expiredTimerInfo: Any) -> Iterator[Any]:
        ks = self._load()
        ks.fired(int(expiredTimerInfo.getExpiryTimeInMs()))  # Spark deletes it after this call
        yield from self._frames(ks.release(self._plan, timerValues.getCurrentWatermarkInMs()),
                                [])
        self._save(ks)

    def close(self) -> None:
        pass

    # ------------------------------------------------------------------ state
    def _load(self) -> KeyState:
        got = self._state.get()  # None when absent: one call to the state server, not two
        self._stored = got is not None
        if got is not None:
            ks = load_state(got[0], self._plan)
            if ks.buckets != self._plan.buckets:
                raise MatchCeqlError(
                    f"match: this checkpoint keeps the stream's keys in "
                    f"{ks.buckets or 'one entry per key'} bucket(s), but the query now asks "
                    f"for buckets={self._plan.buckets}; restart it with "
                    f"buckets={ks.buckets}, or start from a new checkpoint.")
            return ks
        return KeyState(self._plan.buckets)

    def _save(self, ks: KeyState) -> None:
        if ks.idle:  # nothing left to do or to remember: the key leaves no state
            for ms in ks.timers:
                self._handle.deleteTimer(ms)
            if self._stored:
                self._state.clear()
            return
        new = ks.reschedule(self._plan)
        if new is not None:
            self._handle.registerTimer(new)
        self._state.update((dump_state(ks),))

    # ------------------------------------------------------------------ rows
    def _frames(self, out: Iterable[pa.RecordBatch], late: list[pa.RecordBatch]
                ) -> Iterator[Any]:
        import pandas as pd

        for rb in out:
            n = rb.num_rows
            have = dict(zip(rb.schema.names, rb.columns, strict=True))
            columns = [have[c] if c in have else pa.nulls(n, self._types[c])
                       for c in self._outputs]
            yield pa.RecordBatch.from_arrays(columns, names=self._outputs).to_pandas(
                types_mapper=pd.ArrowDtype)
        n = sum(b.num_rows for b in late)
        if not n:
            return
        if not self._late_columns:
            yield pd.DataFrame({name: [n if name == _LATE else None] for name in self._outputs})
            return
        for rb in late:
            frame = rb.to_pandas(types_mapper=pd.ArrowDtype)
            frame.columns = [_LATE_COLUMN + c for c in frame.columns]
            frame[_LATE] = 1
            yield self._shaped(frame)

    def _shaped(self, frame: Any) -> Any:
        """``frame`` with the operator's output columns, in order (missing ones null)."""
        for name in self._outputs:
            if name not in frame.columns:
                frame[name] = None
        return frame[self._outputs]
