#!/usr/bin/env python3
"""MATCH_CEQL end to end on local[2] against the same pattern written as Spark SQL joins.

Usage (from the repository root)::

    .venv/bin/python bench/spark.py [--sizes 1000000,20000000] [--windows 1,4] [--repeat 3]

The workload is P3's shape per ticker: ``SELL AS e1; BUY AS e2; BUY AS e3`` over the anchor
stock stream (``<shared>/anchors/gen_stock.py``, stored once as Parquet in the anchors cache),
``PARTITION BY [name]``, at a window of T and 4T seconds of event time, all matches
(``CONSUME BY NONE``: the meaning a join can express). Three formulations run on the same
Parquet input in one Spark session, each timed with a ``noop`` write of
``(name, e1.id, e2.id, e3.id)``:

* ``ceql``: ``MATCH_CEQL(TABLE(S), query => '<CEQL>', time_unit => 'us')``;
* ``range join``: what a Spark user writes first, a self-join per role on the ticker with the
  time range in the join condition;
* ``bucketed join``: the tuned version, which adds a time bucket of the window's width to the
  join key (each ``e1`` row exploded to its own and the next bucket) so that the join compares
  only rows that are close in time.

Before timing, one pass of each formulation computes ``count(*)`` and a sum of row hashes of
its matches: the three must agree (the same matches), or the row says ``DIFFER``.  A run that
exceeds ``--timeout`` seconds is cancelled and reported as ``>timeout``.  Prints a Markdown
table and writes JSON lines to ``bench/out/spark-<date-time>.jsonl``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import engine as eb

FILTERS = {"e1": "volume = 10000", "e2": "volume >= 5000", "e3": "volume = 10000"}
ROLES = (("e1", "SELL"), ("e2", "BUY"), ("e3", "BUY"))


# --------------------------------------------------------------------------- input
def ensure_parquet(events: int, seed: int) -> Path:
    """The anchor stream as Parquet (several row groups), converted from its CSV once."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    path = eb.CACHE_DIR / f"stock_{events}_seed{seed}.parquet"
    if path.exists():
        return path
    csv_file = eb.ensure_stream(events, seed)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    schema = pa.schema([("type", pa.string()), ("id", pa.int64()), ("name", pa.string()),
                        ("volume", pa.int64()), ("price", pa.float64()), ("ts", pa.int64())])
    reader = pacsv.open_csv(csv_file, convert_options=pacsv.ConvertOptions(
        column_types=schema), read_options=pacsv.ReadOptions(block_size=16 << 20))
    with pq.ParquetWriter(tmp, schema) as w:
        for batch in reader:
            w.write_batch(batch, row_group_size=1 << 20)
    tmp.replace(path)
    return path


# --------------------------------------------------------------------------- formulations
def ceql_sql(window_s: int) -> str:
    """MATCH_CEQL over view S, projected to (name, i1, i2, i3)."""
    cond = " AND ".join(f"{v}[{FILTERS[v]}]" for v, _ in ROLES)
    query = (f"SELECT e1, e2, e3 FROM S WHERE SELL AS e1; BUY AS e2; BUY AS e3 FILTER {cond} "
             f"PARTITION BY [name] WITHIN {window_s} SECONDS")
    return ("SELECT name, e1[0].id AS i1, e2[0].id AS i2, e3[0].id AS i3 FROM "
            f"MATCH_CEQL(TABLE(S), query => '{query}', time_unit => 'us')")


def _roles_cte(bucket_us: int | None) -> str:
    parts = []
    for v, typ in ROLES:
        extra = f", ts DIV {bucket_us} AS bk" if bucket_us else ""
        parts.append(f"{v} AS (SELECT name, id, ts{extra} FROM S "
                     f"WHERE type = '{typ}' AND {FILTERS[v]})")
    return "WITH " + ", ".join(parts)


def range_join_sql(window_s: int) -> str:
    """Self-joins on the ticker with the time range in the join condition."""
    w = window_s * 1_000_000
    return (f"{_roles_cte(None)} "
            "SELECT e1.name, e1.id AS i1, e2.id AS i2, e3.id AS i3 FROM e1 "
            f"JOIN e2 ON e2.name = e1.name AND e2.ts > e1.ts AND e2.ts - e1.ts <= {w} "
            f"JOIN e3 ON e3.name = e1.name AND e3.ts > e2.ts AND e3.ts - e1.ts <= {w}")


