"""Spark Connect: sessions whose Spark runs in a server, reached over gRPC, with no JVM in
this process (``SparkSession.builder.remote("sc://…")``, Databricks serverless, …).

The client cannot add a jar or an extension to the server: those are the server's start-up
settings (:func:`ceql.spark.server_conf`). What a client can do is register Python table
functions through Connect, so without the extension MATCH_CEQL is ceql's Python UDTF, as in a
classic session without the shim, and only the spellings with a table argument exist.
"""

from __future__ import annotations

from typing import Any

from ceql.constants import EXTENSION_CLASS, MATCH_CEQL, MATCH_RECOGNIZE_TABLE, MATCH_SPASEQ
from ceql.spark.stream.operator import LATE_METRIC, METRICS

__all__ = ["apply", "has_extension", "is_connect", "late_rows", "remote_url", "table_function"]

#: The builder option (and environment variable) naming a Connect server.
REMOTE_OPTION = "spark.remote"
REMOTE_ENV = "SPARK_REMOTE"


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (``pyspark.sql.connect.session``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect.")


def remote_url(options: dict[str, Any], environ: dict[str, str]) -> str | None:
    """The Connect server a builder with ``options`` connects to, when it is started
    elsewhere (``sc://…``): its settings are then out of the client's reach. None for a
    classic session and for ``remote("local…")``, where PySpark starts the server itself from
    the builder's settings."""
    url = str(options.get(REMOTE_OPTION) or environ.get(REMOTE_ENV) or "")
    return url if url.startswith("sc://") else None


def has_extension(spark: Any) -> bool:
    """Whether ceql's extension is in ``spark``'s ``spark.sql.extensions`` (for a Connect
    session: the server's). A hosted server may refuse to show its static settings: then it
    has no extension of ceql's either."""
    try:
        value = spark.conf.get("spark.sql.extensions", "")
    except Exception as e:  # e.g. [CONFIG_NOT_AVAILABLE] from a hosted Connect server
        if type(e).__module__.startswith("pyspark.errors"):
            return False
        raise
    return EXTENSION_CLASS in (value or "")


def table_function(spark: Any, name: str = MATCH_CEQL) -> Any:
    """The table function ``name`` (MATCH_CEQL, MATCH_SPASEQ or MATCH_RECOGNIZE_TABLE) as a
    Python table function object of ``spark``'s kind (classic or Connect): ceql's Arrow UDTF,
    which needs no jar."""
    from pyspark.util import PythonEvalType

    handler: type[Any]
    if name == MATCH_SPASEQ:  # needs pyoxigraph (the spaseq extra): imported when used
        from ceql.spark.udtf.match_spaseq import MatchSpaseq

        handler = MatchSpaseq
    elif name == MATCH_RECOGNIZE_TABLE:
        from ceql.spark.udtf.match_recognize import MatchRecognizeTable

        handler = MatchRecognizeTable
    else:
        from ceql.spark.udtf.match_ceql import MatchCeql

        handler = MatchCeql
    if is_connect(spark):
        from pyspark.sql.connect.udtf import UserDefinedTableFunction as ConnectUDTF

        return ConnectUDTF(handler, returnType=None, name=name,
                           evalType=PythonEvalType.SQL_ARROW_UDTF, deterministic=True)
    from pyspark.sql.udtf import UserDefinedTableFunction

    return UserDefinedTableFunction(handler, returnType=None, name=name,
                                    evalType=PythonEvalType.SQL_ARROW_UDTF, deterministic=True)


def apply(spark: Any, function: str, *args: Any, **kwargs: Any) -> Any:
    """The table function ``function`` (:func:`table_function`) applied to ``args``, as a
    DataFrame of ``spark``.

    A Connect UDTF called directly attaches its DataFrame to the active or default Connect
    session, which need not be the one of the table argument (a process may hold sessions of
    several servers); this builds the same plan and gives it to ``spark``.
    """
    udtf = table_function(spark, function)
    if not is_connect(spark):
        return udtf(*args, **kwargs)
    from pyspark.sql.connect.dataframe import DataFrame

    # what ConnectUDTF.__call__ does, with the session given (pyspark is pinned)
    return DataFrame(udtf._build_common_inline_user_defined_table_function(*args, **kwargs),
                     spark)


def late_rows(progress: Any) -> int:
    """The late rows of the micro-batch a stream's ``progress`` describes (a
    ``StreamingQueryProgress``: ``query.lastProgress``, an item of ``query.recentProgress``, a
    listener event's ``progress``), 0 when it counted none.

    The count is ``progress["observedMetrics"]["ceql"]["late_rows"]`` in a classic session;
    through Spark Connect, PySpark gives the metrics' row as its JSON (``values`` and
    ``schema``), which this reads too.
    """
    metrics = getattr(progress, "observedMetrics", None)
    if metrics is None and hasattr(progress, "get"):
        metrics = progress.get("observedMetrics")
    row = (metrics or {}).get(METRICS)
    if row is None:
        return 0
    fields = row.asDict() if hasattr(row, "asDict") else dict(row)
    if LATE_METRIC in fields:
        return int(fields[LATE_METRIC])
    names = [f["name"] for f in fields["schema"]["fields"]]  # Spark Connect's JSON of a row
    return int(fields["values"][names.index(LATE_METRIC)])
