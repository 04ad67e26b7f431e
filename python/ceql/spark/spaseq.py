"""The DataFrame face of MATCH_SPASEQ: :func:`match_spaseq`. SPAseq needs pyoxigraph (the
``spaseq`` extra), imported only when a SPAseq query runs."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from ceql.constants import CALL_ARGUMENT, ENV_DATASET_ACCESS, MATCH_SPASEQ
from ceql.spark.errors import MatchCeqlError
from ceql.spark.session.connect import apply, has_extension, is_connect
from ceql.spark.udtf.call import CallInfo

__all__ = ["dataset_option", "match_spaseq"]

Dataset = str | Mapping[str, "str | os.PathLike[str]"] | Sequence["str | os.PathLike[str]"]


def dataset_option(dataset: Dataset) -> str:
    """The ``dataset`` option's text for ``dataset``: the text itself, ``{graph IRI: path}``
    (each file is that named graph), or paths of TriG / N-Quads files."""
    if isinstance(dataset, str):
        return dataset
    if isinstance(dataset, Mapping):
        items = [f"{iri}={os.fspath(path)}" for iri, path in dataset.items()]
    else:
        items = [os.fspath(p) for p in dataset]
    bad = [i for i in items if "," in i]
    if bad:
        raise MatchCeqlError(f"{MATCH_SPASEQ}: the dataset item {bad[0]!r} holds a comma, which "
                             "separates items; rename the file.")
    return ",".join(items)


def match_spaseq(df: Any, query: str, *, time: str = "time", stream: str = "stream",
                 graph: str = "graph", dataset: Dataset | None = None,
                 partition_by: str | Sequence[str] | None = None,
                 types: str | Mapping[str, str] | None = None, jvm: bool | None = None) -> Any:
    """The matches of SPAseq ``query`` over DataFrame ``df`` (one event per row: its stream,
    time and graph in the columns named), as a DataFrame with the columns of SQL's
    ``MATCH_SPASEQ``: ``match_id``, the ``partition_by`` columns, ``match_start``,
    ``match_end``, ``positions``, then one column per SELECT variable.

    ``dataset``: the static named graphs ``GRAPH <iri>`` reads, as files every worker can
    read — ``{"http://example/kb": "/data/kb.ttl"}``, a list of TriG / N-Quads paths, or the
    SQL option's text. ``types``: Spark types of SELECT variables (``{"p": "bigint"}`` or
    ``"p bigint"``; the others are STRING). The query is compiled (and the dataset read) here
    first, so their errors come at once. ``jvm``: use the shim (default: when the session has
    ceql's extension; never through Spark Connect).
    """
    import ceql.spaseq  # needs pyoxigraph (the spaseq extra): imported when used
    from ceql.spark.udtf.spaseq_plan import DatasetAccess, load_dataset

    option = None if dataset is None else dataset_option(dataset)
    ceql.spaseq.compile(query, dataset=None if option is None else load_dataset(option))
    options: dict[str, str] = {"query": query, "time": time, "stream": stream, "graph": graph}
    if option is not None:
        options["dataset"] = option
    if types is not None:
        options["types"] = (types if isinstance(types, str)
                             else ", ".join(f"{k} {v}" for k, v in types.items()))
    parts = (partition_by,) if isinstance(partition_by, str) else tuple(partition_by or ())
    spark = df.sparkSession
    if jvm is None:
        jvm = not is_connect(spark) and has_extension(spark)
    if jvm:
        from pyspark.sql import DataFrame

        fns = spark._jvm.org.apache.spark.sql.ceql.CeqlTableFunctions
        return DataFrame(fns.dataFrame(MATCH_SPASEQ, df._jdf, list(parts), options), spark)
    from pyspark.sql.functions import lit

    args = {k: lit(v) for k, v in options.items()}
    args[CALL_ARGUMENT] = lit(CallInfo(partition_by=parts).to_json())
    if option is None or is_connect(spark):  # a Connect client grants nothing on the server
        return apply(spark, MATCH_SPASEQ, df.asTable(), **args)
    # The caller names its own files, so its call may read them: granted in the environment
    # of the Python workers Spark starts for this function object (pyspark copies
    # ``environment`` when the object's Java side is made, in ``apply``), which no caller of
    # the Python table function can set — unlike the call description.
    env = spark.sparkContext.environment
    before = env.get(ENV_DATASET_ACCESS)
    env[ENV_DATASET_ACCESS] = DatasetAccess(trusted=True).env_value()
    try:
        return apply(spark, MATCH_SPASEQ, df.asTable(), **args)
    finally:
        if before is None:
            del env[ENV_DATASET_ACCESS]
        else:
            env[ENV_DATASET_ACCESS] = before
