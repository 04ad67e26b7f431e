#!/usr/bin/env python3
"""Work stays bounded under LIMIT and WITHIN (issue 28 item 3): the issue's three cases.

Usage (from the repository root)::

    .venv/bin/python bench/bounded.py [--only a,b,c]

(a) ``A+ ; B LIMIT 1`` on alternating A/B events (1 000, 2 000, 20 000): LIMIT must cut the
enumeration (cubic before). (b) ``A+ AS a ; B FILTER [SUM(a.v) > 1e9] WITHIN 20000 EVENTS`` on
20 000 events (9 A in 10, values 1..1000): a run per distinct sum, stopped by ``MAX_RUNS``
(before: gigabytes, then ``MemoryError``). (c) a 12-variable rising chain ``A AS a1 ; … ; A AS
a12 FILTER a2[v > a1.v] AND …`` over random values, WITHIN 1000 EVENTS: with LIMIT 1 on 200
events, and without LIMIT until 200 000 matches were read (before: every match of an end
collected before the first was given). Each case runs in a fresh process; the table gives
seconds, peak RSS and how it ended.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, random, resource, sys, time, warnings
import ceql
warnings.simplefilter("ignore")
case, n = sys.argv[1], int(sys.argv[2])
random.seed(1)
if case == "a":
    text = "SELECT * FROM S WHERE A+ ; B LIMIT 1"
    events = [{"type": "AB"[i % 2]} for i in range(n)]
elif case == "b":
    text = "SELECT * FROM S WHERE A+ AS a ; B FILTER [SUM(a.v) > 1e9] WITHIN 20000 EVENTS"
    events = [{"type": "A" if random.random() < 0.9 else "B", "v": random.randint(1, 1000)}
              for _ in range(n)]
else:
    names = " ; ".join(f"A AS a{i}" for i in range(1, 13))
    rising = " AND ".join(f"a{i}[v > a{i - 1}.v]" for i in range(2, 13))
    text = f"SELECT * FROM S WHERE {names} FILTER {rising} WITHIN 1000 EVENTS"
    if case == "c1":
        text += " LIMIT 1"
    events = [{"type": "A", "v": random.randint(1, 100000)} for _ in range(n)]
q = ceql.compile(text)
t = time.perf_counter()
got, ended = 0, "done"
try:
    for _ in q.run(events):
        got += 1
        if case == "c" and got >= 200_000:
            ended = "200000 read"
            break
except ceql.CeqlResourceError as e:
    ended = "CeqlResourceError (" + ("MAX_RUNS" if "MAX_RUNS" in str(e) else str(e)[:40]) + ")"
print(json.dumps({"case": case, "events": n, "matches": got, "ended": ended,
                  "seconds": round(time.perf_counter() - t, 2),
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
"""

CASES = {"a": [("a", 1000), ("a", 2000), ("a", 20000)], "b": [("b", 20000)],
         "c": [("c1", 200), ("c", 2000)]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="a,b,c")
    args = ap.parse_args()
    print("| case | events | matches | ended | seconds | peak RSS MB |")
    print("|---|---|---|---|---|---|")
    for key in args.only.split(","):
        for case, n in CASES[key]:
            out = subprocess.run([sys.executable, "-c", CHILD, case, str(n)], check=True,
                                 capture_output=True, text=True, timeout=1800).stdout
            r = json.loads(out.strip().splitlines()[-1])
            print(f"| {r['case']} | {r['events']} | {r['matches']} | {r['ended']} | "
                  f"{r['seconds']} | {r['peak_mb']} |", flush=True)


if __name__ == "__main__":
    main()
