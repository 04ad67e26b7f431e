#!/usr/bin/env python3
"""ceql against FlinkCEP on the anchor stock stream (issue 31): same data, same patterns, same run.

Usage (from the repository root; needs Java 17's ``javac`` and a Python environment with
``apache-flink`` 2.3, whose jars the FlinkCEP program is compiled against)::

    .venv/bin/python bench/flink.py --flink-python /path/to/venv/bin/python \\
        [--events 100000] [--repeat 3] [--only p3,pair_contiguous]

Per workload, alternated ``--repeat`` times: ceql in this process (``Evaluator.feed`` over the
Arrow table, process CPU time) and FlinkCEP in a fresh JVM (``bench/flink/CepBench.java``,
parallelism 1, event time in milliseconds: the stream's µs divided by 1000, as a Flink user
writes it, which made P3 2.4× faster in FlinkCEP than µs timestamps. It is timed from the first
event leaving the source to the pattern operator's close, so the JVM's and the local cluster's
start are left out; the whole job's time is printed too). The match counts must be equal and the
first matches Flink gives must be ceql matches (ids compared). Prints a table and writes JSON
lines to ``bench/out/flink-<date-time>.jsonl``. FlinkCEP is a peer for measurement only, never a
test dependency.
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
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
CSV = Path(os.environ.get("CEQL_ANCHORS_CACHE", Path.home() / ".cache" / "ceql-anchors")) \
    / "stock_1000000_seed42.csv"

#: workload -> the CEQL query FlinkCEP's pattern of the same name computes
WORKLOADS = {
    "p3": ("SELECT * FROM S WHERE SELL AS e1; BUY AS e2; BUY AS e3 FILTER e1[name = 'INTC'] "
           "AND e2[name = 'RIMM'] AND e3[name = 'QQQ'] WITHIN 10 SECONDS CONSUME BY NONE"),
    "p3_4t": ("SELECT * FROM S WHERE SELL AS e1; BUY AS e2; BUY AS e3 FILTER e1[name = 'INTC'] "
              "AND e2[name = 'RIMM'] AND e3[name = 'QQQ'] WITHIN 40 SECONDS CONSUME BY NONE"),
    "pair_contiguous": ("SELECT * FROM S WHERE SELL AS a : BUY AS b FILTER b[price > a.price] "
                        "PARTITION BY [name]"),
    "pair_correlated": ("SELECT * FROM S WHERE SELL AS a ; BUY AS b FILTER b[price > a.price] "
                        "PARTITION BY [name] WITHIN 10 SECONDS"),
}
KEEP = 200  # Flink's first matches checked against ceql's


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


def run_flink(jars: Path, classes: Path, workload: str, events: int) -> dict[str, Any]:
    """One FlinkCEP run: its JSON line."""
    r = subprocess.run(["java", "-cp", f"{jars}/*:{classes}", "CepBench", str(CSV), workload,
                        str(events), str(KEEP)], capture_output=True, text=True, check=False,
                       timeout=3600)
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flink-python", required=True,
                    help="a Python whose environment has apache-flink 2.3 (its jars are used)")
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default=",".join(WORKLOADS))
    a = ap.parse_args(argv)
    jars = flink_jars(a.flink_python)
    table = pacsv.read_csv(CSV).slice(0, a.events)
    OUT.mkdir(exist_ok=True)
    out_file = OUT / f"flink-{dt.datetime.now():%Y%m%d-%H%M%S}.jsonl"
    print("| workload | matches ceql / Flink | ceql events/s | FlinkCEP events/s | ceql / Flink "
          "| Flink job s (with cluster start) | check |")
    print("|---|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        compile_peer(jars, Path(tmp))
        for name in a.only.split(","):
            query = WORKLOADS[name]
            ceql_s: list[float] = []
            flink_s: list[float] = []
            job_s: list[float] = []
            got: list[tuple[int, ...]] = []
            flink: dict[str, Any] = {}
            for _ in range(a.repeat):
                s, got = run_ceql(table, query)
                ceql_s.append(s)
                flink = run_flink(jars, Path(tmp), name, a.events)
                if "error" in flink:
                    break
                flink_s.append(flink["seconds"])
                job_s.append(flink["job_seconds"])
            if "error" in flink:
                print(f"| {name} | FlinkCEP failed: {flink['error']} |")
                continue
            mine = set(got)
            first = [tuple(x) for x in flink["first"]]
            same = len(got) == flink["matches"] and all(f in mine for f in first)
            c, f = statistics.median(ceql_s), statistics.median(flink_s)
            rec = {"workload": name, "events": a.events, "query": query, "ceql_s": ceql_s,
                   "flink_s": flink_s, "flink_job_s": job_s, "matches": len(got),
                   "flink_matches": flink["matches"], "check": "same" if same else "DIFFER"}
            with out_file.open("a") as fh:
                fh.write(json.dumps(rec) + "\n")
            print(f"| {name} | {len(got):,} / {flink['matches']:,} | {a.events / c:,.0f} | "
                  f"{a.events / f:,.0f} | {f / c:.2f}× | {statistics.median(job_s):.1f} | "
                  f"{rec['check']} |")
    print(f"\nJSON lines: {out_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
