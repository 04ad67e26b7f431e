#!/usr/bin/env python3
"""Conditions between events (issue 11): the engine against the Spark SQL joins a user writes.

Usage (from the repository root)::

    .venv/bin/python bench/correlation.py [--events 1000000] [--big 20000000]
        [--transfers 1000000] [--only a,b,c,d] [--timeout 600]

* (a) ``SELL AS a ; BUY AS b FILTER b[price > a.price] AND a[name NOT IN {20 most frequent}]
  PARTITION BY [name] WITHIN 10 SECONDS`` on the anchor stock stream: the engine (Arrow
  batches, one process) against the Spark self-join on ``name`` with the time range and the
  price comparison in the join condition (local[2]), and MATCH_CEQL in the same session;
* (b) a rising trend ``(BUY AS b)+ FILTER b[price > PREV(price)] PARTITION BY [name]`` under
  NEXT, LAST and MAX (engine only), and how many complex events MAX has to output (counted by
  a dynamic programme, a lower bound);
* (c) a transfer chain ``T AS a ; T AS b ; T AS c FILTER b[src = a.dst] AND c[src = b.dst]
  WITHIN 1 HOURS`` over a generated payments stream (100 k accounts, ≈1 000 transfers an
  hour): the engine against the three-way Spark self-join (equi-join keys plus time range);
* (d) query (a) over ``--events`` and ``--big`` events: throughput and peak RSS ratios.

Each engine measurement runs in a fresh process (its own peak RSS). Every formulation's
matches are fingerprinted — count, sum of ``x`` and of ``x² mod 2^61-1`` where ``x`` encodes
the match's ids — and the fingerprints must agree, or the row says DIFFER. Writes JSON lines
to ``bench/out/correlation-<date-time>.jsonl`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import random
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import engine as eb

OUT = Path(__file__).resolve().parent / "out"
P = 1_000_003  # ids are below this many million: x = ((i1 * P) + i2) * P + i3 stays exact
M61 = (1 << 61) - 1
WINDOW_US = 10_000_000
HOUR_US = 3_600_000_000


# --------------------------------------------------------------------------- workloads
def top_names(events: int, seed: int, k: int = 20) -> list[str]:
    """The ``k`` most frequent tickers of the stream."""
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    names = pacsv.read_csv(eb.ensure_stream(events, seed),
                           convert_options=pacsv.ConvertOptions(include_columns=["name"]))
    counts = pc.value_counts(names.column("name")).to_pylist()
    return [d["values"] for d in sorted(counts, key=lambda d: (-d["counts"], d["values"]))[:k]]


def query_a(top: Sequence[str]) -> str:
    names = ", ".join(f"'{n}'" for n in top)
    return (f"SELECT * FROM S WHERE SELL AS a ; BUY AS b FILTER b[price > a.price] AND "
            f"a[name NOT IN {{{names}}}] PARTITION BY [name] WITHIN 10 SECONDS")


QUERY_B = "SELECT {s} * FROM S WHERE (BUY AS b)+ FILTER b[price > PREV(price)] PARTITION BY [name]"
QUERY_C = ("SELECT * FROM S WHERE T AS a ; T AS b ; T AS c FILTER b[src = a.dst] AND "
           "c[src = b.dst] WITHIN 1 HOURS")


def transfers_path(n: int, accounts: int, seed: int) -> Path:
    """A payments stream as Parquet: ``type`` T, ``id`` (position), ``src``, ``dst``,
    ``amount``, ``ts`` (µs, strictly increasing, ≈1 000 transfers an hour)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = eb.CACHE_DIR / f"transfers_{n}_{accounts}_seed{seed}.parquet"
    if path.exists():
        return path
    eb.CACHE_DIR.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(seed)
    t = 1_700_000_000_000_000
    ts, src, dst, amount = [], [], [], []
    for _ in range(n):
        t += 1 + int(rnd.expovariate(1000 / HOUR_US))
        ts.append(t)
        src.append(rnd.randrange(accounts))
        dst.append(rnd.randrange(accounts))
        amount.append(rnd.randrange(1, 10_000))
    table = pa.table({"type": ["T"] * n, "id": list(range(n)), "src": src, "dst": dst,
                      "amount": amount, "ts": ts})
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp, row_group_size=1 << 20)
    tmp.replace(path)
    return path


