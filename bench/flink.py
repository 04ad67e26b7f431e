#!/usr/bin/env python3
"""ceql against FlinkCEP (issue 31): same data, same patterns, same run.

Usage (from the repository root; needs Java 17's ``javac`` and a Python environment with
``apache-flink`` 2.3, whose jars the FlinkCEP program is compiled against)::

    .venv/bin/python bench/flink.py --flink-python /path/to/venv/bin/python \\
        [--events 100000] [--repeat 3] [--only p3,pair_contiguous,kleene]

Workloads (the CEQL text is in ``WORKLOADS``; FlinkCEP's pattern of the same name is in
``bench/flink/CepBench.java``: ``followedByAny`` for ``;``, ``next`` for ``:``,
``oneOrMore().allowCombinations()`` for ``+``, ``keyBy`` for PARTITION BY, ``noSkip`` for every
match, ``IterativeCondition`` for conditions between events), on the first ``--events`` events
of the anchor stock stream unless said otherwise:

* ``p3``, ``p3_4t``: SELL of INTC ; BUY of RIMM ; BUY of QQQ within 10 s (40 s), unkeyed;
* ``pair_contiguous``: a SELL and the ticker's next event, a dearer BUY, per ticker;
* ``pair_correlated``: query (a) of ``bench/correlation.py``, a SELL then any dearer BUY of the
  same ticker within 10 s, the SELL not of the 20 most frequent tickers of the whole 1 M-event
  stream (ties by name; the same 20 at every ``--events``);
* ``kleene``: every rising run ``(BUY AS b)+ FILTER b[price > PREV(price)]`` of a ticker's BUYs
  (any events skipped, every combination) within 100 ms;
* ``dense_rows``: SELL ; BUY ; BUY ; SELL of one ticker within 100 ms, every combination (a
  dense CORE-style row: no conditions, many matches);
* ``transfer_chain``: query (c) of ``bench/correlation.py``, three transfers each paid from the
  previous one's payee within an hour, unkeyed, over its payments stream (1 M transfers, 100 k
  accounts, seed 42: the Parquet file it caches, and a CSV copy of it next to it for Java).

Per workload, alternated ``--repeat`` times: ceql in this process (``Evaluator.feed`` over the
Arrow table, process CPU time) and FlinkCEP in a fresh JVM (parallelism 1). CEQL's WITHIN is
inclusive (end − start ≤ window), FlinkCEP's ``within`` exclusive (< window), so Flink is given
the window plus one time unit. Flink's event time is in milliseconds (the stream's µs divided by
1000), as a Flink user writes it, which made P3 2.4× faster in FlinkCEP than µs timestamps —
except for ``pair_correlated``, ``kleene`` and ``dense_rows``, where the truncation to ms would
let Flink keep matches spanning up to 1 ms more than the window (at 1 M events 55, 24 k and
53 k more), so Flink gets the µs themselves there. Flink is timed from the first event leaving
the source to the pattern operator's close, so the JVM's and the local cluster's start are left
out; the whole job's time is printed too. The check says ``same`` when the match counts are
equal, the first ``KEEP`` matches Flink gives are ceql matches (their ids, in variable order,
compared) and the digests of the whole match sets are equal (the sum over the matches of
FNV-1a over their ids). Prints a table and writes JSON lines to
``bench/out/flink-<date-time>.jsonl``. FlinkCEP is a peer for measurement only, never a test
dependency.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import correlation

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
CACHE = Path(os.environ.get("CEQL_ANCHORS_CACHE", Path.home() / ".cache" / "ceql-anchors"))
CSV = CACHE / "stock_1000000_seed42.csv"
STOCK_EVENTS, SEED = 1_000_000, 42  # the anchor stream, and correlation.py's default seed
TRANSFERS, ACCOUNTS = 1_000_000, 100_000  # correlation.py's payments stream (query (c))
TOP = "<the 20 most frequent tickers>"  # pair_correlated's, filled in by main

#: workload -> (input stream, the CEQL query FlinkCEP's pattern of the same name computes)
WORKLOADS = {
    "p3": ("stock", "SELECT * FROM S WHERE SELL AS e1; BUY AS e2; BUY AS e3 FILTER "
           "e1[name = 'INTC'] AND e2[name = 'RIMM'] AND e3[name = 'QQQ'] WITHIN 10 SECONDS "
           "CONSUME BY NONE"),
    "p3_4t": ("stock", "SELECT * FROM S WHERE SELL AS e1; BUY AS e2; BUY AS e3 FILTER "
              "e1[name = 'INTC'] AND e2[name = 'RIMM'] AND e3[name = 'QQQ'] WITHIN 40 SECONDS "
              "CONSUME BY NONE"),
    "pair_contiguous": ("stock", "SELECT * FROM S WHERE SELL AS a : BUY AS b FILTER "
                        "b[price > a.price] PARTITION BY [name]"),
    "pair_correlated": ("stock", "SELECT * FROM S WHERE SELL AS a ; BUY AS b FILTER "
                        f"b[price > a.price] AND a[name NOT IN {TOP}] PARTITION BY [name] "
                        "WITHIN 10 SECONDS"),
    "kleene": ("stock", "SELECT * FROM S WHERE (BUY AS b)+ FILTER b[price > PREV(price)] "
               "PARTITION BY [name] WITHIN 100 MILLISECONDS"),
    "dense_rows": ("stock", "SELECT * FROM S WHERE SELL AS a ; BUY AS b ; BUY AS c ; SELL AS d "
                   "PARTITION BY [name] WITHIN 100 MILLISECONDS CONSUME BY NONE"),
    "transfer_chain": ("transfers", correlation.QUERY_C),
}
KEEP = 200  # Flink's first matches checked against ceql's
FNV_BASIS, FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3


def flink_jars(python: str) -> Path:
    """The ``pyflink/lib`` folder of the environment of ``python``."""
    out = subprocess.run([python, "-c", "import pyflink, os; print(os.path.join("
                          "os.path.dirname(pyflink.__file__), 'lib'))"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def compile_peer(jars: Path, classes: Path, source: str = "CepBench.java") -> None:
    """``bench/flink/<source>`` compiled into ``classes``."""
    subprocess.run(["javac", "-nowarn", "-cp", f"{jars}/*", "-d", str(classes),
                    str(HERE / "flink" / source)], check=True, capture_output=True)


def transfers_csv() -> Path:
    """correlation.py's payments stream (generated there when missing) as a CSV next to its
    Parquet file, written once: the Java peer's input."""
    parquet = correlation.transfers_path(TRANSFERS, ACCOUNTS, SEED)
    path = parquet.with_suffix(".csv")
    if not path.exists():
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        table = pq.read_table(parquet)
        with tmp.open("wb") as fh:  # Arrow quotes a header's names whatever the style
            fh.write((",".join(table.column_names) + "\n").encode())
            pacsv.write_csv(table, fh, pacsv.WriteOptions(include_header=False,
                                                          quoting_style="none"))
        tmp.replace(path)
    return path


