"""The contiguous pair of ``bench/flink.py`` on ceql alone, this tree against another.

    python bench/dense.py --baseline /path/to/other/python [--events 1000000] [--repeat 3]

Each run is a fresh process (``PYTHONPATH`` = this tree's ``python/`` or the baseline's), the
two trees alternated ``--repeat`` times; a run times ``Evaluator.feed`` of the anchor stream as
an Arrow table read with ``pyarrow.csv`` (process CPU time, the read not counted) and prints
its match count and a digest of the matches (end, start, positions, partition), which must be
the same for both trees. FlinkCEP's figure for the same workload is in ``bench/RESULTS.md``
(§20 and after).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CSV = Path(os.environ.get("CEQL_ANCHORS_CACHE", Path.home() / ".cache" / "ceql-anchors")) \
    / "stock_1000000_seed42.csv"
WORKLOADS = {
    "pair_contiguous": ("SELECT * FROM S WHERE SELL AS a : BUY AS b FILTER b[price > a.price] "
                        "PARTITION BY [name]"),
    "chain3_window": ("SELECT * FROM S WHERE SELL AS a : BUY AS b : BUY AS c "
                      "FILTER b[price > a.price] AND c[volume > b.volume] PARTITION BY [name] "
                      "WITHIN 1 SECONDS"),
}

_RUN = r"""
import hashlib, json, sys, time
import pyarrow.csv as pacsv
import ceql
table = pacsv.read_csv(sys.argv[1]).slice(0, int(sys.argv[2]))
q = ceql.compile(sys.argv[3])
ev = q.evaluator(time="ts", time_unit="us")
t0 = time.process_time()
ms = ev.feed(table)
s = time.process_time() - t0
h = hashlib.sha256(repr([m.key() for m in ms]).encode()).hexdigest()[:16]
print(json.dumps({"seconds": s, "matches": len(ms), "digest": h,
                  "engine": q.engine().base}))
"""


def run(tree: str, query: str, events: int) -> dict[str, object]:
    """One timed feed in a fresh process over ``tree``."""
    env = dict(os.environ, PYTHONPATH=tree)
    out = subprocess.run([sys.executable, "-c", _RUN, str(CSV), str(events), query],
                         env=env, capture_output=True, text=True, check=True)
    got: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", required=True, help="the other tree's python/ folder")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default=",".join(WORKLOADS))
    a = ap.parse_args(argv)
    mine = str(HERE.parent / "python")
    print("| workload | engine base / this | matches | digest equal | baseline s | this s "
          "| baseline ev/s | this ev/s | speed-up |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|")
    for name in a.only.split(","):
        query = WORKLOADS[name]
        base_s: list[float] = []
        this_s: list[float] = []
        b: dict[str, object] = {}
        t: dict[str, object] = {}
        for _ in range(a.repeat):
            b = run(a.baseline, query, a.events)
            t = run(mine, query, a.events)
            base_s.append(float(b["seconds"]))  # type: ignore[arg-type]
            this_s.append(float(t["seconds"]))  # type: ignore[arg-type]
        bs, ts = statistics.median(base_s), statistics.median(this_s)
        print(f"| {name} | {b['engine']} / {t['engine']} | {t['matches']:,} | "
              f"{b['digest'] == t['digest'] and b['matches'] == t['matches']} | {bs:.2f} | "
              f"{ts:.2f} | {a.events / bs:,.0f} | {a.events / ts:,.0f} | {bs / ts:.1f}× |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
