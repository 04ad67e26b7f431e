"""The DataFrame face of MATCH_RECOGNIZE: :func:`match_recognize`, the table function
``MATCH_RECOGNIZE_TABLE`` over a DataFrame (through the shim when the session has it, else as
ceql's Python table function — always so through Spark Connect)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from ceql.constants import CALL_ARGUMENT, MATCH_RECOGNIZE_TABLE, OPTION_BODY, OPTION_TIE_BREAK
from ceql.spark.errors import MatchCeqlError, TieOrderWarning
from ceql.spark.session.connect import apply, has_extension, is_connect
from ceql.spark.udtf.call import CallInfo
from ceql.spark.udtf.match_recognize import WARNED_ARGUMENT, unordered_words
from ceql.spark.udtf.mr_plan import plan_recognize

__all__ = ["match_recognize"]


def match_recognize(df: Any, body: str, *, tie_break: str | Sequence[str] = (),
                    jvm: bool | None = None) -> Any:
    """SQL's ``MATCH_RECOGNIZE`` over DataFrame ``df`` (docs/match_recognize.md), as a
    DataFrame: ``body`` is the clause's body (``PARTITION BY … ORDER BY … MEASURES … PATTERN
    (…) DEFINE …``, with or without ``MATCH_RECOGNIZE ( … )`` around it).

    The output columns are the standard's: ONE ROW PER MATCH the PARTITION BY columns and the
    measures; ALL ROWS PER MATCH the PARTITION BY and ORDER BY columns, the measures and the
    other input columns. DEFINE and MEASURES take any Spark SQL expression of one row's
    columns (docs/spark.md, "MATCH_RECOGNIZE"). ``tie_break`` names columns ordering rows the
    body's ORDER BY leaves equal. The body is checked here first, so its errors come at once.
    ``jvm``: use the shim (default: when the session has ceql's extension; never through
    Spark Connect). Batch DataFrames only, for now.
    """
    if df.isStreaming:
        raise MatchCeqlError(
            "match_recognize: streaming DataFrames are not supported yet; run it on a table "
            "(spark.read…), or use ceql.spark.match for CEQL over a stream.")
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