def run_flink(jars: Path, classes: Path, csv: Path, workload: str, events: int,
              top: list[str]) -> dict[str, Any]:
    """One FlinkCEP run: its JSON line."""
    r = subprocess.run(["java", "-cp", f"{jars}/*:{classes}", "CepBench", str(csv), workload,
                        str(events), str(KEEP), ",".join(top)], capture_output=True, text=True,
                       check=False, timeout=3600)
    lines = r.stdout.strip().splitlines()
    if r.returncode or not lines:
        return {"error": r.stderr.strip().splitlines()[-3:] or ["no output"]}
    out: dict[str, Any] = json.loads(lines[-1])
    return out


def run_ceql(table: pa.Table, query: str) -> tuple[float, list[tuple[int, ...]]]:
    """One ceql run: process CPU seconds of the feed, and every match's ids."""
    import ceql

    ev = ceql.compile(query).evaluator(time="ts", time_unit="us")
    t0 = time.process_time()
    matches = ev.feed(table)
    seconds = time.process_time() - t0
    ids = table.column("id").to_pylist()
    return seconds, [tuple(ids[p] for p in m.positions) for m in matches]


def digest(matches: list[tuple[int, ...]]) -> int:
    """The sum (mod 2^64) over ``matches`` of FNV-1a over each one's ids, as CepBench.java's."""
    by_len: dict[int, list[tuple[int, ...]]] = defaultdict(list)
    for m in matches:
        by_len[len(m)].append(m)
    total = 0
    for rows in by_len.values():
        a = np.array(rows, dtype=np.uint64)
        h = np.full(len(rows), FNV_BASIS, dtype=np.uint64)
        for col in a.T:
            h ^= col
            h *= np.uint64(FNV_PRIME)  # wraps mod 2^64
        total += int(h.sum(dtype=np.uint64))
    return total % (1 << 64)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flink-python", required=True,
                    help="a Python whose environment has apache-flink 2.3 (its jars are used)")
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default=",".join(WORKLOADS))
    a = ap.parse_args(argv)
    names = a.only.split(",")
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        ap.error(f"unknown workload(s) {', '.join(unknown)}; known: {', '.join(WORKLOADS)}")
    jars = flink_jars(a.flink_python)
    stock = pacsv.read_csv(CSV)
    top = correlation.top_names(STOCK_EVENTS, SEED)  # of the whole stream, at every --events
    top_set = "{" + ", ".join(f"'{n}'" for n in top) + "}"
    inputs: dict[str, tuple[Path, pa.Table]] = {"stock": (CSV, stock.slice(0, a.events))}
    if any(WORKLOADS[n][0] == "transfers" for n in names):
        parquet = correlation.transfers_path(TRANSFERS, ACCOUNTS, SEED)
        inputs["transfers"] = (transfers_csv(), pq.read_table(parquet).slice(0, a.events))
    OUT.mkdir(exist_ok=True)
    out_file = OUT / f"flink-{dt.datetime.now():%Y%m%d-%H%M%S}.jsonl"
    print("| workload | matches ceql / Flink | ceql events/s | FlinkCEP events/s | ceql / Flink "
          "| Flink job s (with cluster start) | check |")
    print("|---|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        compile_peer(jars, Path(tmp))
        for name in names:
            stream, query = WORKLOADS[name]
            query = query.replace(TOP, top_set)
            if name == "pair_correlated":
                assert query == correlation.query_a(top), "query (a) of correlation.py changed"
            csv, table = inputs[stream]
            ceql_s: list[float] = []
            flink_s: list[float] = []
            job_s: list[float] = []
            got: list[tuple[int, ...]] = []
            flink: dict[str, Any] = {}
            for _ in range(a.repeat):
                s, got = run_ceql(table, query)
                ceql_s.append(s)
                flink = run_flink(jars, Path(tmp), csv, name, table.num_rows, top)
                if "error" in flink:
                    break
                flink_s.append(flink["seconds"])
                job_s.append(flink["job_seconds"])
            if "error" in flink:
                print(f"| {name} | FlinkCEP failed: {flink['error']} |")
                continue
            mine = set(got)
            first = [tuple(x) for x in flink["first"]]
            fp = digest(got)
            same = (len(got) == flink["matches"] and all(f in mine for f in first)
                    and fp == int(flink["digest"]))
            c, f = statistics.median(ceql_s), statistics.median(flink_s)
            rec = {"workload": name, "events": table.num_rows, "query": query,
                   "ceql_s": ceql_s, "flink_s": flink_s, "flink_job_s": job_s,
                   "flink_time_unit": flink["time_unit"], "matches": len(got),
                   "flink_matches": flink["matches"], "digest": str(fp),
                   "flink_digest": flink["digest"], "check": "same" if same else "DIFFER"}
            with out_file.open("a") as fh:
                fh.write(json.dumps(rec) + "\n")
            print(f"| {name} | {len(got):,} / {flink['matches']:,} | {table.num_rows / c:,.0f} | "
                  f"{table.num_rows / f:,.0f} | {f / c:.2f}× | {statistics.median(job_s):.1f} | "
                  f"{rec['check']} |", flush=True)
    print(f"\nJSON lines: {out_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