def max_matches_lower_bound(events: int, seed: int, cap: int = 2000) -> tuple[int, int]:
    """How many complex events (b)'s MAX outputs, counted without listing them, over the
    tickers with at most ``cap`` BUYs (a lower bound for the whole stream; O(n²) a ticker).

    A rising subsequence ``s1 < … < sk`` of one ticker's BUYs ending at ``sk`` is maximal
    iff no BUY before ``s1`` is cheaper than ``s1`` and no BUY between two consecutive
    members is priced strictly between them, so the maximal ones ending at ``j`` are counted
    by ``cnt[j] = [nothing before j is cheaper] + Σ cnt[i]`` over the ``i < j`` whose pair
    with ``j`` has no such BUY in between. Returns (tickers counted, matches)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    sb = importlib.import_module("spark")
    t = pq.read_table(sb.ensure_parquet(events, seed), columns=["type", "name", "price"])
    t = t.filter(pc.equal(t.column("type"), "BUY"))
    seqs: dict[str, list[float]] = {}
    for n, p in zip(t.column("name").to_pylist(), t.column("price").to_pylist(), strict=True):
        seqs.setdefault(n, []).append(p)
    tickers = total = 0
    for s in seqs.values():
        if len(s) > cap:
            continue
        tickers += 1
        cnt = [0] * len(s)
        low = float("inf")
        for j, pj in enumerate(s):
            c = 1 if low >= pj else 0
            low = min(low, pj)
            between = float("-inf")  # the dearest BUY cheaper than pj seen so far, going back
            for i in range(j - 1, -1, -1):
                pi = s[i]
                if pi < pj:
                    if between <= pi:
                        c += cnt[i]
                    between = max(between, pi)
            cnt[j] = c
        total += sum(cnt)
    return tickers, total


def _fold(fp: list[int], x: int) -> None:
    fp[0] += 1
    fp[1] += x
    fp[2] += x * x % M61


# --------------------------------------------------------------------------- engine (child)
def _parquet_batches(path: Path) -> Iterator[Any]:
    """A Parquet file one row group at a time, in batches of 256 Ki rows: the reader's memory
    does not grow with the file. (Arrow's streaming CSV reader held ≈900 MB reading the 20 M
    CSV, and ``ParquetFile.iter_batches`` kept ≈16 MB more of Arrow's pool per million rows
    read, measuring the readers instead of the engine.)"""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    for i in range(pf.metadata.num_row_groups):
        yield from pf.read_row_group(i).to_batches(1 << 18)


def _stock_batches(events: int, seed: int) -> Iterator[Any]:
    """The stock stream from its Parquet copy (see :func:`_parquet_batches`)."""
    sb = importlib.import_module("spark")
    yield from _parquet_batches(sb.ensure_parquet(events, seed))


def child(work: str, events: int, seed: int, query: str) -> dict[str, Any]:
    """Run one engine measurement in this process; a JSON-able record."""
    import warnings

    import ceql

    warnings.simplefilter("ignore", ceql.UnboundedOutputWarning)
    q = ceql.compile(query)
    fp = [0, 0, 0]
    if work == "c":
        batches: Any = _parquet_batches(transfers_path(events, 100_000, seed))
    else:
        batches = _stock_batches(events, seed)
    t0 = time.perf_counter()
    ev = q.evaluator(time="ts", time_unit="us")
    error = None
    try:
        for batch in batches:
            for m in ev.iter_feed(batch):  # matches not held per batch
                ps = m.positions
                x = 0
                for p in ps:
                    x = x * P + p
                _fold(fp, x)
        for m in ev.close():  # the input ended: what waited for a trailing NOT's window
            x = 0
            for p in m.positions:
                x = x * P + p
            _fold(fp, x)
    except ceql.CeqlError as exc:
        error = f"{type(exc).__name__}: {str(exc)[:160]}"
    seconds = time.perf_counter() - t0
    rec: dict[str, Any] = {"seconds": round(seconds, 3), "matches": fp[0],
                           "fingerprint": fp, "events_per_s": round(events / seconds),
                           "rss_mb": round(eb.rss_peak_mb(), 1)}
    if error:
        rec["error"] = error
    return rec


def run_child(work: str, events: int, seed: int, query: str, timeout: float) -> dict[str, Any]:
    """:func:`child` in a fresh interpreter (its own peak RSS)."""
    cmd = [sys.executable, __file__, "--child", work, "--events", str(events), "--seed",
           str(seed), "--query", query]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return {"timeout_s": timeout}
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


# --------------------------------------------------------------------------- Spark
def spark_fingerprint(spark: Any, sql: str, ids: Sequence[str], timeout: float,
                      run_action: Any) -> list[int]:
    x = "CAST(" + ids[0] + " AS DECIMAL(38, 0))"
    for i in ids[1:]:
        x = f"({x} * {P} + {i})"
    row = run_action(spark, lambda: spark.sql(
        f"SELECT count(*) AS n, coalesce(sum({x}), 0) AS s, "
        f"coalesce(sum(pmod({x} * {x}, {M61})), 0) AS q FROM ({sql})").collect()[0], timeout)
    return [int(row["n"]), int(row["s"]), int(row["q"])]


def spark_measure(spark: Any, name: str, sql: str, ids: Sequence[str], events: int,
                  timeout: float) -> dict[str, Any]:
    sb = importlib.import_module("spark")
    rec: dict[str, Any] = {"formulation": name, "events": events}
    try:
        rec["fingerprint"] = spark_fingerprint(spark, sql, ids, timeout, sb.run_action)
        rec["matches"] = rec["fingerprint"][0]
        seconds = sb.timed(spark, sql, timeout)
    except sb.Timeout:
        rec["timeout_s"] = timeout
        return rec
    rec["seconds"] = round(seconds, 3)
    rec["events_per_s"] = round(events / seconds)
    return rec


def self_join_a(top: Sequence[str]) -> str:
    names = ", ".join(f"'{n}'" for n in top)
    return ("WITH a AS (SELECT name, id, ts, price FROM S WHERE type = 'SELL' AND name NOT IN "
            f"({names})), b AS (SELECT name, id, ts, price FROM S WHERE type = 'BUY') "
            "SELECT a.id AS i1, b.id AS i2 FROM a JOIN b ON b.name = a.name AND b.ts > a.ts "
            f"AND b.ts - a.ts <= {WINDOW_US} AND b.price > a.price")


def match_ceql_a(top: Sequence[str]) -> str:
    q = query_a(top).replace("'", "\\'")
    return ("SELECT a[0].id AS i1, b[0].id AS i2 FROM MATCH_CEQL(TABLE(S), query => "
            f"'{q}', time_unit => 'us')")


SELF_JOIN_C = ("SELECT a.id AS i1, b.id AS i2, c.id AS i3 FROM P a "
               "JOIN P b ON b.src = a.dst AND b.ts > a.ts AND b.ts - a.ts <= "
               f"{HOUR_US} JOIN P c ON c.src = b.dst AND c.ts > b.ts AND c.ts - a.ts <= "
               f"{HOUR_US}")


# --------------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--big", type=int, default=20_000_000, help="(d)'s large size (0: skip)")
    p.add_argument("--transfers", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--only", default="a,b,c,d")
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--query", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.events, args.seed, args.query)))
        return 0
    only = set(args.only.split(","))
    OUT.mkdir(exist_ok=True)
    out = OUT / f"correlation-{dt.datetime.now():%Y%m%d-%H%M%S}.jsonl"
    records: list[dict[str, Any]] = []

    def note(rec: dict[str, Any]) -> None:
        rec["load"] = eb.load_avg()
        records.append(rec)
        with out.open("a") as f:
            f.write(json.dumps(rec) + "\n")
        print(json.dumps(rec), flush=True)

    top = top_names(args.events, args.seed)
    spark = None
    if {"a", "c"} & only:
        sb = importlib.import_module("spark")
        spark = sb.session("8g")
    if "a" in only:
        note({"work": "a", "formulation": "engine", "events": args.events,
              **run_child("a", args.events, args.seed, query_a(top), args.timeout)})
        assert spark is not None
        spark.read.parquet(str(sb.ensure_parquet(args.events, args.seed))) \
            .createOrReplaceTempView("S")
        for name, sql in (("Spark self-join", self_join_a(top)),
                          ("MATCH_CEQL", match_ceql_a(top))):
            note({"work": "a", **spark_measure(spark, name, sql, ("i1", "i2"), args.events,
                                               args.timeout)})
    if "b" in only:
        for s in ("NEXT", "LAST", "MAX"):
            note({"work": "b", "formulation": f"engine {s}", "events": args.events,
                  **run_child("b", args.events, args.seed, QUERY_B.format(s=s),
                              args.timeout)})
        tickers, count = max_matches_lower_bound(args.events, args.seed)
        note({"work": "b", "formulation": "MAX output size (counted, not listed)",
              "events": args.events, "tickers_counted": tickers, "matches_at_least": count})
    if "c" in only:
        note({"work": "c", "formulation": "engine", "events": args.transfers,
              **run_child("c", args.transfers, args.seed, QUERY_C, args.timeout)})
        assert spark is not None
        spark.read.parquet(str(transfers_path(args.transfers, 100_000, args.seed))) \
            .createOrReplaceTempView("P")
        note({"work": "c", **spark_measure(spark, "Spark self-join", SELF_JOIN_C,
                                           ("i1", "i2", "i3"), args.transfers,
                                           args.timeout)})
    if "d" in only and args.big:
        for n in (args.events, args.big):
            note({"work": "d", "formulation": "engine", "events": n,
                  **run_child("a", n, args.seed, query_a(top), args.timeout * 4)})
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
