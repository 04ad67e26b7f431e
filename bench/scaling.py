#!/usr/bin/env python3
"""Scaling benchmark (issue 4): throughput and peak memory against stream length.

Usage (from the repository root)::

    .venv/bin/python bench/scaling.py [--sizes 1000000,5000000,20000000] [--repeat 3]
        [--queries p3_any,p3_none,d3_any] [--sizes-for d3_any=1000000,5000000]

For every query (default: P3 under CONSUME BY ANY and NONE, and the dense d3_any; all at the
anchors' fixed 10 s window) and every stream length, one fresh subprocess:

* streams the stock CSV (``<shared>/anchors/gen_stock.py --events N --seed 42``, generated
  once into bench/engine.py's cache) with ``pyarrow.csv.open_csv``: ``--block-mb`` MiB
  blocks (see below), parsing on the calling thread (``use_threads=False``), the column types
  that ``read_csv`` infers in bench/engine.py's worker;
* feeds every RecordBatch to one ``ceql.compile(text).evaluator(time="ts", time_unit="us")``
  through ``iter_feed``, with the cyclic GC off while a batch is evaluated (as
  ``Evaluator.feed`` does).  Matches are counted and folded into an order-independent digest
  (sum of ``hash((start, end, positions))`` mod 2⁶⁴), never kept, so nothing but the
  engine's own state can grow with the stream;
* reports wall and CPU time of the whole pass (reading + evaluation), the throughput over the
  stream's second half (without the ~0.15 s warm-up of the first batches, which weighs on
  short streams), the time spent inside the evaluator alone, the match count and digest, the
  peak RSS (VmHWM of that process), an RSS trace at tenths of the stream and where the peak
  grew (events read, VmHWM after each batch that raised it by 1 MiB or more).

The reader reads ahead on an I/O thread: up to 32 blocks (Arrow's background-generator queue,
not configurable), i.e. the whole file when it has fewer blocks.  The default 1 MiB block keeps
that cap (32 MiB) below the 1 M-event file (44 MB), so the read-ahead buffer is the same at
every length; with 4 MiB blocks the 1 M file (11 blocks) would buffer 44 MB and longer ones
128 MiB, which alone makes peak RSS look 1.6× larger at 5 M than at 1 M.  pyarrow's default
memory pool (mimalloc) purges freed blocks after a delay, which adds transient peaks of up to
~20 MB at any length; ``--arrow-pool jemalloc`` or ``system`` shows the difference.

A *read-only* baseline per length (same reader, every batch read, nothing fed) tells the
interpreter + pyarrow + reader memory apart from the engine's.  Repeats are interleaved
(repeat 1 of every length, then repeat 2, …) so that load drift hits every length alike; the
median repeat (by wall time) is reported.

Prints a Markdown table and, per query, the largest/smallest-length ratios of throughput and
peak RSS against the issue's targets (throughput at 20 M ≥ 0.9× that at 1 M; peak RSS at 20 M
≤ 1.2× that at 1 M); writes one JSON line per row and per query summary to
``bench/out/scaling-<date-time>.jsonl``.  A benchmark, not a test: the exit status is 0 even
when a target is missed, 3 when a run failed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import engine as eb  # bench/engine.py: stream cache, RSS, load, subprocess helpers

BASELINE = "(read only)"
DEFAULT_QUERIES = "p3_any,p3_none,d3_any"
DEFAULT_SIZES = "1000000,5000000,20000000"
TARGET_THROUGHPUT, TARGET_RSS = 0.9, 1.2
TRACE_POINTS = 10
MASK64 = (1 << 64) - 1


# --------------------------------------------------------------------------- worker
def column_types() -> dict[str, Any]:
    """The stock CSV's columns as bench/engine.py's ``read_csv`` infers them."""
    import pyarrow as pa

    return {"type": pa.string(), "id": pa.int64(), "name": pa.string(),
            "volume": pa.int64(), "price": pa.float64(), "ts": pa.int64()}


def worker(query_file: Path | None, csv_file: Path, block_mb: float, events: int) -> None:
    """One streamed pass over ``csv_file`` (``query_file`` None: read only); one JSON line."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    import ceql

    ev = None
    if query_file is not None:
        ev = ceql.compile(query_file.read_text()).evaluator(time="ts", time_unit="us")
    reader = pacsv.open_csv(
        csv_file,
        read_options=pacsv.ReadOptions(block_size=int(block_mb * 2**20), use_threads=False),
        convert_options=pacsv.ConvertOptions(column_types=column_types()),
    )
    gc.collect()
    rss_ready = eb.rss_now_mb()
    rows = batches = matches = digest = 0
    feed_s = 0.0
    trace: list[tuple[int, float]] = []
    hwm_steps: list[tuple[int, float]] = [(0, round(eb.rss_peak_mb(), 1))]
    step = max(1, events // TRACE_POINTS)
    next_trace = step
    half: tuple[int, float] | None = None  # (events read, wall clock) at half the stream
    c0, w0 = time.process_time(), time.perf_counter()
    for batch in reader:
        rows += batch.num_rows
        batches += 1
        if ev is not None:
            f0 = time.perf_counter()
            gc.disable()
            try:
                for m in ev.iter_feed(batch):
                    matches += 1
                    digest += hash((m.start_position, m.end_position, m.positions))
            finally:
                gc.enable()
            feed_s += time.perf_counter() - f0
        hwm = eb.rss_peak_mb()
        if hwm >= hwm_steps[-1][1] + 1:
            hwm_steps.append((rows, round(hwm, 1)))
        if rows >= next_trace:
            trace.append((rows, round(eb.rss_now_mb(), 1)))
            next_trace += step
        if half is None and 2 * rows >= events:
            half = (rows, time.perf_counter())
    end = time.perf_counter()
    wall, cpu = end - w0, time.process_time() - c0
    second_half = None
    if half is not None and rows > half[0] and end > half[1]:
        second_half = round((rows - half[0]) / (end - half[1]))
    result: dict[str, Any] = {
        "query": query_file.name if query_file is not None else BASELINE,
        "engine_digest": eb.engine_digest(),
        "arrow_pool": pa.default_memory_pool().backend_name,
        "events": rows,
        "batches": batches,
        "seconds": round(wall, 4),
        "cpu_s": round(cpu, 4),
        "feed_s": round(feed_s, 4),
        "second_half_events_per_s": second_half,
        "matches": matches,
        "digest": f"{digest & MASK64:016x}",
        "rss_ready_mb": round(rss_ready, 1),
        "rss_end_mb": round(eb.rss_now_mb(), 1),
        "peak_rss_mb": round(eb.rss_peak_mb(), 1),
        "rss_trace_mb": trace,
        "peak_rss_steps_mb": hwm_steps,
    }
    print(json.dumps(result), flush=True)


def run_worker(query_file: Path | None, csv_file: Path, events: int, block_mb: float,
               timeout: int) -> dict[str, Any]:
    """``worker`` in a fresh interpreter, so that its VmHWM is this run's alone."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--input", str(csv_file),
           "--events-hint", str(events), "--block-mb", str(block_mb)]
    if query_file is not None:
        cmd += ["--query", str(query_file)]
    return eb.run_json(cmd, timeout, cwd=eb.REPO_DIR)


# --------------------------------------------------------------------------- records
def summarize_runs(name: str, events: int, runs: list[dict[str, Any]],
                   loads: list[float]) -> dict[str, Any]:
    """One table row from a (query, length)'s repeats: the median repeat by wall time."""
    rec: dict[str, Any] = {"query": name, "events": events, "load_1min": loads,
                           "time": dt.datetime.now().isoformat(timespec="seconds")}
    errors = [r["error"] for r in runs if "error" in r]
    ok = [r for r in runs if "error" not in r]
    if errors:
        rec["errors"] = errors
    if not ok:
        rec["error"] = errors[0]
        return rec
    med = sorted(ok, key=lambda r: r["seconds"])[(len(ok) - 1) // 2]
    rec.update({k: med[k] for k in ("events", "seconds", "cpu_s", "feed_s", "matches", "digest",
                                    "rss_ready_mb", "rss_end_mb", "rss_trace_mb",
                                    "peak_rss_steps_mb", "engine_digest", "arrow_pool")})
    rec["events_per_s"] = round(med["events"] / med["seconds"])
    rec["events_per_cpu_s"] = round(med["events"] / med["cpu_s"]) if med["cpu_s"] else None
    halves = [r["second_half_events_per_s"] for r in ok if r.get("second_half_events_per_s")]
    rec["second_half_events_per_s"] = round(statistics.median(halves)) if halves else None
    if name != BASELINE:
        feed = statistics.median(r["feed_s"] for r in ok)
        rec["engine_events_per_s"] = round(med["events"] / feed) if feed else None
    rec["peak_rss_mb"] = statistics.median(r["peak_rss_mb"] for r in ok)
    rec["peak_rss_max_mb"] = max(r["peak_rss_mb"] for r in ok)
    rec["runs_s"] = [r["seconds"] for r in ok]
    rec["cpu_runs_s"] = [r["cpu_s"] for r in ok]
    digests = {(r["matches"], r["digest"]) for r in ok}
    if len(digests) > 1:
        rec["note"] = f"repeats disagree on matches/digest: {sorted(digests)}"
    return rec


def size_label(n: int) -> str:
    """1000000 → '1M', 500000 → '500k'."""
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


def fmt(x: Any, spec: str = ",.0f") -> str:
    return format(x, spec) if isinstance(x, (int, float)) else "–"


TABLE_HEAD = (
    "| query | events | matches (digest) | events/s (wall) | events/s, 2nd half (wall) "
    "| events per CPU-s | evaluator alone, events/s | wall s | peak RSS MB "
    "| read-only peak RSS MB | engine MB (peak − read-only) | load (1 min, per repeat) |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
)


def table_row(rec: dict[str, Any], base: dict[str, Any] | None) -> str:
    """One Markdown row; ``base`` is the read-only row of the same length."""
    loads = " / ".join(f"{x:.2f}" for x in rec.get("load_1min", []))
    if "error" in rec:
        return (f"| {rec['query']} | {fmt(rec['events'])} | error: {rec['error'][:150]} "
                "| | | | | | | | | " + loads + " |")
    base_peak = base.get("peak_rss_mb") if base else None
    engine_mb = rec["peak_rss_mb"] - base_peak if base_peak and rec is not base else None
    matches = "–" if rec["query"] == BASELINE else f"{rec['matches']:,} ({rec['digest'][:8]})"
    return (
        f"| {rec['query']} | {fmt(rec['events'])} | {matches} | {fmt(rec['events_per_s'])} "
        f"| {fmt(rec.get('second_half_events_per_s'))} | {fmt(rec.get('events_per_cpu_s'))} "
        f"| {fmt(rec.get('engine_events_per_s'))} "
        f"| {fmt(rec['seconds'], '.2f')} | {fmt(rec['peak_rss_mb'])} | {fmt(base_peak)} "
        f"| {fmt(engine_mb)} | {loads} |"
    )


def ratios(query: str, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Largest/smallest-length ratios of a query's throughputs and peak RSS."""
    ok = sorted((r for r in rows if "error" not in r), key=lambda r: r["events"])
    if len(ok) < 2:
        return None
    lo, hi = ok[0], ok[-1]
    out: dict[str, Any] = {"kind": "ratios", "query": query, "small": lo["events"],
                           "large": hi["events"],
                           "label": f"{size_label(hi['events'])}/{size_label(lo['events'])}"}
    for key in ("events_per_s", "second_half_events_per_s", "events_per_cpu_s",
                "engine_events_per_s", "peak_rss_mb"):
        a, b = lo.get(key), hi.get(key)
        out[key] = round(b / a, 3) if a and b else None
    if query != BASELINE and out["events_per_s"] is not None:
        out["throughput_target_met"] = out["events_per_s"] >= TARGET_THROUGHPUT
        out["rss_target_met"] = out["peak_rss_mb"] <= TARGET_RSS
    return out


def ratio_line(r: dict[str, Any]) -> str:
    """A summary line for ``ratios``' result."""
    def x(v: Any) -> str:
        return f"{v:.2f}×" if isinstance(v, (int, float)) else "–"

    line = (f"- {r['query']}: {r['label']} throughput **{x(r['events_per_s'])}** by wall time "
            f"({x(r.get('second_half_events_per_s'))} over the 2nd half, "
            f"{x(r['events_per_cpu_s'])} per CPU-second, {x(r['engine_events_per_s'])} "
            f"evaluator alone); {r['label']} peak RSS **{x(r['peak_rss_mb'])}**")
    if "throughput_target_met" in r:
        met = {True: "met", False: "MISSED"}
        line += (f" — targets: throughput ≥ {TARGET_THROUGHPUT}× "
                 f"{met[r['throughput_target_met']]}, peak RSS ≤ {TARGET_RSS}× "
                 f"{met[r['rss_target_met']]}")
    return line + "."


# --------------------------------------------------------------------------- orchestration
def parse_sizes(text: str) -> list[int]:
    """'1000000,5M,20m' → [1000000, 5000000, 20000000]."""
    out = []
    for part in text.split(","):
        part = part.strip().lower().replace("_", "")
        if not part:
            continue
        mult = {"k": 1000, "m": 1_000_000}.get(part[-1], 1)
        out.append(int(part.rstrip("km")) * mult)
    return sorted(set(out))


def run_benchmark(a: argparse.Namespace) -> int:
    """Every (query, length) plus the read-only baselines; print the report; exit status."""
    names = [q.strip().removesuffix(".ceql") for q in a.queries.split(",") if q.strip()]
    files = {n: a.query_dir / f"{n}.ceql" for n in names}
    missing = [str(f) for f in files.values() if not f.exists()]
    if missing:
        sys.exit(f"no such query file: {', '.join(missing)}")
    plan: dict[str, list[int]] = {n: a.sizes for n in names}
    for spec in a.sizes_for:
        name, _, sizes = spec.partition("=")
        if name not in plan:
            sys.exit(f"--sizes-for {spec!r}: {name!r} is not in --queries")
        plan[name] = parse_sizes(sizes)
    all_sizes = sorted({n for sizes in plan.values() for n in sizes})
    if a.arrow_pool:
        os.environ["ARROW_DEFAULT_MEMORY_POOL"] = a.arrow_pool  # inherited by the workers
    csvs = {n: eb.ensure_stream(n, a.seed) for n in all_sizes}
    started = dt.datetime.now()
    out_json: Path = a.json or eb.BENCH_DIR / "out" / f"scaling-{started:%Y-%m-%d-%H%M%S}.jsonl"
    out_json.parent.mkdir(parents=True, exist_ok=True)
    head = [
        f"# ceql scaling — {started:%Y-%m-%d %H:%M:%S}",
        "",
        f"- Machine: {eb.cpu_model()}, {os.cpu_count()} cores, {eb.ram_gib():.1f} GiB RAM, "
        f"{platform.system()} {platform.release()}; load average (1/5/15 min) at start "
        f"{eb.load_avg()}",
        f"- ceql: Python {platform.python_version()}; source digest {eb.engine_digest()}",
        f"- Streams: gen_stock.py seed {a.seed}, {', '.join(size_label(n) for n in all_sizes)}"
        f" events ({eb.CACHE_DIR}); pyarrow.csv.open_csv, {a.block_mb:g} MiB blocks, parsing "
        f"on one thread, Arrow memory pool {a.arrow_pool or 'default'}; repeat {a.repeat} "
        "(median by wall time, repeats interleaved over lengths)",
        f"- Command: `{shlex.join([os.path.relpath(sys.executable), *sys.argv])}`",
        "",
        TABLE_HEAD,
    ]
    print("\n".join(head), flush=True)
    baselines: dict[int, dict[str, Any]] = {}
    summaries: list[dict[str, Any]] = []
    failed = False

    def measure(name: str, qfile: Path | None, sizes: list[int]) -> list[dict[str, Any]]:
        runs: dict[int, list[dict[str, Any]]] = {n: [] for n in sizes}
        loads: dict[int, list[float]] = {n: [] for n in sizes}
        for _ in range(a.repeat):
            for n in sizes:
                loads[n].append(round(os.getloadavg()[0], 2))
                runs[n].append(run_worker(qfile, csvs[n], n, a.block_mb, a.timeout))
        return [summarize_runs(name, n, runs[n], loads[n]) for n in sizes]

    def report(rows: list[dict[str, Any]]) -> None:
        nonlocal failed
        with out_json.open("a") as f:
            for rec in rows:
                failed |= "error" in rec
                print(table_row(rec, baselines.get(rec["events"])), flush=True)
                base = baselines.get(rec["events"], {}).get("peak_rss_mb")
                if base and rec["query"] != BASELINE and "error" not in rec:
                    rec["read_only_peak_rss_mb"] = base
                    rec["engine_mb"] = round(rec["peak_rss_mb"] - base, 1)
                f.write(json.dumps(rec) + "\n")
            r = ratios(rows[0]["query"], rows)
            if r is not None:
                summaries.append(r)
                f.write(json.dumps(r) + "\n")

    base_rows = measure(BASELINE, None, all_sizes)
    baselines.update({r["events"]: r for r in base_rows})
    report(base_rows)
    for name in names:
        report(measure(name, files[name], plan[name]))
    ended = dt.datetime.now()
    tail = ["", "Ratios, largest over smallest length (targets from issue 4: throughput ≥ "
            f"{TARGET_THROUGHPUT}×, peak RSS ≤ {TARGET_RSS}×):", "",
            *map(ratio_line, summaries), "",
            f"- Finished {ended:%Y-%m-%d %H:%M:%S} ({(ended - started).total_seconds() / 60:.1f}"
            f" min); load average at end {eb.load_avg()}; source digest at end "
            f"{eb.engine_digest()}; JSON lines: {out_json}"]
    print("\n".join(tail), flush=True)
    return 3 if failed else 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples: `.venv/bin/python bench/scaling.py --sizes 1M,5M --repeat 1` (quick); "
               "`.venv/bin/python bench/scaling.py` (issue 4's full measurement).",
    )
    p.add_argument("--sizes", type=parse_sizes, default=parse_sizes(DEFAULT_SIZES),
                   help=f"comma-separated stream lengths, k/M suffixes allowed (default "
                        f"{DEFAULT_SIZES}); the ratios compare the largest with the smallest")
    p.add_argument("--queries", default=DEFAULT_QUERIES,
                   help=f"comma-separated query names in --query-dir (default {DEFAULT_QUERIES})")
    p.add_argument("--sizes-for", action="append", default=[], metavar="QUERY=SIZES",
                   help="other lengths for one query, e.g. d3_any=1M,5M (repeatable)")
    p.add_argument("--repeat", type=int, default=3,
                   help="fresh-process runs per (query, length); the median is reported "
                        "(default 3)")
    p.add_argument("--seed", type=int, default=42, help="gen_stock.py seed (default 42)")
    p.add_argument("--block-mb", type=float, default=1.0,
                   help="CSV reader block size in MiB (default 1; the reader buffers up to 32 "
                        "blocks ahead)")
    p.add_argument("--arrow-pool", choices=("mimalloc", "jemalloc", "system"),
                   help="Arrow memory pool of the workers (ARROW_DEFAULT_MEMORY_POOL; default: "
                        "pyarrow's, mimalloc, whose delayed purging leaves ~20 MB transient "
                        "peaks)")
    p.add_argument("--query-dir", type=Path, default=eb.ANCHORS_DIR / "queries",
                   help="folder of .ceql files (default: <shared>/anchors/queries)")
    p.add_argument("--timeout", type=int, default=3600,
                   help="seconds allowed per run (default 3600)")
    p.add_argument("--json", type=Path,
                   help="JSON-lines output (default bench/out/scaling-<date-time>.jsonl)")
    # internal: one streamed pass in this (fresh) process
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--query", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--input", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--events-hint", type=int, default=0, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.repeat < 1:
        p.error("--repeat must be at least 1")
    if a.worker and a.input is None:
        p.error("--worker needs --input")
    return a


def main(argv: Sequence[str] | None = None) -> int:
    a = parse_args(argv)
    if a.worker:
        worker(a.query, a.input, a.block_mb, a.events_hint)
        return 0
    return run_benchmark(a)


if __name__ == "__main__":
    sys.exit(main())
