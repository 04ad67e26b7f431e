#!/usr/bin/env python3
"""Soak benchmark (issue 9): resident memory of the engine over a long generated stream.

Usage (from the repository root)::

    .venv/bin/python bench/soak.py [--events 20000000 | --quick]
        [--shapes windowed,unwindowed,unique] [--surfaces engine,spark] [--chunk 1000000]
        [--keys 1000] [--seed 42]

For every shape and surface, one fresh subprocess (so that VmHWM is that run's alone).

Surface ``engine``:

* generates the stream on the fly with NumPy, ``--chunk`` rows at a time (an Arrow table with
  columns ``type`` (dictionary of ``A``/``B``, uniform), ``k`` (int64 key) and ``t`` (float64
  seconds, one event per millisecond)); a chunk is dropped once fed, so the input never
  accumulates;
* feeds every chunk to one ``ceql.compile(text).evaluator(time="t")`` through ``iter_feed``
  (the cyclic GC off while a chunk is evaluated, as ``Evaluator.feed`` does).  Matches are
  only counted, never kept — not even as ``feed``'s per-chunk list, which for the windowed
  shape would hold millions of matches at once and dominate the peak;
* samples VmRSS and VmHWM (``/proc/self/status``) and ``ev.live()`` after every chunk.

Surface ``spark`` (``bench/soak_spark.py``): MATCH_CEQL over the same stream generated in
Spark (``range`` with ``rand``), on ``local[1]`` with one shuffle partition, so one Python
worker evaluates all of it in one task; the worker samples its own VmRSS/VmHWM every
``--chunk`` rows (``live`` is not available there).

Shapes:

* ``windowed``: ``SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 10 SECONDS``,
  ``--keys`` keys drawn uniformly (bounded live state: the window holds ~10 000 events);
* ``unwindowed``: ``SELECT * FROM S WHERE A : B PARTITION BY [k]`` — no window, but a run
  dies at the next event of its partition that is not a B (bounded by the number of keys);
* ``unique``: the windowed query with a new key for every event (live state bounded only if
  the engine drops partitions whose runs all expired; reported, not held to the target).

Prints a Markdown table: RSS and VmHWM after the first chunk (1 M events by default) and at the
end, the ratio of peak RSS at the end to that after the first chunk (target from issue 9:
≤ 1.2× for every shape with bounded live state), and ``ev.live()`` at the end; writes one JSON
line per shape (with the full per-chunk trace) to ``bench/out/soak-<date-time>.jsonl``.  A
benchmark, not a test: the exit status is 0 even when the target is missed, 3 when a run
failed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import platform
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import engine as eb  # bench/engine.py: RSS, load, subprocess helpers
from scaling import fmt  # bench/scaling.py: the same table formatting
from scaling import size_label as label

WINDOWED = "SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 10 SECONDS"
UNWINDOWED = "SELECT * FROM S WHERE A : B PARTITION BY [k]"
SURFACES = ("engine", "spark")
SHAPES: dict[str, tuple[str, bool]] = {  # name → (query, bounded live state?)
    "windowed": (WINDOWED, True),
    "unwindowed": (UNWINDOWED, True),
    "unique": (WINDOWED, False),
}
DEFAULT_EVENTS, QUICK_EVENTS = 20_000_000, 2_000_000
TARGET_RSS = 1.2
EVENTS_PER_S = 1000  # stream time: one event per millisecond


# --------------------------------------------------------------------------- worker
def make_chunk(shape: str, start: int, n: int, keys: int, rng: Any) -> Any:
    """Events ``start`` … ``start + n - 1`` of ``shape``'s stream, as an Arrow table."""
    import numpy as np
    import pyarrow as pa

    pos = np.arange(start, start + n, dtype=np.int64)
    types = pa.DictionaryArray.from_arrays(
        pa.array(rng.integers(0, 2, n, dtype=np.int8)), pa.array(["A", "B"]))
    k = pos if shape == "unique" else rng.integers(0, keys, n, dtype=np.int64)
    t = pos / EVENTS_PER_S
    return pa.table({"type": types, "k": pa.array(k), "t": pa.array(t)})


