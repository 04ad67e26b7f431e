"""The job ``tests/e2e/test_cluster.py`` submits to a standalone cluster with ``spark-submit``.

It reads the Parquet files of ``--input`` as the view ``stock``, runs MATCH_CEQL in every SQL
spelling and through the DataFrame API (``--forms``), and writes what each returned — per match
its ``match_id``, partition key and the ``seq`` of each variable's events — with what the
cluster did (executors and their tasks, the Python the executors ran, where their ceql came
from) to the JSON file ``--out``. The test compares the matches with the local engine's.

``--pause S --markers DIR`` slows every task of the last form's MATCH_CEQL stage by ``S``
seconds: each first writes a file named by its Python worker's pid to ``DIR``, so the test
knows which worker's executor is busy before it kills that worker.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import ceql
import ceql.spark as cs

# the queries; the test runs the same ones through the local engine
PAIRS = ("SELECT a, b FROM stock WHERE SELL AS a ; BUY AS b FILTER a[price > 50] "
         "PARTITION BY [name] WITHIN 30 SECONDS")
PAIRS_NO_PARTITION = ("SELECT a, b FROM stock WHERE SELL AS a ; BUY AS b FILTER a[price > 50] "
                      "WITHIN 30 SECONDS")
RISING = ("SELECT NEXT a, b FROM stock WHERE SELL AS a ; NOT CANCEL ; BUY AS b "
          "FILTER b[price > a.price] PARTITION BY [name] WITHIN 60 SECONDS")
SINGLE = ("SELECT * FROM stock WHERE SELL AS a ; BUY AS b ; BUY AS c "
          "FILTER a[name = 'n1'] AND b[name = 'n2'] AND c[name = 'n3'] WITHIN 20 SECONDS")


def sql_string(text: str) -> str:
    """A Spark SQL string literal for ``text``."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def inline(query: str) -> str:
    """``query`` as CEQL written inline: Spark SQL's INTERVAL for the window."""
    return query.replace("WITHIN 30 SECONDS", "WITHIN INTERVAL '30' SECOND")


#: form → (query the engine runs, partition columns, how Spark runs it)
FORMS: dict[str, tuple[str, tuple[str, ...], Callable[[Any], Any]]] = {
    "table partition/order": (PAIRS, ("name",), lambda s: s.sql(
        "SELECT * FROM MATCH_CEQL(TABLE(stock) PARTITION BY name ORDER BY ts, query => "
        f"{sql_string(PAIRS_NO_PARTITION)})")),
    "query partition": (PAIRS, ("name",), lambda s: s.sql(
        f"SELECT * FROM MATCH_CEQL(TABLE(stock), query => {sql_string(PAIRS)})")),
    "inline": (PAIRS, ("name",), lambda s: s.sql(
        f"SELECT m.* FROM MATCH_CEQL( {inline(PAIRS)} ) AS m")),
    "inline escaped": (PAIRS, ("name",), lambda s: s.sql(
        f"SELECT * FROM MATCH_CEQL( {PAIRS.replace(';', chr(92) + ';')}, time => 'ts' )")),
    "string literal": (PAIRS, ("name",), lambda s: s.sql(
        f"SELECT * FROM MATCH_CEQL({sql_string(PAIRS)})")),
    "double-quoted literal": (PAIRS, ("name",), lambda s: s.sql(
        f'SELECT * FROM MATCH_CEQL("{PAIRS}")')),
    "single partition": (SINGLE, (), lambda s: s.sql(
        "SELECT * FROM MATCH_CEQL(TABLE(stock) WITH SINGLE PARTITION ORDER BY ts, query => "
        f"{sql_string(SINGLE)})")),
    "match": (PAIRS, ("name",), lambda s: cs.match(
        s.table("stock"), PAIRS_NO_PARTITION, partition_by="name", time="ts")),
    "run": (PAIRS, ("name",), lambda s: cs.run(s, PAIRS)),
    "correlated": (RISING, ("name",), lambda s: cs.run(s, RISING, "stock")),
}


def found(rows: list[Any], query: str, partition: tuple[str, ...]) -> list[Any]:
    """Each row as ``[match_id, key, [[variable, [seq, …]], …]]``, sorted."""
    variables = ceql.compile(query).variables
    out = []
    for r in rows:
        bound = sorted([v, [e["seq"] for e in r[v]]] for v in variables if r[v])
        out.append([r["match_id"], [r[c] for c in partition], bound])
    return sorted(out, key=repr)


def where_ceql(batches: Iterator[Any]) -> Iterator[Any]:
    """On an executor: its Python, and the file ceql is imported from there."""
    import pyarrow as pa

    try:
        import ceql as shipped

        origin = shipped.__file__ or ""
    except ImportError as e:
        origin = f"ImportError: {e}"
    for _ in batches:
        pass
    yield pa.RecordBatch.from_pydict({"python": [sys.executable], "ceql": [origin],
                                      "cwd": [os.getcwd()]})


def pause(seconds: float, markers: str) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """A mapInArrow function that marks its task as started, waits, and passes rows on."""
    def slow(batches: Iterator[Any]) -> Iterator[Any]:
        Path(markers, str(os.getpid())).write_text("")
        time.sleep(seconds)
        yield from batches

    return slow


def rest(spark: Any, path: str) -> Any:
    """The driver's REST API (``/api/v1/applications/<app>/<path>``)."""
    url = f"{spark.sparkContext.uiWebUrl}/api/v1/applications/" \
          f"{spark.sparkContext.applicationId}/{path}"
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)


def main(argv: list[str] | None = None) -> None:
    """Run the forms, write the JSON report."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--input", required=True, help="a directory of Parquet files")
    p.add_argument("--out", required=True, help="the JSON report to write")
    p.add_argument("--forms", default=",".join(FORMS), help="comma-separated FORMS keys")
    p.add_argument("--pause", type=float, default=0.0)
    p.add_argument("--markers", default="")
    args = p.parse_args(argv)

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("ceql-cluster-test").getOrCreate()
    spark.read.parquet(args.input).createOrReplaceTempView("stock")
    forms = args.forms.split(",")
    results, seconds = {}, {}
    for i, name in enumerate(forms):
        t0 = time.perf_counter()
        query, partition, spark_call = FORMS[name]
        df = spark_call(spark)
        if args.pause and i == len(forms) - 1:
            df = df.mapInArrow(pause(args.pause, args.markers), df.schema)
        results[name] = found(df.collect(), query, partition)
        seconds[name] = round(time.perf_counter() - t0, 2)
    probe = spark.range(0, 8, 1, 8).mapInArrow(where_ceql, "python string, ceql string, "
                                                           "cwd string").collect()
    stages = rest(spark, "stages?status=complete")
    report = {
        "results": results,
        "seconds": seconds,  # per form, for whoever wonders where the time goes
        "executors": [{k: e[k] for k in ("id", "isActive", "totalTasks", "failedTasks",
                                         "completedTasks")}
                      for e in rest(spark, "allexecutors") if e["id"] != "driver"],
        "python": sorted({(r.python, r.ceql, r.cwd) for r in probe}),
        "failed_tasks": sum(s.get("numFailedTasks", 0) for s in stages),
        "stage_attempts": max((s["attemptId"] for s in stages), default=0),
        "master": spark.sparkContext.master,
    }
    Path(args.out).write_text(json.dumps(report))
    spark.stop()


if __name__ == "__main__":
    main()