def bucketed_join_sql(window_s: int) -> str:
    """The range join with a time bucket (of the window's width) in the equi-join keys.

    A match lies in ``[e1.ts, e1.ts + W]``, which meets buckets ``bk(e1)`` and ``bk(e1) + 1``:
    ``e1`` (then each ``(e1, e2)`` pair) is exploded to both and joined on equal buckets.
    """
    w = window_s * 1_000_000
    return (f"{_roles_cte(w)}, "
            "e1x AS (SELECT name, id, ts, bk, jb FROM e1 "
            "LATERAL VIEW explode(array(bk, bk + 1)) x AS jb), "
            "p AS (SELECT e1x.name, e1x.id AS i1, e1x.ts AS t1, e1x.bk AS b1, e2.id AS i2, "
            "e2.ts AS t2 FROM e1x JOIN e2 ON e2.name = e1x.name AND e2.bk = e1x.jb "
            f"AND e2.ts > e1x.ts AND e2.ts - e1x.ts <= {w}), "
            "px AS (SELECT p.*, jb FROM p LATERAL VIEW explode(array(b1, b1 + 1)) x AS jb) "
            "SELECT px.name, px.i1, px.i2, e3.id AS i3 FROM px JOIN e3 ON e3.name = px.name "
            f"AND e3.bk = px.jb AND e3.ts > px.t2 AND e3.ts - px.t1 <= {w}")


FORMULATIONS: dict[str, Callable[[int], str]] = {
    "ceql": ceql_sql,
    "ceql, no prefilter": ceql_sql,
    "bucketed join": bucketed_join_sql,
    "range join": range_join_sql,
}
#: Ablations run on streams of at most 5 M events only.
SMALL_ONLY = frozenset({"ceql, no prefilter"})
#: Session settings a formulation runs with (restored after it).
SETTINGS = {"ceql, no prefilter": {"spark.ceql.prefilter.enabled": "false"}}


# --------------------------------------------------------------------------- running
class Timeout(Exception):
    """A run was cancelled after ``--timeout`` seconds."""


def run_action(spark: Any, action: Callable[[], Any], timeout: float) -> Any:
    """``action()`` in a Spark job group that a timer cancels after ``timeout`` seconds."""
    sc = spark.sparkContext
    group = f"ceql-bench-{time.monotonic_ns()}"
    sc.setJobGroup(group, "bench/spark.py", interruptOnCancel=True)
    fired = threading.Event()

    def cancel() -> None:
        fired.set()
        sc.cancelJobGroup(group)

    timer = threading.Timer(timeout, cancel)
    timer.start()
    try:
        return action()
    except Exception:
        if fired.is_set():
            raise Timeout from None
        raise
    finally:
        timer.cancel()
        sc.setLocalProperty("spark.jobGroup.id", None)


def fingerprint(spark: Any, sql: str, timeout: float) -> tuple[int, int]:
    """(number of matches, sum of their row hashes): equal sets give equal fingerprints."""
    row = run_action(spark, lambda: spark.sql(
        "SELECT count(*) AS n, "
        "coalesce(sum(CAST(xxhash64(name, i1, i2, i3) AS DECIMAL(38, 0))), 0) AS h "
        f"FROM ({sql})").collect()[0], timeout)
    return int(row["n"]), int(row["h"])


def timed(spark: Any, sql: str, timeout: float) -> float:
    """Seconds to compute every row of ``sql`` (a ``noop`` write)."""
    t0 = time.perf_counter()
    run_action(spark, lambda: spark.sql(sql).write.format("noop").mode("overwrite").save(),
               timeout)
    return time.perf_counter() - t0


def measure(spark: Any, name: str, sql: str, size: int, window: int, repeat: int,
            timeout: float) -> dict[str, Any]:
    """Fingerprint, then time ``repeat`` runs of one formulation; one JSON-able record."""
    rec: dict[str, Any] = {"formulation": name, "events": size, "window_s": window,
                           "load": eb.load_avg()}
    try:
        rec["matches"], rec["hash"] = fingerprint(spark, sql, timeout)
        runs = [timed(spark, sql, timeout) for _ in range(repeat)]
    except Timeout:
        rec["timeout_s"] = timeout
        return rec
    rec["runs_s"] = [round(r, 3) for r in runs]
    rec["seconds"] = round(statistics.median(runs), 3)
    rec["events_per_s"] = round(size / statistics.median(runs))
    return rec


