#!/usr/bin/env python3
"""Lazy evaluation (issue 12 item 3): ceql lazy against ceql eager and CORE C++.

Usage (from the repository root)::

    .venv/bin/python bench/lazy.py [--events 1000000] [--seed 42] [--repeat 3] [--no-core]
                                   [--only a,b]

(a) frequent first events and a rare last one, on the anchor stream (``gen_stock.py``):
``L1`` (the last event never occurs: no output) and ``L2`` (a rare last event, about 0.2 M
matches); ceql eager (``lazy=False``), ceql with the planner (``lazy=None``, the default) and
ceql forced lazy (``lazy=True``), and CORE C++ through ``core_cpp.py`` on the same CSV and
query file. (b) the lazy-chain paper's AND3 and SEQ3 with its second event negated, mapped to
CEQL (``AND``; ``A ; NOT B ; C``), at windows T, 2T and 4T (T = 10 s, the anchors'), ceql only.

Each query runs in a fresh process that loads the CSV as an Arrow table first; the three
ceql modes are timed alternately, ``--repeat`` times each, the median reported, the table fed
in the engine's own slices (so the lazy report of each slice is summed: rows looked at, those
whose class can change a run, fed, held), only the ``feed`` calls timed (each slice's matches
are folded into a digest between them and dropped). The match lists of the three modes must
be equal in order; ceql's match set is compared with CORE's file (exit status 2 if anything
differs). Writes ``bench/out/lazy-<time>.jsonl`` and prints a Markdown table with the machine
load before and after.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import engine as eb

OUT = Path(__file__).resolve().parent / "out"
MODES = {"eager": False, "auto": None, "lazy": True}

A_QUERIES = {
    "L1": ("SELECT * FROM S WHERE SELL AS a ; BUY AS b ; BUY AS c "
           "FILTER a[name = 'AAPL'] AND b[name = 'AMZN'] AND c[name = 'NotExists'] "
           "WITHIN 10 SECONDS"),
    "L2": ("SELECT * FROM S WHERE SELL AS a ; BUY AS b ; BUY AS c "
           "FILTER a[name = 'AAPL'] AND b[name = 'AMZN'] AND c[name = 'QQQ'] "
           "AND c[volume >= 5000] WITHIN 2 SECONDS"),
}


def b_queries() -> dict[str, str]:
    """The paper's AND3 and SEQ3 with its second event negated, at T, 2T and 4T: SELLs of a
    frequent ticker (``a``: AMZN, 6.6 % of events, or ADBE, 0.44 %), BUYs of one of the
    paper's tickers (``b``/``n``: MSFT, 0.07 %) and rare BUYs (``c``: QQQ with a volume of 5000
    or more, 52 events of 1 M, or of 10 000, 21 events)."""
    out = {}
    for first, volume in (("AMZN", 5000), ("AMZN", 10000), ("ADBE", 5000)):
        for w in (10, 20, 40):
            tail = (f"AND c[name = 'QQQ'] AND c[volume >= {volume}] WITHIN {w} SECONDS")
            out[f"AND3 {first} {volume} {w}s"] = (
                "SELECT * FROM S WHERE (SELL AS a AND BUY AS b AND BUY AS c) "
                f"FILTER a[name = '{first}'] AND b[name = 'MSFT'] {tail}")
            out[f"SEQ3-NOT {first} {volume} {w}s"] = (
                "SELECT * FROM S WHERE SELL AS a ; NOT BUY AS n ; BUY AS c "
                f"FILTER a[name = '{first}'] AND n[name = 'MSFT'] {tail}")
    return out


# --------------------------------------------------------------------------- child

def child(csv_file: Path, text: str, repeat: int, matches_out: Path | None) -> dict[str, Any]:
    """Time the three modes on one query; check their match lists are equal (a digest of
    each, in output order: holding millions of matches would slow every later run)."""
    import gc
    import hashlib

    import pyarrow.csv as pacsv

    import ceql
    from ceql.runtime.evaluator import ARROW_SLICE

    table = pacsv.read_csv(csv_file)
    slices = table.to_batches(max_chunksize=ARROW_SLICE)
    q = ceql.compile(text)
    times: dict[str, list[float]] = {m: [] for m in MODES}
    stats: dict[str, dict[str, int]] = {}
    digests: dict[str, set[str]] = {m: set() for m in MODES}
    count = 0
    for r in range(max(1, repeat)):
        order = list(MODES) if r % 2 == 0 else list(reversed(MODES))
        for mode in order:
            gc.collect()
            ev = q.evaluator(time="ts", time_unit="us", lazy=MODES[mode])
            h = hashlib.sha256()
            keys: list[tuple[int, int, tuple[int, ...]]] | None = (
                [] if mode == "eager" and r == 0 and matches_out is not None else None)
            looked = relevant = fed = held = lazy_slices = count = 0
            spent = 0.0  # in feed only: the digest below is not the engine's work
            for b in slices:
                w0 = time.perf_counter()
                out = ev.feed(b)
                spent += time.perf_counter() - w0
                count += len(out)
                h.update(repr([(m.end_position, m.start_position, m.positions)
                               for m in out]).encode())
                if keys is not None:
                    keys += [(m.end_position, m.start_position, tuple(m.positions))
                             for m in out]
                rep = ev.lazy_report()
                if rep is not None:
                    looked, relevant, fed = looked + rep.rows, relevant + rep.relevant, \
                        fed + rep.fed
                    held, lazy_slices = max(held, rep.held), lazy_slices + rep.lazy
            times[mode].append(spent)
            digests[mode].add(h.hexdigest())
            stats[mode] = {"rows": looked, "relevant": relevant, "fed": fed, "held_max": held,
                           "lazy_slices": lazy_slices, "slices": len(slices)}
            if keys is not None and matches_out is not None:
                with matches_out.open("w") as f:
                    for end, start, pos in sorted(set(keys)):
                        f.write(eb.match_line(start, end, pos) + "\n")
            del ev, keys
    equal = len(set.union(*digests.values())) == 1
    rec: dict[str, Any] = {"events": table.num_rows, "matches": count, "modes_equal": equal,
                           "report": stats}
    for mode, ts in times.items():
        rec[f"{mode}_s"] = round(statistics.median(ts), 4)
        rec[f"{mode}_runs"] = [round(t, 4) for t in ts]
    plan = q.lazy_plan()
    rec["plan"] = {"eligible": plan.eligible, "reason": plan.reason,
                   "elements": [m.label for m in plan.elements]}
    return rec


def run_child(csv_file: Path, text: str, repeat: int, out: Path | None,
              timeout: int) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(csv_file), text,
           str(repeat), str(out) if out is not None else ""]
    return eb.run_json(cmd, timeout)


# --------------------------------------------------------------------------- report

def ratio(a: Any, b: Any) -> str:
    return f"{a / b:.2f}x" if isinstance(a, int | float) and isinstance(b, int | float) and b \
        else "—"


def row(name: str, rec: dict[str, Any], core: dict[str, Any] | None) -> str:
    rep = rec["report"]["lazy"]
    active = f"{rep['fed']:,} of {rep['relevant']:,}" if rep["rows"] else "—"
    core_s = core.get("seconds") if core else None
    cells = [name, f"{rec['matches']:,}", f"{rec['eager_s']:.2f}", f"{rec['auto_s']:.2f}",
             f"{rec['lazy_s']:.2f}", ratio(rec["eager_s"], rec["auto_s"]),
             f"{rec['report']['auto']['lazy_slices']}/{rec['report']['auto']['slices']}",
             active, f"{core_s:.2f}" if isinstance(core_s, float) else "—",
             ratio(core_s, rec["auto_s"]), "yes" if rec["modes_equal"] else "**NO**",
             rec.get("core_match", "—")]
    return "| " + " | ".join(cells) + " |"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--no-core", action="store_true")
    p.add_argument("--only", default="a,b", help="a, b or both")
    p.add_argument("--timeout", type=int, default=3600)
    p.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        csv_file, text, repeat, out = a.child
        res = child(Path(csv_file), text, int(repeat), Path(out) if out else None)
        print(json.dumps(res), flush=True)
        return 0
    OUT.mkdir(exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    csv_file = eb.ensure_stream(a.events, a.seed)
    parts = {x.strip() for x in a.only.split(",")}
    work: list[tuple[str, str, bool]] = []
    if "a" in parts:
        work += [(k, v, not a.no_core) for k, v in A_QUERIES.items()]
    if "b" in parts:
        work += [(k, v, False) for k, v in b_queries().items()]
    print(f"started {dt.datetime.now():%Y-%m-%d %H:%M:%S}, load {eb.load_avg()}, "
          f"{eb.cpu_model()}, {os.cpu_count()} cores", flush=True)
    lines = ["| query | matches | eager s | auto s | forced s | eager/auto | lazy slices (auto) | "
             "rows fed of relevant (forced) | CORE s | CORE/auto | modes equal | vs CORE |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    status = 0
    records = []
    for name, text, with_core in work:
        qfile = OUT / f"lazy-{stamp}-{name.replace(' ', '_')}.ceql"
        qfile.write_text(text + "\n")
        mine = OUT / f"lazy-{stamp}-{name.replace(' ', '_')}.ceql.jsonl" if with_core else None
        rec = run_child(csv_file, text, a.repeat, mine, a.timeout)
        rec["query"], rec["text"] = name, text
        core = None
        if "error" in rec:
            print(f"{name}: {rec['error']}", file=sys.stderr)
            status = 3
            continue
        if not rec["modes_equal"]:
            status = 2
        if with_core and mine is not None:
            theirs = OUT / f"lazy-{stamp}-{name.replace(' ', '_')}.core.jsonl"
            core = eb.run_core(qfile, csv_file, a.repeat, theirs, a.timeout, sys.executable)
            rec["core"] = core
            if "error" not in core:
                cmp = eb.compare_match_files(mine, theirs)
                rec["core_match"] = cmp.label()
                if not cmp.equal:
                    status = max(status, 2)
        records.append(rec)
        lines.append(row(name, rec, core))
        print(lines[-1], flush=True)
    print(f"finished {dt.datetime.now():%Y-%m-%d %H:%M:%S}, load {eb.load_avg()}", flush=True)
    with (OUT / f"lazy-{stamp}.jsonl").open("w") as f:
        for rec in records:
            f.write(json.dumps(rec) + "\n")
    print("\n".join(lines))
    subprocess.run(["uptime"], check=False)
    return status


if __name__ == "__main__":
    sys.exit(main())
