"""The ceql demo that `make run` ends with: the CORE paper's stock queries in Spark SQL.

It starts an embedded local Spark session with the ceql extension, registers the sample stream
``examples/stock.csv`` as the view ``stock`` (``ts`` turned from integer microseconds into a
TIMESTAMP, so ``WITHIN 10 SECONDS`` means event time), runs four of the paper's queries with
the ``MATCH_CEQL( <CEQL> )`` syntax, prints the first matches of each as a table, and checks
that the pure-Python engine, run on the same file without Spark, finds the same matches.

Spark's own chatter is kept out of the way by ``ceql.spark.local_session()``, as in every
session it starts: Spark logs errors only, from the JVM's start on, and the JVM's start-up
warning about incubator modules is dropped from its standard error; everything else the JVM or
its Python workers print, errors first of all, still shows.

    .venv/bin/python examples/demo.py [--rows N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.csv as pacsv

import ceql

HERE = Path(__file__).resolve().parent
STOCK = HERE / "stock.csv"

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
    spark = ceql.spark.local_session()  # quiet: see the module's text
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
    print(f"Done in {time.perf_counter() - began:.1f} s. "
          + ("Spark SQL and the pure engine agree on every query." if agree else
             "Spark SQL and the pure engine DISAGREE."))
    print("Same from the shell, without Spark:  .venv/bin/ceql run examples/queries/q7.ceql "
          "--input examples/stock.csv --time ts --time-unit us")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
