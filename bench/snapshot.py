#!/usr/bin/env python3
"""Benchmark evaluator snapshots: size, dump and restore time against live state.

Usage (from the repository root)::

    .venv/bin/python bench/snapshot.py [--repeat 3] [--quick]

Two sweeps, each row one evaluator fed an Arrow table (``time="t"``, seconds):

* **partitions** — ``SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 60 SECONDS`` fed one
  ``A`` per key within 30 s, so N partitions are live, each with one pending ``A`` run;
* **window** — one partition, ``SELECT * FROM S WHERE A ; B+ ; C WITHIN w SECONDS`` fed one
  event per second for w seconds (every tenth an ``A``, the rest ``B``), so the live tECS
  holds the whole window; plus one row ``A : B:+ : C`` (one ``A``, then ``B``s: a single
  chain of w nodes, to show that nothing recurses on its length).

Per row: ``ev.live()``, the snapshot's bytes and tECS nodes, and the median over ``--repeat``
runs of ``ev.snapshot()`` (dump) and ``compile(text).restore(data)`` (restore, into the
query this process compiled already): wall and CPU time with the garbage collector on (as a
caller gets it), CPU time with it off; per-unit costs are CPU time (the VM is shared).

Checked, not measured (an assertion fails the run): repeated dumps give the same bytes; the
restored evaluator has the same ``live()`` counts and gives the same matches as the original
for a few continuation events (at most ``CHECK_MATCHES`` of them, enumerated lazily:
``A ; B+ ; C`` has 2^w matches); and after an event far past the window the snapshot is back
to the size of an evaluator that has seen only that event.

Prints Markdown tables and writes one JSON line per row to
``bench/out/snapshot-<date-time>.jsonl``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import itertools
import json
import os
import pickle
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

import ceql
from ceql.runtime.snapshot import MAGIC

sys.path.insert(0, str(Path(__file__).resolve().parent))
import engine as eb  # bench/engine.py: machine description and load average

BENCH_DIR = Path(__file__).resolve().parent
PARTITION_QUERY = "SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 60 SECONDS"
WINDOW_QUERY = "SELECT * FROM S WHERE A ; B+ ; C WITHIN {w} SECONDS"
CHAIN_QUERY = "SELECT * FROM S WHERE A : B:+ : C WITHIN {w} SECONDS"
DEFAULT_PARTITIONS = "10,100,1000,10000,100000"
DEFAULT_WINDOWS = "10,100,1000,10000,100000"
QUICK_SIZES = "10,100,1000"
CHECK_MATCHES = 2000  # matches compared per continuation (A ; B+ ; C has 2^w of them)
HISTORY_SLACK = 32  # bytes: the counters (offset, clock) are wider ints after a long stream

Full = tuple[Any, ...]

PARTITION_HEAD = (
    "| live partitions | states / runs | feed s | snapshot bytes | bytes / partition "
    "| dump ms | restore ms | CPU ms (dump / restore) | CPU µs / partition (dump / restore) "
    "| GC off: CPU ms (dump / restore) | after the window: bytes | load |\n"
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
WINDOW_HEAD = (
    "| query | w (s) | events in window | states / runs / expiring | tECS nodes saved "
    "| snapshot bytes | bytes / window event | dump ms | restore ms | CPU ms (dump / restore) "
    "| CPU µs / window event (dump / restore) | GC off: CPU ms (dump / restore) "
    "| after the window: bytes | load |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")


# --------------------------------------------------------------------------- helpers
def full(m: ceql.Match) -> Full:
    """Everything a match reports, comparable."""
    return (m.end_position, m.start_position, tuple(m.positions), tuple(m.partition),
            m.start_time, m.end_time, tuple(sorted(m.variables.items())))


def timed(fn: Callable[[], Any], repeat: int, gc_on: bool) -> tuple[float, float, Any]:
    """Median wall and CPU seconds of ``repeat`` calls of ``fn`` (collected before each) and
    the last result; the collector stays off during the call when ``gc_on`` is false."""
    walls: list[float] = []
    cpus: list[float] = []
    out: Any = None
    for _ in range(repeat):
        out = None  # drop the previous result (a restored evaluator) before timing
        gc.collect()
        if not gc_on:
            gc.disable()
        try:
            c0, t0 = time.process_time(), time.perf_counter()
            out = fn()
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        finally:
            gc.enable()
    return statistics.median(walls), statistics.median(cpus), out


def saved_nodes(data: bytes) -> int:
    """How many tECS nodes a snapshot holds (its flattened table; read outside timing)."""
    payload = pickle.loads(data[len(MAGIC):])
    return len(payload["nodes"])


def snapshot_size_after(text: str, data: bytes, far: dict[str, Any]) -> tuple[int, int]:
    """Bytes of the snapshot of ``data`` restored and fed ``far``, and of a fresh evaluator
    fed only ``far``; asserts the two agree up to the counters' width."""
    ev = ceql.compile(text).restore(data)
    ev.feed([far])
    after = ev.snapshot()
    fresh = ceql.compile(text).evaluator(time="t")
    fresh.feed([far])
    base = len(fresh.snapshot())
    assert ev.live() == fresh.live(), (ev.live(), fresh.live())
    assert len(after) <= base + HISTORY_SLACK, (len(after), base)
    return len(after), base


