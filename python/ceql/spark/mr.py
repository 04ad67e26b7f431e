"""The DataFrame face of MATCH_RECOGNIZE: :func:`match_recognize`, the table function
``MATCH_RECOGNIZE_TABLE`` over a DataFrame (through the shim when the session has it, else as
ceql's Python table function — always so through Spark Connect); a streaming DataFrame goes to
the stream operator (:func:`ceql.spark.stream.operator.recognize_stream`)."""

from __future__ import annotations

import datetime as _dt
import warnings
from collections.abc import Sequence
from typing import Any

from ceql.constants import CALL_ARGUMENT, MATCH_RECOGNIZE_TABLE, OPTION_BODY, OPTION_TIE_BREAK
from ceql.spark.errors import MatchCeqlError, TieOrderWarning
from ceql.spark.session.connect import apply, has_extension, is_connect
from ceql.spark.stream.operator import recognize_stream, stream_arguments
from ceql.spark.udtf.call import CallInfo
from ceql.spark.udtf.match_recognize import WARNED_ARGUMENT, unordered_words
from ceql.spark.udtf.mr_plan import plan_recognize

__all__ = ["match_recognize"]


def match_recognize(df: Any, body: str, *, tie_break: str | Sequence[str] = (),
                    jvm: bool | None = None, watermark: str | _dt.timedelta | None = None,
                    late_view: str | None = None, buckets: int | None = None,
                    metrics: str | None = None) -> Any:
    """SQL's ``MATCH_RECOGNIZE`` over DataFrame ``df`` (docs/match_recognize.md), as a
    DataFrame: ``body`` is the clause's body (``PARTITION BY … ORDER BY … MEASURES … PATTERN
    (…) DEFINE …``, with or without ``MATCH_RECOGNIZE ( … )`` around it).

    The output columns are the standard's: ONE ROW PER MATCH the PARTITION BY columns and the
    measures; ALL ROWS PER MATCH the PARTITION BY and ORDER BY columns, the measures and the
    other input columns. DEFINE and MEASURES take any Spark SQL expression of one row's
    columns (docs/spark.md, "MATCH_RECOGNIZE"). ``tie_break`` names columns ordering rows the
    body's ORDER BY leaves equal. The body is checked here first, so its errors come at once.
    ``jvm``: use the shim (default: when the session has ceql's extension; never through
    Spark Connect).

    A streaming ``df`` gives a streaming DataFrame of the same columns, the batch call's rows
    over the same rows, each once (docs/match_recognize.md, "Streams"): the body's ORDER BY
    starts with the event-time column carrying the watermark (``df.withWatermark(ts, …)``,
    or ``watermark`` gives the delay) and PATTERN has a WITHIN; ``late_view``, ``buckets`` and
    ``metrics`` are :func:`ceql.spark.match_stream`'s.
    """
    more = stream_arguments("match_recognize", df.isStreaming, watermark=watermark,
                            late_view=late_view, buckets=buckets, metrics=metrics)
    if df.isStreaming:
        if jvm:
            raise MatchCeqlError(
                "match_recognize: a stream runs in Spark's streaming operator, not through the "
                "shim's table function; leave jvm out.")
        return recognize_stream(df, body, tie_break=tie_break, watermark=watermark,
                                late_view=late_view, **more)
    ties = tie_break if isinstance(tie_break, str) else ",".join(tie_break)
    options: dict[str, str] = {OPTION_BODY: body}
    if ties:
        options[OPTION_TIE_BREAK] = ties
    spec = plan_recognize(df.schema, options, CallInfo())
    words = unordered_words(spec)
    if words is not None:
        warnings.warn(words, TieOrderWarning, stacklevel=2)
    options[WARNED_ARGUMENT] = "1"
    spark = df.sparkSession
    if jvm is None:
        jvm = not is_connect(spark) and has_extension(spark)
    if jvm:
        from pyspark.sql import DataFrame

        fns = spark._jvm.org.apache.spark.sql.ceql.CeqlTableFunctions
        return DataFrame(fns.dataFrame(MATCH_RECOGNIZE_TABLE, df._jdf, [], options), spark)
    from pyspark.sql.functions import lit

    args = {k: lit(v) for k, v in options.items()}
    return apply(spark, MATCH_RECOGNIZE_TABLE, df.asTable(), **args,
                 **{CALL_ARGUMENT: lit(CallInfo().to_json())})