def session(driver_memory: str) -> Any:
    """local[2] with the shim (ceql.spark.local_session), UI off, quiet logs."""
    from ceql.shim import jar as build_jar
    from ceql.spark import local_session

    build_jar.build()
    spark = local_session(**{"spark.driver.memory": driver_memory,
                             "spark.sql.shuffle.partitions": "8",
                             "spark.log.level": "ERROR"})
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def row_md(rec: dict[str, Any], base: dict[str, Any] | None) -> str:
    """One Markdown row; the ratio is this formulation's time over ceql's."""
    if "timeout_s" in rec:
        secs, eps = f">{rec['timeout_s']:.0f}", f"<{rec['events'] / rec['timeout_s']:,.0f}"
    else:
        secs, eps = f"{rec['seconds']:.2f}", f"{rec['events_per_s']:,}"
    ratio = ""
    if base and "seconds" in base:
        slow = rec.get("seconds", rec.get("timeout_s", 0))
        ratio = ("≥" if "timeout_s" in rec else "") + f"{slow / base['seconds']:.1f}×"
    same = rec.get("same", "")
    matches = f"{rec['matches']:,}" if "matches" in rec else "?"
    return (f"| {rec['events']:,} | {rec['window_s']} s | {rec['formulation']} | "
            f"{matches} | {secs} | {eps} | {ratio} | {same} | "
            f"{rec['load']} |")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1000000,20000000",
                   help="stream lengths, comma-separated (default 1000000,20000000)")
    p.add_argument("--windows", default="1,4", help="windows in seconds: T and 4T (default 1,4)")
    p.add_argument("--repeat", type=int, default=3, help="timed runs per row (median)")
    p.add_argument("--big-repeat", type=int, default=1,
                   help="timed runs per row for streams over 5 M events (default 1)")
    p.add_argument("--timeout", type=float, default=600,
                   help="seconds before a run is cancelled (default 600)")
    p.add_argument("--only", default="", help="formulations to run, comma-separated")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--driver-memory", default="8g")
    a = p.parse_args(argv)
    sizes = [int(x) for x in a.sizes.split(",") if x]
    windows = [int(x) for x in a.windows.split(",") if x]
    chosen = [f.strip() for f in a.only.split(",") if f.strip()] or list(FORMULATIONS)
    out_dir = eb.BENCH_DIR / "out"
    out_dir.mkdir(exist_ok=True)
    out = out_dir / f"spark-{dt.datetime.now():%Y-%m-%d-%H%M%S}.jsonl"
    spark = session(a.driver_memory)
    lines = ["| events | window | formulation | matches | seconds | events/s | × ceql's time "
             "| same matches | load |", "|---:|---:|---|---:|---:|---:|---:|---|---:|"]
    bad = False
    try:
        for size in sizes:
            path = ensure_parquet(size, a.seed)
            spark.read.parquet(str(path)).createOrReplaceTempView("S")
            repeat = a.repeat if size <= 5_000_000 else a.big_repeat
            for window in windows:
                base: dict[str, Any] | None = None
                for name in chosen:
                    if size > 5_000_000 and name in SMALL_ONLY:
                        continue
                    settings = SETTINGS.get(name, {})
                    for k, v in settings.items():
                        spark.conf.set(k, v)
                    try:
                        rec = measure(spark, name, FORMULATIONS[name](window), size, window,
                                      repeat, a.timeout)
                    finally:
                        for k in settings:
                            spark.conf.unset(k)
                    if base is None:
                        base = rec
                    elif "hash" in rec and "hash" in base:
                        rec["same"] = ("equal" if (rec["matches"], rec["hash"])
                                       == (base["matches"], base["hash"]) else "DIFFER")
                        bad = bad or rec["same"] == "DIFFER"
                    if "seconds" in rec and "seconds" in base and rec is not base:
                        rec["times_ceql"] = round(rec["seconds"] / base["seconds"], 2)
                    with out.open("a") as f:
                        f.write(json.dumps(rec) + "\n")
                    lines.append(row_md(rec, base if rec is not base else None))
                    print(lines[-1], file=sys.stderr, flush=True)
    finally:
        spark.stop()
    print(f"Machine: {eb.cpu_model()}, {eb.ram_gib():.0f} GiB; Spark local[2]; "
          f"records in {out.relative_to(eb.REPO_DIR)}\n")
    print("\n".join(lines))
    return 2 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