def measure(text: str, table: pa.Table, repeat: int) -> tuple[dict[str, Any], ceql.Evaluator,
                                                                bytes]:
    """Feed ``table``, then time dump and restore; the record, the evaluator and its bytes."""
    ev = ceql.compile(text).evaluator(time="t")
    t0 = time.perf_counter()
    ev.feed(table)
    feed_s = time.perf_counter() - t0
    first = ev.snapshot()  # prunes what left the window, as every later dump does
    live = ev.live()
    dump_s, dump_cpu, data = timed(ev.snapshot, repeat, gc_on=True)
    assert data == first, "two dumps of the same evaluator differ"
    _, dump_off_cpu, again = timed(ev.snapshot, repeat, gc_on=False)
    assert again == first, "two dumps of the same evaluator differ"
    query = ceql.compile(text)
    restore_s, restore_cpu, ev2 = timed(lambda: query.restore(data), repeat, gc_on=True)
    assert ev2.live() == live, (ev2.live(), live)
    del ev2
    _, restore_off_cpu, ev2 = timed(lambda: query.restore(data), repeat, gc_on=False)
    assert ev2.live() == live, (ev2.live(), live)
    del ev2
    rec: dict[str, Any] = {
        "query": text, "events": table.num_rows, "live": list(live),
        "bytes": len(data), "nodes": saved_nodes(data), "feed_s": round(feed_s, 4),
        "dump_ms": round(dump_s * 1e3, 3), "restore_ms": round(restore_s * 1e3, 3),
        "dump_cpu_ms": round(dump_cpu * 1e3, 3), "restore_cpu_ms": round(restore_cpu * 1e3, 3),
        "dump_cpu_ms_gc_off": round(dump_off_cpu * 1e3, 3),
        "restore_cpu_ms_gc_off": round(restore_off_cpu * 1e3, 3), "repeat": repeat,
    }
    return rec, ev, data


def same_matches(text: str, ev: ceql.Evaluator, data: bytes,
                 steps: Sequence[list[dict[str, Any]]]) -> int:
    """Feed ``steps`` to ``ev`` and to ``data`` restored; assert the same matches and live
    counts after each. The last step is enumerated lazily (its first ``CHECK_MATCHES``
    matches) and ends both evaluators' use. Returns how many matches were compared."""
    ev2 = ceql.compile(text).restore(data)
    assert ev2.live() == ev.live(), (ev2.live(), ev.live())
    compared = 0
    for i, step in enumerate(steps):
        if i < len(steps) - 1:
            a, b = [full(m) for m in ev.feed(step)], [full(m) for m in ev2.feed(step)]
            assert ev.live() == ev2.live(), (ev.live(), ev2.live())
        else:
            a = [full(m) for m in itertools.islice(ev.iter_feed(step), CHECK_MATCHES)]
            b = [full(m) for m in itertools.islice(ev2.iter_feed(step), CHECK_MATCHES)]
        assert a == b, f"restored evaluator differs on step {i}: {a[:3]} vs {b[:3]}"
        compared += len(a)
    return compared


def load_1min() -> float:
    return round(os.getloadavg()[0], 2)


