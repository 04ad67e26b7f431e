#!/usr/bin/env python3
"""One SPAseq query of ``bench/spaseq.py`` fed in this process, for comparing two trees
(RESULTS §21 b): the process CPU time (user + sys, ``getrusage``) and wall time of
``feed`` + ``close`` per repeat, the match count and a digest of the match set, as one JSON
line.

Usage (from the repository root; ``PYTHONPATH`` picks the tree whose ``ceql`` is measured)::

    PYTHONPATH=python .venv/bin/python bench/spaseq_feed.py [--query v_shape] [--events 50000]
                                                             [--window 10] [--repeat 2]
                                                             [--first N] [--callgrind]

The events are built (and the query compiled) before each timed repeat, as
``bench/spaseq.py`` does. ``--first N``: only the first N events of the stream. With
``--callgrind``, run under ``valgrind --tool=callgrind --instr-atstart=no``: instrumentation
is switched on (``callgrind_control -i on``) for ``feed`` + ``close`` only, so the
instruction count valgrind prints (``I refs``) is the evaluation's alone — a figure that
does not move with the machine's load (set ``PYTHONHASHSEED=0`` for identical runs).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import ceql
import ceql.spaseq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spaseq  # bench/spaseq.py: the events and the queries


def callgrind(on: bool) -> None:
    """Switch callgrind's instrumentation of this process on or off."""
    subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(os.getpid())],
                   check=True, capture_output=True)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--query", default="v_shape", choices=sorted(spaseq.QUERIES))
    ap.add_argument("--events", type=int, default=50_000, help="the stream's length")
    ap.add_argument("--first", type=int, default=None, help="feed only the first N events")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--window", type=float, default=10.0, help="seconds")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--callgrind", action="store_true",
                    help="instrument feed + close only (run under callgrind, --instr-atstart=no)")
    args = ap.parse_args(argv)
    events = spaseq.rdf_events(spaseq.load_rows(args.events, args.seed)[:args.first])
    text = spaseq.spaseq_text(args.query, args.window)
    runs = []
    for _ in range(1 if args.callgrind else args.repeat):
        ev = ceql.spaseq.compile(text).evaluator()
        if args.callgrind:
            callgrind(True)
        r0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        matches = ev.feed(events) + ev.close()
        r1, w1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        if args.callgrind:
            callgrind(False)
        positions = sorted(m.positions for m in matches)
        runs.append({"cpu_s": round(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime, 4),
                     "wall_s": round(w1 - w0, 4), "matches": len(matches),
                     "digest": hashlib.sha256(repr(positions).encode()).hexdigest()[:16]})
    print(json.dumps({"ceql": ceql.__file__, "query": args.query, "events": len(events),
                      "window_s": args.window, "load": os.getloadavg()[0], "runs": runs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