def worker(shape: str, events: int, chunk: int, keys: int, seed: int) -> None:
    """One soak pass of ``shape`` in this (fresh) process; one JSON line."""
    import numpy as np

    import ceql

    text, bounded = SHAPES[shape]
    ev = ceql.compile(text).evaluator(time="t")
    rng = np.random.default_rng(seed)
    gc.collect()
    rss_ready, hwm_ready = eb.rss_now_mb(), eb.rss_peak_mb()
    fed = matches = 0
    gen_s = feed_s = 0.0
    trace: list[dict[str, Any]] = []
    w0 = time.perf_counter()
    while fed < events:
        n = min(chunk, events - fed)
        g0 = time.perf_counter()
        table = make_chunk(shape, fed, n, keys, rng)
        f0 = time.perf_counter()
        gc.disable()
        try:
            for _ in ev.iter_feed(table):
                matches += 1
        finally:
            gc.enable()
        f1 = time.perf_counter()
        gen_s += f0 - g0
        feed_s += f1 - f0
        del table
        fed += n
        live = ev.live()
        trace.append({"events": fed, "rss_mb": round(eb.rss_now_mb(), 1),
                      "hwm_mb": round(eb.rss_peak_mb(), 1), "s": round(f1 - w0, 2),
                      "matches": matches, "live": list(live)})
    wall = time.perf_counter() - w0
    live = ev.live()
    print(json.dumps({
        "shape": shape, "surface": "engine", "query": text, "bounded": bounded,
        "keys": None if shape == "unique" else keys, "events": fed, "chunk": chunk,
        "seed": seed, "matches": matches,
        "seconds": round(wall, 3), "gen_s": round(gen_s, 3), "feed_s": round(feed_s, 3),
        "events_per_s": round(fed / wall) if wall else None,
        "engine_events_per_s": round(fed / feed_s) if feed_s else None,
        "rss_ready_mb": round(rss_ready, 1), "hwm_ready_mb": round(hwm_ready, 1),
        "live_end": live._asdict() if hasattr(live, "_asdict") else list(live),
        "engine_digest": eb.engine_digest(), "trace": trace,
    }), flush=True)


def spark_worker(shape: str, events: int, chunk: int, keys: int, seed: int) -> None:
    """One MATCH_CEQL soak pass of ``shape`` in this (fresh) process; one JSON line."""
    import tempfile

    import soak_spark

    text, bounded = SHAPES[shape]
    with tempfile.TemporaryDirectory(prefix="ceql-soak-") as tmp:
        res = soak_spark.run(shape, text, events, chunk, keys, seed,
                             os.path.join(tmp, "trace.jsonl"))
    trace = [{k: v for k, v in t.items() if k != "at"} for t in res.pop("trace")]
    print(json.dumps({
        "shape": shape, "surface": "spark", "query": text, "bounded": bounded,
        "keys": None if shape == "unique" else keys, "events": events, "chunk": chunk,
        "seed": seed, **res, "engine_events_per_s": None, "live_end": None,
        "engine_digest": eb.engine_digest(), "trace": trace,
    }), flush=True)


def run_worker(a: argparse.Namespace, shape: str, surface: str) -> dict[str, Any]:
    """A worker in a fresh interpreter, so that its VmHWM is this run's alone."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", shape,
           "--events", str(a.events), "--chunk", str(a.chunk), "--keys", str(a.keys),
           "--seed", str(a.seed)]
    if surface == "spark":
        cmd.append("--spark-worker")
        bench = str(Path(__file__).resolve().parent)  # soak_spark, for Spark's Python workers
        old = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = bench + (os.pathsep + old if old else "")
        try:
            return eb.run_json(cmd, a.timeout, cwd=eb.REPO_DIR)
        finally:
            if old is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = old
    return eb.run_json(cmd, a.timeout, cwd=eb.REPO_DIR)


# --------------------------------------------------------------------------- report
TABLE_HEAD = (
    "| shape | surface | events | matches | events/s (wall) | evaluator alone, events/s "
    "| RSS MB, first chunk | peak RSS MB, first chunk | RSS MB, end | peak RSS MB, end "
    "| peak end / first | target ≤ 1.2× | live at end (partitions, states, runs, expiring) |\n"
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
)


def summarize(shape: str, surface: str, res: dict[str, Any]) -> dict[str, Any]:
    """The JSON record of one run: the worker's result plus the first/end ratios."""
    rec: dict[str, Any] = {"kind": "shape", "shape": shape, "surface": surface,
                           "time": dt.datetime.now().isoformat(timespec="seconds"), **res}
    if "error" in res or not res.get("trace"):
        return rec
    first, last = res["trace"][0], res["trace"][-1]
    rec.update({"first_events": first["events"], "rss_first_mb": first["rss_mb"],
                "hwm_first_mb": first["hwm_mb"], "rss_end_mb": last["rss_mb"],
                "hwm_end_mb": last["hwm_mb"],
                "hwm_ratio": round(last["hwm_mb"] / first["hwm_mb"], 3),
                "rss_ratio": round(last["rss_mb"] / first["rss_mb"], 3)})
    rec["rss_target_met"] = rec["hwm_ratio"] <= TARGET_RSS if res["bounded"] else None
    return rec


def table_row(rec: dict[str, Any]) -> str:
    if "error" in rec:
        return (f"| {rec['shape']} | {rec['surface']} | | error: {rec['error'][:150]} "
                "| | | | | | | | | |")
    met = {True: "met", False: "**MISSED**", None: "n/a (unbounded)"}[rec["rss_target_met"]]
    live = rec["live_end"]
    live_s = "n/a" if live is None else ", ".join(
        f"{v:,}" for v in (live.values() if isinstance(live, dict) else live))
    return (f"| {rec['shape']} | {rec['surface']} | {fmt(rec['events'])} | {fmt(rec['matches'])} "
            f"| {fmt(rec['events_per_s'])} | {fmt(rec['engine_events_per_s'])} "
            f"| {fmt(rec['rss_first_mb'], '.1f')} | {fmt(rec['hwm_first_mb'], '.1f')} "
            f"| {fmt(rec['rss_end_mb'], '.1f')} | {fmt(rec['hwm_end_mb'], '.1f')} "
            f"| {rec['hwm_ratio']:.2f}× | {met} | {live_s} |")


