"""The ceql demo that `make run` ends with: the CORE paper's stock queries in Spark SQL.

It starts an embedded local Spark session with the ceql extension, registers the sample stream
``examples/stock.csv`` as the view ``stock`` (``ts`` turned from integer microseconds into a
TIMESTAMP, so ``WITHIN 10 SECONDS`` means event time), runs four of the paper's queries with
the ``MATCH_CEQL( <CEQL> )`` syntax, prints the first matches of each as a table, and checks
that the pure-Python engine, run on the same file without Spark, finds the same matches.

Spark's own chatter is kept out of the way: its logging starts at ERROR (``log4j2.properties``
beside this file, given to the JVM when it starts), and the few lines the JVM prints before
any logging is set up (``is_jvm_noise``) are dropped from its standard error; everything else
the JVM or its Python workers print, errors first of all, still shows.

    .venv/bin/python examples/demo.py [--rows N]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.csv as pacsv

import ceql

HERE = Path(__file__).resolve().parent
STOCK = HERE / "stock.csv"
LOG4J2 = HERE / "log4j2.properties"

#: (title, query file, variables to show): P3 plain and per volume, Q4 (OR), Q7 (Kleene +)
DEMO = [
    ("P3 - an INTC sale, then a RIMM purchase, then a QQQ purchase, within 10 s",
     "p3.ceql", ["e1", "e2", "e3"]),
    ("P3 per volume - the same three trades, all of one trade volume", "p3_by_volume.ceql",
     ["e1", "e2", "e3"]),
    ("Q4 - disjunction: MSFT sale, ORCL and CSCO trades (BUY or SELL), AMAT sale, within 10 s",
     "q4.ceql", ["msft", "oracle", "csco", "amat"]),
    ("Q7 - iteration: MSFT sale, QQQ trades of 4000 shares (one or more), AMAT sale, within 10 s",
     "q7.ceql", ["msft", "qqq", "amat"]),
]

#: What the JVM prints on standard error while starting, before its logging is configured or
#: whatever the configuration says: Spark's launcher always adds an incubator module, and the
#: default log4j profile announces itself. Nothing else is dropped.
_JVM_NOISE = re.compile(
    r"WARNING: Using incubator modules: "
    r"|Using Spark's default log4j profile: "
    r"|Setting default log level to \""
    r"|To adjust logging level use sc\.setLogLevel\(newLevel\)"
    r"|Setting Spark log level to \""
    r"|\d\d/\d\d/\d\d \d\d:\d\d:\d\d WARN NativeCodeLoader: Unable to load native-hadoop"
)
_filters: list[threading.Thread] = []


def is_jvm_noise(line: str) -> bool:
    """Whether ``line`` is start-up chatter of the JVM that a demo user need not read."""
    return _JVM_NOISE.match(line) is not None


def _pass_on(source: int, target: int) -> None:
    """Copy lines from ``source`` to ``target``, without the JVM's start-up chatter."""
    with os.fdopen(source, "rb") as lines:
        for raw in lines:
            if not is_jvm_noise(raw.decode("utf-8", "replace")):
                os.write(target, raw)
    os.close(target)


@contextlib.contextmanager
def jvm_stderr_filtered() -> Iterator[None]:
    """Processes started inside the block (the JVM, and the Python workers it forks) write
    their standard error through :func:`is_jvm_noise`; this process's own is untouched."""
    read, write = os.pipe()
    saved = os.dup(2)
    thread = threading.Thread(target=_pass_on, args=(read, os.dup(2)), daemon=True)
    thread.start()
    _filters.append(thread)
    os.dup2(write, 2)
    os.close(write)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def flush_jvm_stderr(timeout: float = 0.5) -> None:
    """Let the filters pass on what they have read (they end when the JVM exits)."""
    for thread in _filters:
        thread.join(timeout)


def ceql_text(path: Path) -> str:
    """The query without its ``--`` comment lines, to write inline in SQL."""
    return "\n".join(line for line in path.read_text().splitlines()
                     if not line.lstrip().startswith("--")).strip()


def engine_matches(path: Path) -> list[tuple[int, ...]]:
    """The pure-Python engine over the CSV (no Spark): each match's events' ids."""
    q = ceql.compile(path.read_text())
    table = pacsv.read_csv(STOCK)
    ids = table.column("id").to_pylist()
    return [tuple(ids[p] for p in m.positions)
            for m in q.evaluator(time="ts", time_unit="us").feed(table)]


def spark_matches(rows: list[Any], variables: tuple[str, ...]) -> list[tuple[int, ...]]:
    """Each Spark match's events' ids (the events of every variable, in id order)."""
    return [tuple(sorted({e["id"] for v in variables for e in (r[v] or [])})) for r in rows]


def show(df: Any, variables: list[str], n: int) -> None:
    """Print the first ``n`` matches: interval, then each variable's events as name@price #id."""
    from pyspark.sql import functions as F

    def events(v: str) -> Any:
        return F.concat_ws(", ", F.transform(v, lambda e: F.format_string(
            "%s %s@%.2f #%d", e["type"], e["name"], e["price"], e["id"])))

    cols = [F.date_format("match_start", "HH:mm:ss.SSS").alias("start"),
            F.date_format("match_end", "HH:mm:ss.SSS").alias("end")]
    df.select(*cols, *[events(v).alias(v) for v in variables]).show(n, truncate=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5, help="matches to print per query")
    args = parser.parse_args()
    began = time.perf_counter()
    print("Starting a local Spark session with the ceql extension…", flush=True)
    import ceql.spark

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # listen on this machine only
    with jvm_stderr_filtered():
        spark = ceql.spark.local_session(**{
            "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG4J2.as_uri()}",
        })
    raw = spark.read.csv(str(STOCK), header=True, inferSchema=True)
    raw.createOrReplaceTempView("stock_raw")
    spark.sql("CREATE OR REPLACE TEMP VIEW stock AS SELECT type, id, name, volume, price, "
              "timestamp_micros(ts) AS ts FROM stock_raw")
    n = spark.table("stock").count()
    print(f"View `stock`: {n:,} events from {STOCK.relative_to(HERE.parent)} "
          f"(ready in {time.perf_counter() - began:.1f} s)\n")
    agree = True
    for title, name, variables in DEMO:
        path = HERE / "queries" / name
        sql = f"SELECT * FROM MATCH_CEQL(\n{ceql_text(path)}\n)"
        print(f"== {title}  [examples/queries/{name}]")
        print("spark.sql(\"\"\"" + sql + "\"\"\")")
        t0 = time.perf_counter()
        df = spark.sql(sql).cache()
        rows = df.collect()
        seconds = time.perf_counter() - t0
        show(df, variables, args.rows)
        q = ceql.compile(path.read_text())
        on_spark = sorted(spark_matches(rows, q.variables))
        local = sorted(engine_matches(path))
        same = on_spark == local
        agree &= same
        print(f"Spark SQL: {len(rows):,} matches in {seconds:.1f} s; pure-Python engine on the "
              f"CSV: {len(local):,} matches; {'the same' if same else 'DIFFERENT'}\n")
        df.unpersist()
    spark.stop()
    flush_jvm_stderr()
    print(f"Done in {time.perf_counter() - began:.1f} s. "
          + ("Spark SQL and the pure engine agree on every query." if agree else
             "Spark SQL and the pure engine DISAGREE."))
    print("Same from the shell, without Spark:  .venv/bin/ceql run examples/queries/q7.ceql "
          "--input examples/stock.csv --time ts --time-unit us")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
