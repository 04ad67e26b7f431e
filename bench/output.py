#!/usr/bin/env python3
"""Output throughput of huge answers (issue 28 item 1): MatchRunner's batches, and MATCH_CEQL.

Usage (from the repository root)::

    PYTHONPATH=python .venv/bin/python bench/output.py [--budgets 8m,64m] [--repeat 3] [--spark]

Two answers, each timed from the input batch to the last output batch (built, then dropped):

* ``burst``: the 17 rows of issue 28 — one ``A``, 15 ``B`` with a 4 kB string, one ``C`` —
  under ``A AS a ; B+ AS b ; C AS c PARTITION BY [k] WITHIN 100 SECONDS``: 32 767 matches of
  up to 60 kB each, about 0.95 GB of Arrow output;
* ``pairs``: 20 000 events of types A and B at random (seed 5) under
  ``A AS a ; B AS b WITHIN 200 EVENTS``: about a million small matches.

For each budget (``spark.ceql.output.maxBatchBytes``; rows capped at Spark's default 10 000)
it prints matches/s, MB/s of Arrow output, the number of batches, the largest batch and the
peak of Arrow's allocator above its level before the run. Run it with ``PYTHONPATH`` of
another tree to compare (a tree before the bounded batches returns one batch per input batch:
its row is ``one batch``). ``--spark`` also times MATCH_CEQL on local[2] over the burst
(``count(*)`` of the matches, after one warm-up run) with each budget.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.types import LongType, StringType, StructField, StructType

from ceql.spark.udtf.call import CallInfo
from ceql.spark.udtf.ceql_plan import plan_match
from ceql.spark.udtf.runner import MatchRunner

SCHEMA = StructType([StructField("type", StringType()), StructField("k", LongType()),
                     StructField("ts", LongType()), StructField("payload", StringType())])
ARROW = pa.schema([("type", pa.string()), ("k", pa.int64()), ("ts", pa.int64()),
                   ("payload", pa.string())])
BURST = "SELECT * FROM S WHERE A AS a ; B+ AS b ; C AS c PARTITION BY [k] WITHIN 100 SECONDS"
PAIRS = "SELECT * FROM S WHERE A AS a ; B AS b WITHIN 200 EVENTS"


def burst_rows() -> list[dict[str, Any]]:
    return ([{"type": "A", "k": 1, "ts": 0, "payload": "a"}]
            + [{"type": "B", "k": 1, "ts": i + 1, "payload": "x" * 4096} for i in range(15)]
            + [{"type": "C", "k": 1, "ts": 16, "payload": "c"}])


def pair_rows() -> list[dict[str, Any]]:
    rnd = random.Random(5)
    return [{"type": rnd.choice("AB"), "k": 1, "ts": i, "payload": f"p{i}"}
            for i in range(20_000)]


def parse_size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def batches(query: str, rows: list[dict[str, Any]], budget: int | None) -> Iterator[Any]:
    """The output batches of one runner over ``rows`` (the budget where the tree has one)."""
    runner = MatchRunner(plan_match(SCHEMA, {"query": query, "time": "ts"}, CallInfo()))
    rb = pa.RecordBatch.from_pylist(rows, schema=ARROW)
    try:
        from ceql.spark.udtf.batching import BatchLimits
    except ImportError:  # a tree before bounded batches: one batch per call
        for out in (runner.feed(rb), runner.close()):
            if out is not None:
                yield out
        return
    limits = BatchLimits(10_000, budget if budget is not None else 1 << 40)
    yield from runner.feed(rb, limits)
    yield from runner.close(limits)


def measure(query: str, rows: list[dict[str, Any]], budget: int | None) -> dict[str, Any]:
    before = pa.total_allocated_bytes()
    peak = count = size = largest = n = 0
    t0 = time.perf_counter()
    for b in batches(query, rows, budget):
        peak = max(peak, pa.total_allocated_bytes() - before)
        count += b.num_rows
        size += b.nbytes
        largest = max(largest, b.nbytes)
        n += 1
        del b
    return {"seconds": time.perf_counter() - t0, "matches": count, "bytes": size,
            "batches": n, "largest": largest, "peak": peak}


def spark_rows(budgets: list[str], repeat: int) -> None:
    import ceql.spark

    spark = ceql.spark.local_session(**{"spark.log.level": "FATAL"})
    df = spark.createDataFrame(burst_rows(), "type string, k long, ts long, payload string")
    print("\n| MATCH_CEQL, burst | budget | matches | seconds (median) | matches/s | MB/s |")
    print("|---|---|---:|---:|---:|---:|")
    for budget in budgets:
        spark.conf.set("spark.ceql.output.maxBatchBytes", budget)
        query = ceql.spark.match(df, BURST, time="ts").selectExpr("count(*) AS n")
        query.collect()  # warm-up: workers, compiled query
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            n = query.collect()[0]["n"]
            times.append(time.perf_counter() - t0)
        t = statistics.median(times)
        print(f"| | {budget} | {n} | {t:.2f} | {n / t:,.0f} | {0.95 * 1024 / t:,.0f} |")
    spark.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budgets", default="8m,64m")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--spark", action="store_true")
    args = ap.parse_args()
    budgets = args.budgets.split(",")
    print(f"{platform.node()}: {platform.python_implementation()} {platform.python_version()}, "
          f"pyarrow {pa.__version__}, load {os.getloadavg()[0]:.1f}")
    print("\n| answer | budget | matches | seconds (median) | matches/s | MB/s | batches | "
          "largest batch | Arrow peak |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, query, rows in (("burst", BURST, burst_rows()), ("pairs", PAIRS, pair_rows())):
        for budget in (*budgets, "none"):
            size = None if budget == "none" else parse_size(budget)
            runs = [measure(query, rows, size) for _ in range(args.repeat)]
            r = sorted(runs, key=lambda x: x["seconds"])[len(runs) // 2]
            t = r["seconds"]
            print(f"| {name} | {budget} | {r['matches']:,} | {t:.2f} | "
                  f"{r['matches'] / t:,.0f} | {r['bytes'] / 2**20 / t:,.0f} | {r['batches']} | "
                  f"{r['largest'] / 2**20:.1f} MB | {r['peak'] / 2**20:.0f} MB |")
    if args.spark:
        spark_rows(budgets, args.repeat)


if __name__ == "__main__":
    main()
