"""Plan one MATCH_CEQL call: read its options and the input schema, say what Spark must do.

This is the driver-side half of the table function (run by ``analyze``): it compiles the query
once, decides the time, type, partition and ordering columns, checks that the call and the query
agree, and derives the output schema. It adapts; every CEQL meaning stays in the engine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    DataType,
    DateType,
    LongType,
    NumericType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

import ceql
from ceql.constants import (
    COLUMN_MATCH_END,
    COLUMN_MATCH_END_PREFIX,
    COLUMN_MATCH_ID,
    COLUMN_MATCH_START,
    COLUMN_MATCH_START_PREFIX,
    COLUMN_VARIABLE,
    CONSUME_ANY,
    DEFAULT_ROWS,
    DEFAULT_STREAM_COLUMN,
    DEFAULT_TIME_COLUMN,
    DEFAULT_TIME_UNIT,
    DEFAULT_TYPE_COLUMN,
    INTERNAL_FROM_ORDER_COLUMN,
    INTERNAL_PREFIX,
    INTERNAL_STREAM_COLUMN,
    INTERNAL_TYPE_COLUMN,
    OPTION_BOUNDS,
    OPTION_QUERY,
    OPTION_ROWS,
    OPTION_TIE_BREAK,
    OPTION_TIME,
    OPTION_TIME_FORMAT,
    OPTION_TIME_UNIT,
    OPTION_TYPE,
    OPTIONS,
    ROWS,
    ROWS_EVENTS,
    TIME_UNITS,
    WITHIN_EVENTS,
    WITHIN_TIME,
)
from ceql.spark.errors import MatchCeqlError
from ceql.spark.udtf.call import (
    CallInfo,
    quote_identifier,
    resolve_column,
    sql_string,
    string_option,
)
from ceql.spark.udtf.times import has_zone, to_strptime

__all__ = [
    "INTERNAL_TIME_COLUMN",
    "WARNED_ARGUMENT",
    "MatchSpec",
    "bound_columns",
    "output_schema",
    "plan_match",
]

#: The column a task adds with the times read from text (option time_format); Python only.
INTERNAL_TIME_COLUMN = INTERNAL_PREFIX + "time"
#: The named argument ``ceql.spark.match``/``run`` add: the query's compile-time warnings
#: were issued in the caller's process already, so ``analyze`` does not say them again.
WARNED_ARGUMENT = "_warned"


@dataclass(frozen=True)
class MatchSpec:
    """Everything a task needs to run the query over its partition; built once by ``analyze``."""

    query: str
    time: str
    time_unit: str
    type_key: str                   # the column the engine reads types from
    type_fill: str | None           # None | "table" (constant table_name) | "stream"
    table_name: str | None
    stream_key: str
    partition: tuple[str, ...]      # output partition columns
    spark_partitioned: bool         # True: each task instance sees one partition key
    rows: str
    event_columns: tuple[str, ...]
    variables: tuple[str, ...]
    window_seconds: float | None    # WITHIN in time, in seconds (for trimming kept rows)
    window_events: int | None       # WITHIN n EVENTS when a task sees one substream
    time_is_temporal: bool
    bounds: tuple[str, ...] = ()    # columns reported at the interval's first and last events
    time_format: str | None = None  # strptime format of a time column of text
    time_pattern: str | None = None  # the option as given (a Spark datetime pattern)
    request_partition_by: tuple[str, ...] = ()
    request_order_by: tuple[str, ...] = ()
    output_names: tuple[str, ...] = field(default=())
    #: the columns after the time that order the rows (None: an ORDER BY expression that is
    #: not a column orders them too); rows equal in all of them come in any order
    tie_columns: tuple[str, ...] | None = ()

    @property
    def engine_time(self) -> str:
        """The column the engine reads times from (read from text by the task, or as given)."""
        return INTERNAL_TIME_COLUMN if self.time_format is not None else self.time


def _resolve(name: str, schema: StructType, what: str) -> str:
    return resolve_column(name, schema, what)


def _field(schema: StructType, name: str) -> StructField:
    for f in schema.fields:
        if f.name == name:
            return f
    raise KeyError(name)  # pragma: no cover - _resolve checked it


def _pick_time(schema: StructType, option: str | None, call: CallInfo) -> str:
    if call.descending:
        raise MatchCeqlError(
            "MATCH_CEQL: the table argument's ORDER BY must be ascending (events are read "
            "oldest first); drop DESC."
        )
    if call.order_by and call.order_by_column is None:
        raise MatchCeqlError(
            f"MATCH_CEQL: the table argument's ORDER BY must start with the time column, got "
            f"{call.order_by[0]}; write ORDER BY (ts) or pass time => 'ts'."
        )
    if option is not None:
        name = _resolve(option, schema, "time")
        if call.order_by_column is not None and _resolve(call.order_by_column, schema,
                                                          "ORDER BY") != name:
            raise MatchCeqlError(
                f"MATCH_CEQL: the table argument is ORDER BY {call.order_by_column} but "
                f"time => {option!r}; they must name the same column (or give only one)."
            )
        return name
    if call.order_by_column is not None:
        return _resolve(call.order_by_column, schema, "ORDER BY")
    names = [f.name for f in schema.fields if not f.name.startswith(INTERNAL_PREFIX)]
    for n in names:
        if n.lower() == DEFAULT_TIME_COLUMN:
            return n
    temporal = [f.name for f in schema.fields
                if isinstance(f.dataType, (TimestampType, TimestampNTZType, DateType))]
    if len(temporal) == 1:
        return temporal[0]
    raise MatchCeqlError(
        "MATCH_CEQL needs a time column to order the events: write TABLE(t) ORDER BY (col) "
        f"or pass time => 'col'. The input's columns are {', '.join(names) or '(none)'}."
    )


def _check_time_type(f: StructField, pattern: str | None) -> bool:
    t = f.dataType
    if pattern is not None:
        if isinstance(t, StringType):
            return True
        raise MatchCeqlError(
            f"MATCH_CEQL: time_format reads a time column of text, but {f.name!r} has type "
            f"{t.simpleString()}; drop time_format (a {t.simpleString()} column is read as it "
            "is).")
    if isinstance(t, StringType):
        raise MatchCeqlError(
            f"MATCH_CEQL: the time column {f.name!r} holds text (STRING); give its datetime "
            "pattern, e.g. time_format => 'yyyy-MM-dd HH:mm:ss' (as to_timestamp takes), or "
            f"cast it (e.g. CAST({quote_identifier(f.name)} AS TIMESTAMP)).")
    if isinstance(t, (TimestampType, TimestampNTZType, DateType)):
        return True
    if isinstance(t, NumericType) and t.typeName() != "decimal":
        return False
    raise MatchCeqlError(
        f"MATCH_CEQL: the time column {f.name!r} has type {t.simpleString()}; use a TIMESTAMP, "
        f"DATE or numeric column (cast it, e.g. CAST({quote_identifier(f.name)} AS DOUBLE))."
    )


def _pick_type(schema: StructType, option: str | None, call: CallInfo,
               names: Sequence[str]) -> tuple[str, str | None]:
    has_stream = INTERNAL_STREAM_COLUMN in names
    if option is not None:
        col = _resolve(option, schema, "type")
    else:
        folded = [n for n in names
                  if n.lower() == DEFAULT_TYPE_COLUMN and not n.startswith(INTERNAL_PREFIX)]
        col = folded[0] if folded else ""
    if col:
        t = _field(schema, col).dataType
        if not isinstance(t, StringType):
            raise MatchCeqlError(
                f"MATCH_CEQL: the type column {col!r} has type {t.simpleString()}; event types "
                "are names, so it must be a STRING column (or name another with type => '…')."
            )
        return col, ("stream" if has_stream else None)
    if has_stream:
        return INTERNAL_STREAM_COLUMN, None
    if call.table_name:
        return INTERNAL_TYPE_COLUMN, "table"
    raise MatchCeqlError(
        "MATCH_CEQL: the input has no column 'type' to read event types from; name the column "
        "with type => 'col' (a table given by name, TABLE(t), uses its name as the type)."
    )


def _partitioning(q: ceql.Query, schema: StructType, call: CallInfo) -> tuple[str, ...]:
    if call.bad_partition_by:
        raise MatchCeqlError(
            "MATCH_CEQL: the table argument's PARTITION BY must name columns of the table, got "
            f"{', '.join(call.bad_partition_by)}; compute the value in a subquery first."
        )
    from_call = tuple(_resolve(c, schema, "PARTITION BY") for c in call.partition_by)
    from_query = tuple(q.plan.partition_by)  # with an implied key: the shuffle key
    if from_call and from_query and set(from_call) != set(from_query):
        raise MatchCeqlError(
            f"MATCH_CEQL: the table argument is PARTITION BY {', '.join(from_call)} but the "
            f"query says PARTITION BY [{', '.join(from_query)}]; make them the same or keep "
            "only one."
        )
    return from_query or from_call


def _time_order(time: str, pattern: str | None, fmt: str | None) -> str:
    """The SQL Spark orders the rows by: the time column, or its text read with the pattern
    (a wall-clock TIMESTAMP_NTZ unless the pattern reads a zone; NULL when unreadable)."""
    if pattern is None or fmt is None:
        return quote_identifier(time)
    read = f"try_to_timestamp({quote_identifier(time)}, {sql_string(pattern)})"
    return read if has_zone(fmt) else f"CAST({read} AS TIMESTAMP_NTZ)"


def _same_table(a: str, b: str) -> bool:
    """Whether FROM name ``a`` names table ``b`` (Spark: any case; ``db.t`` names ``t``)."""
    return a.rsplit(".", 1)[-1].lower() == b.rsplit(".", 1)[-1].lower()


def _check_from(q: ceql.Query, call: CallInfo, names: Sequence[str]) -> None:
    """The query's FROM against the input (SEMANTICS.md: events and streams).

    With a stream column (``stream``, or the tables FROM merged) FROM names are its values.
    Without one the input is one stream: a table given by name (``TABLE(t)``, a table or view
    in ``ceql.spark.run``) must be what FROM names; an input without a name (a subquery, a
    DataFrame) stands for a single FROM name, whatever it is.
    """
    streams = q.ast.streams
    if call.streams or INTERNAL_STREAM_COLUMN in names or DEFAULT_STREAM_COLUMN in names:
        return
    if call.table_name is not None:
        other = [s for s in streams if not _same_table(s, call.table_name)]
        if other:
            listed = ", ".join(streams)
            raise MatchCeqlError(
                f"MATCH_CEQL: the query reads FROM {listed}, but the table argument is "
                f"{call.table_name}: write FROM {call.table_name}, or leave out the table "
                f"argument to read {listed} itself (MATCH_CEQL('SELECT … FROM {listed} …')).")
    elif len(streams) > 1:
        listed = ", ".join(streams)
        raise MatchCeqlError(
            f"MATCH_CEQL: the query reads FROM {listed}, but its input is one table without a "
            f"column {DEFAULT_STREAM_COLUMN!r} saying which of them each row comes from; give "
            "one FROM name (it stands for the input), add that column, or let MATCH_CEQL read "
            f"the tables themselves (MATCH_CEQL('SELECT … FROM {listed} …'), "
            "ceql.spark.run(spark, query)).")


def _order_column(sql: str, schema: StructType) -> str | None:
    """The column an ORDER BY expression (its SQL text) is, or None for anything else."""
    text = sql.strip()
    if len(text) > 1 and text[0] == text[-1] == "`":
        text = text[1:-1].replace("``", "`")
    names = [f.name for f in schema.fields]
    if text in names:
        return text
    folded = [n for n in names if n.lower() == text.lower()]
    return folded[0] if len(folded) == 1 else None


def _windows(q: ceql.Query, one_substream: bool) -> tuple[float | None, int | None]:
    """The WITHIN bound a task may use to forget old rows: (seconds, events)."""
    w = q.ast.within
    if w is None:
        return None, None
    if w.kind == WITHIN_TIME:
        # beyond any float: no row ever leaves the window
        return (float(w.amount) if w.amount < 10**300 else float("inf")), None
    if w.kind == WITHIN_EVENTS and one_substream:
        return None, int(w.amount)
    return None, None


def _columns(option: str | None, schema: StructType, what: str) -> list[str]:
    """The columns a comma-separated option names, in the schema's spelling."""
    return [_resolve(c.strip(), schema, what) for c in (option or "").split(",") if c.strip()]