# --------------------------------------------------------------------------- sweeps
def partitions_row(n: int, repeat: int) -> dict[str, Any]:
    """N live partitions, each with a pending A run."""
    table = pa.table({"type": ["A"] * n, "k": list(range(n)),
                      "t": [i * 30.0 / n for i in range(n)]})
    rec, ev, data = measure(PARTITION_QUERY, table, repeat)
    assert rec["live"][0] == n, f"{rec['live'][0]} live partitions, wanted {n}"
    keys = min(n, 5)
    cont = [[{"type": "B", "k": k, "t": 31.0} for k in range(keys)],
            [{"type": "B", "k": -1, "t": 32.0}, {"type": "B", "k": keys - 1, "t": 33.0}]]
    compared = same_matches(PARTITION_QUERY, ev, data, cont)
    # one match per key, then none for the new key and one more for the last key (all matches)
    assert compared == keys + 1, f"{compared} matches compared, wanted {keys + 1}"
    after, base = snapshot_size_after(PARTITION_QUERY, data, {"type": "Z", "k": -2, "t": 1e4})
    rec.update(sweep="partitions", partitions=n, matches_compared=compared,
               after_bytes=after, fresh_bytes=base,
               bytes_per_partition=round(rec["bytes"] / n, 1),
               dump_cpu_us_per_partition=round(rec["dump_cpu_ms"] * 1e3 / n, 2),
               restore_cpu_us_per_partition=round(rec["restore_cpu_ms"] * 1e3 / n, 2))
    return rec


def window_row(w: int, repeat: int, chain: bool) -> dict[str, Any]:
    """One partition whose window holds w events, one a second."""
    text = (CHAIN_QUERY if chain else WINDOW_QUERY).format(w=w)
    types = ["A" if (i == 0 if chain else i % 10 == 0) else "B" for i in range(w)]
    table = pa.table({"type": types, "t": [float(i) for i in range(w)]})
    rec, ev, data = measure(text, table, repeat)
    cont = [[{"type": "B", "t": w - 0.75}], [{"type": "C", "t": w - 0.5}]]
    compared = same_matches(text, ev, data, cont)
    assert compared >= 1, "the continuation produced no match to compare"
    after, base = snapshot_size_after(text, data, {"type": "Z", "t": 10.0 * w})
    rec.update(sweep="window", shape="chain" if chain else "any", w=w, window_events=w,
               matches_compared=compared, after_bytes=after, fresh_bytes=base,
               bytes_per_event=round(rec["bytes"] / w, 1),
               dump_cpu_us_per_event=round(rec["dump_cpu_ms"] * 1e3 / w, 2),
               restore_cpu_us_per_event=round(rec["restore_cpu_ms"] * 1e3 / w, 2))
    return rec


# --------------------------------------------------------------------------- report
def partitions_line(r: dict[str, Any]) -> str:
    p, s, runs, _ = r["live"]
    return (f"| {p:,} | {s:,} / {runs:,} | {r['feed_s']:.3f} | {r['bytes']:,} "
            f"| {r['bytes_per_partition']:,.1f} | {r['dump_ms']:,.2f} | {r['restore_ms']:,.2f} "
            f"| {r['dump_cpu_ms']:,.2f} / {r['restore_cpu_ms']:,.2f} "
            f"| {r['dump_cpu_us_per_partition']:.2f} / {r['restore_cpu_us_per_partition']:.2f} "
            f"| {r['dump_cpu_ms_gc_off']:,.2f} / {r['restore_cpu_ms_gc_off']:,.2f} "
            f"| {r['after_bytes']:,} | {r['load_1min']} |")


def window_line(r: dict[str, Any]) -> str:
    _, s, runs, fifo = r["live"]
    shape = "`A : B:+ : C` (chain)" if r["shape"] == "chain" else "`A ; B+ ; C`"
    return (f"| {shape} | {r['w']:,} | {r['window_events']:,} | {s:,} / {runs:,} / {fifo:,} "
            f"| {r['nodes']:,} | {r['bytes']:,} | {r['bytes_per_event']:,.1f} "
            f"| {r['dump_ms']:,.2f} | {r['restore_ms']:,.2f} "
            f"| {r['dump_cpu_ms']:,.2f} / {r['restore_cpu_ms']:,.2f} "
            f"| {r['dump_cpu_us_per_event']:.2f} / {r['restore_cpu_us_per_event']:.2f} "
            f"| {r['dump_cpu_ms_gc_off']:,.2f} / {r['restore_cpu_ms_gc_off']:,.2f} "
            f"| {r['after_bytes']:,} | {r['load_1min']} |")


