"""The DataFrame face of MATCH_CEQL: :func:`match` and :func:`run`.

Both call the same table function as SQL does (``ceql.spark.udtf.match_ceql.MatchCeql``),
registered from Python, so they need no jar; the options mean what they mean in SQL.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from functools import reduce
from pathlib import Path
from typing import Any

from ceql.constants import (
    CALL_ARGUMENT,
    DEFAULT_ROWS,
    DEFAULT_TIME_UNIT,
    DEFAULT_TYPE_COLUMN,
    INTERNAL_FROM_ORDER_COLUMN,
    INTERNAL_STREAM_COLUMN,
    MATCH_CEQL,
    OPTION_BOUNDS,
    OPTION_QUERY,
    OPTION_ROWS,
    OPTION_TIE_BREAK,
    OPTION_TIME,
    OPTION_TIME_FORMAT,
    OPTION_TIME_UNIT,
    OPTION_TYPE,
)
from ceql.spark.compiling import compile_on_driver
from ceql.spark.conf import FROM_FILES
from ceql.spark.errors import MatchCeqlError
from ceql.spark.session.connect import apply, has_extension, is_connect
from ceql.spark.stream.operator import match_stream, stream_arguments
from ceql.spark.udtf.call import CallInfo, quote_identifier
from ceql.spark.udtf.ceql_plan import WARNED_ARGUMENT

__all__ = ["match", "run"]


def _call(df: Any, query: str, call: CallInfo, *, time: str | None, type_col: str | None,
          rows: str, time_unit: str, bounds: str | Sequence[str] = (),
          time_format: str | None = None, jvm: bool | None = None,
          tie_break: str | Sequence[str] = ()) -> Any:
    """MATCH_CEQL over ``df``: through the shim when the session has it, else from Python
    (always in a Spark Connect session, whose client has no JVM to reach the shim through).

    Both run the same ``analyze`` and engine; the shim's plan also splits partitions with
    Arrow compute rather than Spark's row-by-row check.
    """
    # both callers compiled the query here first, and warned
    options: dict[str, str] = {OPTION_QUERY: query, OPTION_ROWS: rows, OPTION_TIME_UNIT: time_unit,
                               WARNED_ARGUMENT: "1"}
    if time is not None:
        options[OPTION_TIME] = time
    if type_col is not None:
        options[OPTION_TYPE] = type_col
    if time_format is not None:
        options[OPTION_TIME_FORMAT] = time_format
    if bounds:
        options[OPTION_BOUNDS] = bounds if isinstance(bounds, str) else ",".join(bounds)
    if tie_break:
        options[OPTION_TIE_BREAK] = (tie_break if isinstance(tie_break, str)
                                     else ",".join(tie_break))
    spark = df.sparkSession
    if jvm is None:
        jvm = not is_connect(spark) and has_extension(spark)
    if jvm:
        from pyspark.sql import DataFrame

        fns = spark._jvm.org.apache.spark.sql.ceql.CeqlTableFunctions
        return DataFrame(fns.dataFrame(MATCH_CEQL, df._jdf, list(call.partition_by), options),
                         spark)
    from pyspark.sql.functions import lit

    args = {k: lit(v) for k, v in options.items()}
    return apply(spark, MATCH_CEQL, df.asTable(), **args, **{CALL_ARGUMENT: lit(call.to_json())})


def match(df: Any, query: str, *, partition_by: str | Sequence[str] | None = None,
          time: str | None = None, type_col: str = DEFAULT_TYPE_COLUMN, rows: str = DEFAULT_ROWS,
          time_unit: str = DEFAULT_TIME_UNIT, bounds: str | Sequence[str] = (),
          time_format: str | None = None, watermark: str | _dt.timedelta | None = None,
          tie_break: str | Sequence[str] = (), late_view: str | None = None,
          buckets: int | None = None, metrics: str | None = None) -> Any:
    """The matches of CEQL ``query`` over DataFrame ``df``, as a DataFrame.

    ``partition_by`` names columns to partition by (like ``TABLE(t) PARTITION BY``; the query's
    own ``PARTITION BY`` works too), ``time`` the time column (default: a column ``ts`` or the
    only TIMESTAMP/DATE column), ``time_format`` the Spark datetime pattern of a time column of
    text (``"dd/MM/yyyy HH:mm"``, as ``to_timestamp`` takes), ``type_col`` the event-type
    column, ``rows`` ``"matches"`` or ``"events"``, ``bounds`` columns to report at each
    match's first and last events. The columns are those of SQL's ``MATCH_CEQL``. The query is
    compiled here first, so its errors and warnings come at once; :func:`check` says whether
    its event types occur in ``df``. ``tie_break`` names columns ordering rows of equal time.

    A streaming ``df`` gives a streaming DataFrame of the same columns: see
    :func:`ceql.spark.match_stream` (``watermark``, ``late_view``, ``buckets``, ``metrics``).
    """
    more = stream_arguments("match", df.isStreaming, watermark=watermark, late_view=late_view,
                            buckets=buckets, metrics=metrics)
    if df.isStreaming:
        if time_format is not None:
            raise MatchCeqlError(
                "match: over a stream the time column is a TIMESTAMP or a number; convert "
                "text first (to_timestamp(col, pattern)) instead of time_format.")
        return match_stream(df, query, watermark=watermark, partition_by=partition_by,
                            time=time, type_col=type_col, rows=rows, time_unit=time_unit,
                            bounds=bounds, tie_break=tie_break, late_view=late_view, **more)
    compile_on_driver(query, stacklevel=3, schema=df.schema)  # ← match ← caller
    parts = (partition_by,) if isinstance(partition_by, str) else tuple(partition_by or ())
    call = CallInfo(partition_by=parts)
    return _call(df, query, call, time=time, type_col=type_col, rows=rows,
                 time_unit=time_unit, bounds=bounds, time_format=time_format,
                 tie_break=tie_break)


def _query_text(query: str | Path) -> str:
    if isinstance(query, Path) or (query.strip().endswith(".ceql") and "\n" not in query):
        path = Path(query)
        if not path.is_file():
            raise MatchCeqlError(f"No CEQL query file at {path}.")
        return path.read_text(encoding="utf-8")
    return query


def run(spark: Any, query: str | Path, source: Any = None, *, time: str | None = None,
        type_col: str | None = None, rows: str = DEFAULT_ROWS,
        time_unit: str = DEFAULT_TIME_UNIT, bounds: str | Sequence[str] = (),
        time_format: str | None = None) -> Any:
    """Run a CEQL query (text, or a ``.ceql`` file path) on ``spark``; return a DataFrame.

    ``source`` is a DataFrame, a table or view name (which the query's FROM must name), or
    ``None`` to read the tables or views the query's FROM clause names (several are merged by
    time; a table without a type column contributes events whose type is the table's name).
    Options as for :func:`match`.
    """
    text = _query_text(query)
    q = compile_on_driver(text, stacklevel=3)  # ← run ← caller
    if source is not None and not isinstance(source, str):
        return _call(source, text, CallInfo(), time=time, type_col=type_col, rows=rows,
                     time_unit=time_unit, bounds=bounds, time_format=time_format)
    names = (source,) if isinstance(source, str) else q.ast.streams
    if source is None:  # names from query text: tables and views only, as in SQL
        for name in names:
            _no_file(spark, name)
    call = CallInfo(table_name=names[0] if len(names) == 1 else None,
                    streams=tuple(names) if len(names) > 1 else ())
    return _call(_merged(spark, names), text, call, time=time, type_col=type_col, rows=rows,
                 time_unit=time_unit, bounds=bounds, time_format=time_format)


def _no_file(spark: Any, name: str) -> None:
    """Refuse a FROM name of two parts that is no table or view (Spark would read it as a
    ``format``.``path`` file), unless ``spark.ceql.from.files`` allows files: the shim's rule
    for MATCH_CEQL, here for :func:`run`."""
    parts = name.split(".")
    if len(parts) != 2 or FROM_FILES.get(spark):
        return
    if spark.catalog.tableExists(".".join(quote_identifier(p) for p in parts)):
        return
    raise MatchCeqlError(
        f"MATCH_CEQL: the FROM name {name!r} is no table or view, and ceql reads only tables "
        f"and views from query text, not files ({parts[0]}.`path`); register the data as a "
        f"view, or set {FROM_FILES.key}=true to let FROM name files.")


def _merged(spark: Any, names: Sequence[str]) -> Any:
    """One table, or several merged into one stream, each row tagged with its table."""
    if len(names) == 1:
        return spark.table(names[0])
    from pyspark.sql.functions import lit

    tagged = [spark.table(n).withColumn(INTERNAL_STREAM_COLUMN, lit(n))
              .withColumn(INTERNAL_FROM_ORDER_COLUMN, lit(i))
              for i, n in enumerate(names)]
    return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), tagged)