def run_benchmark(a: argparse.Namespace) -> int:
    started = dt.datetime.now()
    out_json: Path = a.json or eb.BENCH_DIR / "out" / f"soak-{started:%Y-%m-%d-%H%M%S}.jsonl"
    out_json.parent.mkdir(parents=True, exist_ok=True)
    head = [
        f"# ceql soak — {started:%Y-%m-%d %H:%M:%S}",
        "",
        f"- Machine: {eb.cpu_model()}, {os.cpu_count()} cores, {eb.ram_gib():.1f} GiB RAM, "
        f"{platform.system()} {platform.release()}; load average (1/5/15 min) at start "
        f"{eb.load_avg()}",
        f"- ceql: Python {platform.python_version()}; source digest {eb.engine_digest()}",
        f"- Stream: {label(a.events)} generated events (NumPy seed {a.seed}) in chunks of "
        f"{label(a.chunk)}, types A/B uniform, one event per ms, {a.keys:,} keys (unique: a new "
        "key per event); one fresh process per shape; RSS/peak RSS = VmRSS/VmHWM",
        f"- Command: `{shlex.join([os.path.relpath(sys.executable), *sys.argv])}`",
        "",
        TABLE_HEAD,
    ]
    print("\n".join(head), flush=True)
    failed = False
    for shape in a.shapes:
        for surface in a.surfaces:
            rec = summarize(shape, surface, run_worker(a, shape, surface))
            failed |= "error" in rec
            print(table_row(rec), flush=True)
            with out_json.open("a") as f:
                f.write(json.dumps(rec) + "\n")
    ended = dt.datetime.now()
    print(f"\n- Finished {ended:%Y-%m-%d %H:%M:%S} "
          f"({(ended - started).total_seconds() / 60:.1f} min); load average at end "
          f"{eb.load_avg()}; JSON lines (with per-chunk traces): {out_json}", flush=True)
    return 3 if failed else 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples: `.venv/bin/python bench/soak.py --quick`; "
               "`.venv/bin/python bench/soak.py` (issue 9's 20 M events).",
    )
    p.add_argument("--events", type=int, default=DEFAULT_EVENTS,
                   help=f"events per shape (default {DEFAULT_EVENTS:,})")
    p.add_argument("--quick", action="store_true",
                   help=f"shorthand for --events {QUICK_EVENTS}")
    p.add_argument("--shapes", default=",".join(SHAPES),
                   help=f"comma-separated shapes (default {','.join(SHAPES)})")
    p.add_argument("--surfaces", default=",".join(SURFACES),
                   help="comma-separated: engine (ceql's evaluator), spark (MATCH_CEQL's "
                        f"Python worker) (default {','.join(SURFACES)})")
    p.add_argument("--chunk", type=int, default=1_000_000,
                   help="events generated and fed at a time; RSS is sampled after each "
                        "(default 1000000)")
    p.add_argument("--keys", type=int, default=1000,
                   help="distinct partition keys of the windowed/unwindowed shapes "
                        "(default 1000)")
    p.add_argument("--seed", type=int, default=42, help="NumPy seed (default 42)")
    p.add_argument("--timeout", type=int, default=3600,
                   help="seconds allowed per shape (default 3600)")
    p.add_argument("--json", type=Path,
                   help="JSON-lines output (default bench/out/soak-<date-time>.jsonl)")
    p.add_argument("--worker", metavar="SHAPE", help=argparse.SUPPRESS)
    p.add_argument("--spark-worker", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.quick:
        a.events = QUICK_EVENTS
    a.shapes = [s.strip() for s in a.shapes.split(",") if s.strip()]
    a.surfaces = [s.strip() for s in a.surfaces.split(",") if s.strip()]
    if bad := [s for s in a.surfaces if s not in SURFACES]:
        p.error(f"unknown surface(s) {', '.join(bad)}; known: {', '.join(SURFACES)}")
    unknown = [s for s in a.shapes + ([a.worker] if a.worker else []) if s not in SHAPES]
    if unknown:
        p.error(f"unknown shape(s) {', '.join(unknown)}; known: {', '.join(SHAPES)}")
    if a.events < 1 or a.chunk < 1 or a.keys < 1:
        p.error("--events, --chunk and --keys must be positive")
    return a


def main(argv: Sequence[str] | None = None) -> int:
    a = parse_args(argv)
    if a.worker:
        run = spark_worker if a.spark_worker else worker
        run(a.worker, a.events, a.chunk, a.keys, a.seed)
        return 0
    return run_benchmark(a)


if __name__ == "__main__":
    sys.exit(main())