def bound_columns(column: str) -> tuple[str, str]:
    """The output columns option ``bounds`` adds for ``column``: its value at the match's
    first and at its last event."""
    return COLUMN_MATCH_START_PREFIX + column, COLUMN_MATCH_END_PREFIX + column


def plan_match(schema: StructType, options: Mapping[str, Any], call: CallInfo) -> MatchSpec:
    """Check one call and decide how to run it; raise :class:`MatchCeqlError` if it is wrong."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise MatchCeqlError(
            f"MATCH_CEQL has no option {', '.join(unknown)}; its options are "
            f"{', '.join(OPTIONS)}."
        )
    def option(name: str) -> str | None:
        return string_option(options, name, "MATCH_CEQL")

    text = option(OPTION_QUERY)
    if text is None or not text.strip():
        raise MatchCeqlError(
            "MATCH_CEQL needs a CEQL query: MATCH_CEQL(TABLE(t), query => 'SELECT * FROM t "
            "WHERE …')."
        )
    names = [f.name for f in schema.fields]
    visible = StructType([f for f in schema.fields if not f.name.startswith(INTERNAL_PREFIX)])
    if call.no_input:
        ceql.compile(text)  # a syntax error is the clearer message
        raise MatchCeqlError(
            "MATCH_CEQL needs its input: give a table argument, MATCH_CEQL(TABLE(t), query => "
            "'…'), or the query as a string literal whose FROM names tables or views.")
    q = ceql.compile(text, schema=visible)  # CeqlError: syntax/unknown columns, with caret
    _check_from(q, call, names)
    time = _pick_time(schema, option(OPTION_TIME), call)
    pattern = option(OPTION_TIME_FORMAT)
    temporal = _check_time_type(_field(schema, time), pattern)
    fmt = to_strptime(pattern) if pattern is not None else None
    unit = option(OPTION_TIME_UNIT) or DEFAULT_TIME_UNIT
    if unit not in TIME_UNITS:
        raise MatchCeqlError(
            f"MATCH_CEQL: time_unit {unit!r} is not one of {', '.join(TIME_UNITS)}.")
    type_key, fill = _pick_type(schema, option(OPTION_TYPE), call, names)
    if fill is None and type_key == INTERNAL_TYPE_COLUMN:
        fill = "table"
    rows = (option(OPTION_ROWS) or DEFAULT_ROWS).lower()
    if rows not in ROWS:
        raise MatchCeqlError(
            f"MATCH_CEQL: rows => {rows!r} is not one of {', '.join(ROWS)}.")
    partition = _partitioning(q, schema, call)
    consume_any = q.ast.consume == CONSUME_ANY
    if consume_any and call.partition_by:
        raise MatchCeqlError(
            "MATCH_CEQL: CONSUME BY ANY consumes across all partitions, so the table argument "
            "cannot be PARTITION BY; drop it (the query's own PARTITION BY still applies)."
        )
    spark_partitioned = bool(partition) and not consume_any and not call.single_partition
    ties = _columns(option(OPTION_TIE_BREAK), schema, OPTION_TIE_BREAK)
    if INTERNAL_FROM_ORDER_COLUMN in names:
        ties.append(INTERNAL_FROM_ORDER_COLUMN)
    order = [_time_order(time, pattern, fmt), *call.order_by[1:],
             *(quote_identifier(c) for c in ties)]
    by_call = [_order_column(e, schema) for e in call.order_by[1:]]
    tie_columns = (None if None in by_call
                   else tuple(dict.fromkeys([c for c in by_call if c is not None] + ties)))
    events = tuple(n for n in names if not n.startswith(INTERNAL_PREFIX))
    seconds, n_events = _windows(q, spark_partitioned or not partition)
    spec = MatchSpec(
        query=text, time=time, time_unit=unit, type_key=type_key, type_fill=fill,
        table_name=call.table_name,
        stream_key=INTERNAL_STREAM_COLUMN if INTERNAL_STREAM_COLUMN in names
        else DEFAULT_STREAM_COLUMN,
        partition=partition, spark_partitioned=spark_partitioned, rows=rows,
        event_columns=events, variables=tuple(q.variables),
        window_seconds=seconds, window_events=n_events, time_is_temporal=temporal,
        bounds=tuple(dict.fromkeys(_columns(option(OPTION_BOUNDS), schema,
                                            OPTION_BOUNDS))),
        request_partition_by=tuple(quote_identifier(c) for c in partition)
        if spark_partitioned else (),
        request_order_by=tuple(order),
        time_format=fmt, time_pattern=pattern, tie_columns=tie_columns,
    )
    out = output_schema(spec, schema)
    return replace(spec, output_names=tuple(f.name for f in out.fields))


def output_schema(spec: MatchSpec, schema: StructType) -> StructType:
    """The rows MATCH_CEQL returns for ``spec`` over input ``schema``.

    Top-level columns are all nullable: Spark's Arrow writer needs every batch, empty or not,
    to carry the same schema.
    """
    def column(name: str) -> StructField:
        f = _field(schema, name)
        return StructField(f.name, f.dataType, True)

    time_type: DataType = _field(schema, spec.time).dataType
    if spec.time_format is not None:
        time_type = TimestampType() if has_zone(spec.time_format) else TimestampNTZType()
    fixed = [StructField(COLUMN_MATCH_ID, LongType(), True),
             StructField(COLUMN_MATCH_START, time_type, True),
             StructField(COLUMN_MATCH_END, time_type, True)]
    fixed += [StructField(name, _field(schema, c).dataType, True)
              for c in spec.bounds for name in bound_columns(c)]
    events = [column(n) for n in spec.event_columns]
    if spec.rows == ROWS_EVENTS:
        fields = [*fixed, StructField(COLUMN_VARIABLE, StringType(), True), *events]
        _check_unique([f.name for f in fields], "an input column",
                      "rename the input column in a subquery")
        return StructType(fields)
    event_struct = StructType([_field(schema, n) for n in spec.event_columns])
    parts = [column(c) for c in spec.partition]
    vars_ = [StructField(v, ArrayType(event_struct, True), True) for v in spec.variables]
    fields = [fixed[0], *parts, *fixed[1:], *vars_]
    _check_unique([f.name for f in fields], "a variable",
                  "Spark SQL does not tell apart names that differ only in case: SELECT the "
                  "variables you need (SELECT a, b) or rename one with AS")
    return StructType(fields)


def _check_unique(names: Sequence[str], what: str, fix: str) -> None:
    seen: dict[str, str] = {}
    for n in names:
        k = n.lower()
        if k in seen:
            raise MatchCeqlError(
                f"MATCH_CEQL: output columns {seen[k]!r} and {n!r} clash ({what} has the name "
                f"of another output column); {fix}."
            )
        seen[k] = n
