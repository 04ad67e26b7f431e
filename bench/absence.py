#!/usr/bin/env python3
"""Absence per ticker (issue 12, benchmark (c)): a trailing NOT against the Spark anti-join.

Usage (from the repository root)::

    .venv/bin/python bench/absence.py [--events 1000000] [--big 20000000] [--timeout 900]

The query — a sale no higher purchase of the same ticker follows within 10 seconds::

    SELECT * FROM S WHERE SELL AS a ; NOT (BUY AS n) FILTER n[price > a.price]
    PARTITION BY [name] WITHIN 10 SECONDS

on the anchor stock stream (``../shared/anchors/gen_stock.py``, read from its Parquet copy in
batches of 256 Ki rows). Each complex event waits until 10 seconds after its sale have passed
(or the input ends), so the engine holds every sale of the last 10 seconds and every purchase
a waiting sale could still meet: memory is bounded by the window, not the stream.

At ``--events``: the engine (a fresh process, peak RSS), the Spark ``LEFT ANTI JOIN`` a user
writes (sales without a purchase of the same name in ``(ts, ts + 10 s]`` at a higher price;
local[2]) and MATCH_CEQL in the same session. The anti-join compares every sale of a ticker
with every purchase of it (the time range is not an equi-join key), so on the 20 most frequent
tickers (AAPL alone ≈65 k sales × 65 k purchases) it runs past ``--spark-timeout``; the same
three also run with those tickers left out (``a[name NOT IN {…}]``, as §9 (a) does), where
Spark finishes. ``--gap``: instead, what a NOT between two elements costs when its β is
frequent (every BUY, half the stream), checked at the first chance (the gap's guard; with a
condition on the sale, an index over the waiting runs), against the same sequence without the
NOT. At ``--big``: the engine on the whole query again, for the throughput and
peak-RSS ratios against ``--events``. Every formulation's matches are fingerprinted (count,
sum of the sale's id and of its square mod 2^61-1) and must agree. Writes JSON lines to
``bench/out/absence-<date-time>.jsonl``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import correlation as cb
import engine as eb

OUT = Path(__file__).resolve().parent / "out"
WINDOW_US = 10_000_000
QUERY = ("SELECT * FROM S WHERE SELL AS a ; NOT (BUY AS n) FILTER n[price > a.price] "
         "PARTITION BY [name] WITHIN 10 SECONDS")
ANTI_JOIN = (
    "WITH a AS (SELECT name, id, ts, price FROM S WHERE type = 'SELL'), "
    "b AS (SELECT name, ts, price FROM S WHERE type = 'BUY') "
    "SELECT a.id AS i1 FROM a LEFT ANTI JOIN b ON b.name = a.name AND b.ts > a.ts "
    f"AND b.ts - a.ts <= {WINDOW_US} AND b.price > a.price")


# A NOT between two elements with a frequent β (every BUY, half the stream): what the check at
# the first chance costs, against the same sequence without the NOT.
GAP = {
    "without NOT": "SELECT * FROM S WHERE SELL AS a ; BUY AS b FILTER a[name = 'AMZN'] AND "
                   "b[name = 'AMZN'] AND b[volume >= 4000] WITHIN 10 SECONDS",
    "NOT BUY between": "SELECT * FROM S WHERE SELL AS a ; NOT BUY ; BUY AS b FILTER "
                       "a[name = 'AMZN'] AND b[name = 'AMZN'] AND b[volume >= 4000] "
                       "WITHIN 10 SECONDS",
    "NOT higher BUY between": "SELECT * FROM S WHERE SELL AS a ; NOT (BUY AS n) ; BUY AS b "
                              "FILTER n[price > a.price] AND a[name = 'AMZN'] AND "
                              "b[name = 'AMZN'] AND b[volume >= 4000] WITHIN 10 SECONDS",
}


def restricted(top: Sequence[str]) -> tuple[str, str, str]:
    """The query, the anti-join and MATCH_CEQL without the ``top`` tickers' sales."""
    names = ", ".join(f"'{n}'" for n in top)
    query = QUERY.replace("FILTER n[price > a.price]",
                          f"FILTER n[price > a.price] AND a[name NOT IN {{{names}}}]")
    anti = ANTI_JOIN.replace("WHERE type = 'SELL'",
                             f"WHERE type = 'SELL' AND name NOT IN ({names})")
    return query, anti, match_ceql(query)


def match_ceql(query: str) -> str:
    return ("SELECT a[0].id AS i1 FROM MATCH_CEQL(TABLE(S), query => '"
            + query.replace("'", "\\'") + "', time_unit => 'us')")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--big", type=int, default=20_000_000, help="the large size (0: skip)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--spark-timeout", type=float, default=300,
                   help="the anti-join over every ticker (quadratic per ticker)")
    p.add_argument("--no-spark", action="store_true", help="the engine alone")
    p.add_argument("--gap", action="store_true",
                   help="only the cost of a NOT between two elements with a frequent β")
    args = p.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    out = OUT / f"absence-{dt.datetime.now():%Y%m%d-%H%M%S}.jsonl"

    def note(rec: dict[str, Any]) -> dict[str, Any]:
        rec["load"] = eb.load_avg()
        with out.open("a") as f:
            f.write(json.dumps(rec) + "\n")
        print(json.dumps(rec), flush=True)
        return rec

    if args.gap:
        for name, query in GAP.items():
            note({"scope": "gap", "formulation": name, "events": args.events,
                  **cb.run_child("a", args.events, args.seed, query, args.timeout)})
        print(f"\nwrote {out}")
        return 0
    top = cb.top_names(args.events, args.seed)
    r_query, r_anti, r_match = restricted(top)
    spark = None
    if not args.no_spark:
        sb = importlib.import_module("spark")
        spark = sb.session("8g")
        spark.read.parquet(str(sb.ensure_parquet(args.events, args.seed))) \
            .createOrReplaceTempView("S")
    small: dict[str, Any] = {}
    for scope, query, anti, mc, timeout in (
            ("all tickers", QUERY, ANTI_JOIN, match_ceql(QUERY), args.spark_timeout),
            ("without the 20 most frequent", r_query, r_anti, r_match, args.timeout)):
        rec = note({"scope": scope, "formulation": "engine", "events": args.events,
                    **cb.run_child("a", args.events, args.seed, query, args.timeout)})
        if scope == "all tickers":
            small = rec
        if spark is None:
            continue
        for name, sql in (("Spark anti-join", anti), ("MATCH_CEQL", mc)):
            other = note({"scope": scope, **cb.spark_measure(spark, name, sql, ("i1",),
                                                              args.events, timeout)})
            if "seconds" in rec and "seconds" in other:
                same = other.get("fingerprint") == rec.get("fingerprint")
                print(f"  {scope}: {name} / engine = {other['seconds'] / rec['seconds']:.2f}x "
                      f"({'same matches' if same else 'DIFFER'})")
    if args.big:
        big = note({"scope": "all tickers", "formulation": "engine", "events": args.big,
                    **cb.run_child("a", args.big, args.seed, QUERY, args.timeout * 4)})
        if "seconds" in small and "seconds" in big:
            print(f"  {args.big} vs {args.events} events: throughput "
                  f"{big['events_per_s'] / small['events_per_s']:.2f}x, peak RSS "
                  f"{big['rss_mb'] / small['rss_mb']:.2f}x")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