def sizes(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples: `.venv/bin/python bench/snapshot.py --quick` (seconds); "
               "`.venv/bin/python bench/snapshot.py` (everything, a few minutes).")
    p.add_argument("--partitions", default=DEFAULT_PARTITIONS,
                   help=f"live partition counts, comma-separated (default {DEFAULT_PARTITIONS})")
    p.add_argument("--windows", default=DEFAULT_WINDOWS,
                   help=f"window lengths in seconds = events in the window, comma-separated "
                        f"(default {DEFAULT_WINDOWS}); the chain row uses the largest")
    p.add_argument("--repeat", type=int, default=3,
                   help="timed dumps and restores per row; the median is reported (default 3)")
    p.add_argument("--quick", action="store_true",
                   help=f"smoke run: sizes {QUICK_SIZES} for both sweeps")
    p.add_argument("--json", type=Path,
                   help="JSON-lines output (default bench/out/snapshot-<date-time>.jsonl)")
    a = p.parse_args(argv)
    if a.repeat < 1:
        p.error("--repeat must be at least 1")
    if a.quick:
        a.partitions = a.windows = QUICK_SIZES
    return a


def main(argv: Sequence[str] | None = None) -> int:
    a = parse_args(argv)
    started = dt.datetime.now()
    digest = eb.engine_digest()
    out_json: Path = a.json or BENCH_DIR / "out" / f"snapshot-{started:%Y-%m-%d-%H%M%S}.jsonl"
    out_json.parent.mkdir(parents=True, exist_ok=True)
    print("\n".join([
        f"# ceql evaluator snapshots — {started:%Y-%m-%d %H:%M:%S}",
        "",
        f"- Machine: {eb.cpu_model()}, {os.cpu_count()} cores, {eb.ram_gib():.1f} GiB RAM, "
        f"{platform.system()} {platform.release()}; load average (1/5/15 min) at start "
        f"{eb.load_avg()}",
        f"- Python {platform.python_version()} ({sys.executable}); median of {a.repeat} "
        f"dumps and restores per row",
        f"- ceql source digest at start: {digest} (sha256 of python/ceql/*.py, *.lark)",
        f"- Command: `{shlex.join([os.path.relpath(sys.executable), *sys.argv])}`",
    ]), flush=True)

    def emit(rec: dict[str, Any], line: Callable[[dict[str, Any]], str]) -> None:
        rec["load_1min"] = load_1min()
        rec["time"] = dt.datetime.now().isoformat(timespec="seconds")
        rec["engine_digest"] = digest
        print(line(rec), flush=True)
        with out_json.open("a") as f:
            f.write(json.dumps(rec) + "\n")

    records: list[dict[str, Any]] = []
    print(f"\n## Partitions: `{PARTITION_QUERY}`, one pending A run each\n\n{PARTITION_HEAD}",
          flush=True)
    for n in sizes(a.partitions):
        rec = partitions_row(n, a.repeat)
        emit(rec, partitions_line)
        records.append(rec)
    windows = sizes(a.windows)
    print(f"\n## Window: one partition, one event a second (`{WINDOW_QUERY.format(w='w')}`: "
          f"every tenth an A; chain `{CHAIN_QUERY.format(w='w')}`: one A, then Bs)\n\n"
          f"{WINDOW_HEAD}", flush=True)
    for w, chain in [*((w, False) for w in windows), (max(windows), True)]:
        rec = window_row(w, a.repeat, chain)
        emit(rec, window_line)
        records.append(rec)
    after = sorted({r["after_bytes"] for r in records})
    fresh = sorted({r["fresh_bytes"] for r in records})
    ended = dt.datetime.now()
    end_digest = eb.engine_digest()
    print("\n".join([
        "",
        f"- After an event far past the window, every snapshot is back to {after[0]:,}–"
        f"{after[-1]:,} bytes (an evaluator that saw only that event: {fresh[0]:,}–"
        f"{fresh[-1]:,} bytes); checked on every row.",
        f"- Restored evaluators gave the same matches as the originals on every row "
        f"({sum(r['matches_compared'] for r in records):,} matches compared).",
        f"- ceql source digest at end: {end_digest}"
        f"{' (unchanged)' if end_digest == digest else ' (CHANGED during the run)'}",
        f"- Finished {ended:%Y-%m-%d %H:%M:%S} ({(ended - started).total_seconds() / 60:.1f} "
        f"min); load average at end {eb.load_avg()}; JSON lines: {out_json}",
    ]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
