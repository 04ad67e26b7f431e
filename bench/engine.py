#!/usr/bin/env python3
"""Benchmark the ceql engine against CORE C++ (pycer) on the shared anchor workloads.

Usage (from the repository root)::

    .venv/bin/python bench/engine.py [--events 1000000] [--repeat 3] [--only 'p3*'] [--no-core]
                                     [--baseline REV]

For every query file of ``<shared>/anchors/queries`` (``<shared>`` is ``$CEQL_SHARED`` or the
``shared`` folder next to the repository), interleaved query by query in one invocation:

* ceql, in a fresh subprocess: the stock CSV is read with ``pyarrow.csv.read_csv`` before
  timing; each repeat builds ``ceql.compile(text).evaluator(time="ts", time_unit="us")`` and
  times ``ev.feed(table)`` (evaluation including every ``Match``).  Reports the median
  repeat, CPU time, the peak RSS before timing (table loaded) and after the timed runs.
* CORE C++, through ``<shared>/anchors/core_cpp.py`` (which makes its own Python 3.13 venv
  with pycer on first use), with the same CSV, query file and repeat count.
* The two match sets, in core_cpp.py's match-file format, compared line by line.

With ``--baseline REV`` (a git revision: ``HEAD~1``, ``7dce591``, ...), ceql *at REV* is
measured against ceql of the working tree, query by query in the same invocation: REV's
tree is exported with ``git archive`` into a temporary folder (no worktree, branch or
index change; deleted at the end).  Each side is a long-lived worker (this script with
``--serve``, the same interpreter, ``PYTHONPATH`` = that side's ``python/`` folder, which
precedes the editable install's ``.pth`` entry; each worker reports where its ``ceql`` modules
come from and a stray one is an error).  Both load the stream and compile before any timing;
then the same repeat count each, alternated (REV first on odd repeats, the tree first on even
ones), median reported.  Per query: events/s and CPU s of both, ratios tree / REV (> 1: the
tree is faster) and whether the two match sets are equal; summary: geometric mean, min and
max of the ratios, and the spread of repeats as a noise level.  CORE runs too unless
``--no-core``.  The JSON lines get one more, last, line ``{"query": "(summary)", ...}``.

Prints a Markdown report (per-query table and summary) and writes one JSON line per query
to ``bench/out/engine-<date-time>.jsonl``.  This is a benchmark, not a test: the exit
status is 0 even when ceql is slower, but 2 when any match set differs (ceql vs CORE, or tree
vs REV) and 3 when a run failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import fnmatch
import gc
import hashlib
import importlib.util
import json
import math
import os
import platform
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import baseline  # bench/baseline.py: --baseline REV (export, paired workers, report)

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
SHARED_DIR = Path(os.environ.get("CEQL_SHARED", Path(__file__).resolve().parents[2] / "shared"))
ANCHORS_DIR = SHARED_DIR / "anchors"
CACHE_DIR = Path(os.environ.get("CEQL_ANCHORS_CACHE", Path.home() / ".cache" / "ceql-anchors"))
EXAMPLES_SHOWN = 3

Key = tuple[int, int, tuple[int, ...]]


# --------------------------------------------------------------------------- helpers
def rss_peak_mb() -> float:
    """Peak resident set size of this process so far, in MiB.

    ``ru_maxrss`` (KiB on Linux) is the figure core_cpp.py reports for CORE.  After fork +
    exec it can carry the *parent's* peak, because the forked copy's high-water mark survives
    exec; so this prefers /proc's VmHWM, which belongs to the current program image only.  The
    orchestrating process keeps its own peak small (comparisons run in a child) so that CORE's
    ru_maxrss is not inflated either.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_now_mb() -> float:
    """Current resident set size of this process, in MiB (0 where /proc is unavailable)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def match_line(start: int, end: int, positions: Sequence[int]) -> str:
    """One line of core_cpp.py's match file (json.dumps default spacing, no newline)."""
    return json.dumps({"start": start, "end": end, "positions": list(positions)})


def read_lines(path: Path) -> set[str]:
    """The distinct lines of a match file (without their newlines)."""
    with path.open() as f:
        return {line.rstrip("\n") for line in f}


def positions_text(line: str) -> str:
    """The ``positions`` list of a match-file line, as written."""
    return line[line.index('"positions": ') :]


HULL_RE = re.compile(
    r'\{"start": (-?\d+), "end": (-?\d+), "positions": \[(-?\d+)(?:.*, (-?\d+))?\]\}'
)


def interval_is_hull(line: str) -> bool:
    """Whether a line's start/end are its smallest/largest position (true for SELECT *)."""
    m = HULL_RE.fullmatch(line)
    if m is None:
        return False
    start, end, first, last = m.groups()
    return start == first and end == (last if last is not None else first)


def first_lines_in(path: Path, wanted: set[str], n: int) -> list[str]:
    """The first ``n`` lines of a (sorted) match file that are in ``wanted``."""
    out: list[str] = []
    if wanted:
        with path.open() as f:
            for line in f:
                line = line.rstrip("\n")
                if line in wanted:
                    out.append(line)
                    if len(out) >= n:
                        break
    return out


def files_equal(a: Path, b: Path, chunk: int = 1 << 20) -> bool:
    """Byte-for-byte equality of two files."""
    if a.stat().st_size != b.stat().st_size:
        return False
    with a.open("rb") as fa, b.open("rb") as fb:
        while True:
            x, y = fa.read(chunk), fb.read(chunk)
            if x != y:
                return False
            if not x:
                return True


@dataclass
class Comparison:
    """Outcome of comparing ceql's and CORE's match files.

    ``equal``: byte-identical files.  Otherwise ``only_ceql``/``only_core`` count the lines
    (start, end, positions) one side lacks, and ``positions_equal`` tells whether the two
    sets agree once start/end are ignored; ``hull_mismatch_*`` count, per side, the lines whose
    start/end are not their smallest/largest position (for ``SELECT *`` they must be).
    """

    equal: bool
    positions_equal: bool = False
    only_ceql: int = 0
    only_core: int = 0
    hull_mismatch_ceql: int = 0
    hull_mismatch_core: int = 0
    examples_ceql: list[str] = field(default_factory=list)
    examples_core: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        """``equal``, ``positions-equal`` (only start/end differ) or ``differ``."""
        if self.equal:
            return "equal"
        return "positions-equal" if self.positions_equal else "differ"

    def label(self) -> str:
        if self.equal:
            return "equal"
        if self.positions_equal:
            return (f"positions equal; start/end differ on {self.only_core:,} (CORE's are not "
                    f"min/max position on {self.hull_mismatch_core:,}, ceql's on "
                    f"{self.hull_mismatch_ceql:,})")
        return f"**DIFFER** ({self.only_ceql:,} only-ceql, {self.only_core:,} only-CORE)"


def compare_match_files(ceql_file: Path, core_file: Path) -> Comparison:
    """Compare two match files as sets; count and sample what only one side has."""
    if files_equal(ceql_file, core_file):
        return Comparison(True, positions_equal=True)
    a, b = read_lines(ceql_file), read_lines(core_file)
    only_a, only_b = a - b, b - a
    res = Comparison(False, only_ceql=len(only_a), only_core=len(only_b))
    res.hull_mismatch_ceql = sum(1 for x in only_a if not interval_is_hull(x))
    res.hull_mismatch_core = sum(1 for x in only_b if not interval_is_hull(x))
    if not only_a and not only_b:  # same lines, other order or duplicates
        res.positions_equal = True
        res.examples_ceql.append("same matches, but the files differ byte-wise")
        return res
    pa_, pb_ = {positions_text(x) for x in a}, {positions_text(x) for x in b}
    del a, b
    res.positions_equal = pa_ == pb_
    res.examples_ceql = first_lines_in(ceql_file, only_a, EXAMPLES_SHOWN)
    res.examples_core = first_lines_in(core_file, only_b, EXAMPLES_SHOWN)
    return res


# --------------------------------------------------------------------------- ceql worker
def engine_digest(root: Path | None = None) -> str:
    """Short SHA-256 of the ceql package's source files (the engine is edited concurrently).

    ``root``: a ``ceql`` package folder; default: the one ``import ceql`` would load.
    """
    if root is None:
        spec = importlib.util.find_spec("ceql")
        if spec is None or spec.origin is None:
            return "ceql not importable"
        root = Path(spec.origin).parent
    h = hashlib.sha256()
    for f in sorted(root.rglob("*")):
        if f.is_file() and f.suffix in (".py", ".lark"):
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:12]


class Measurement:
    """ceql on one query in this process: the stream loaded, then timed repeats, a record."""

    def __init__(self, query_file: Path, csv_file: Path) -> None:
        import pyarrow.csv as pacsv

        import ceql

        self.ceql = ceql
        self.query_file = query_file
        self.rss_start = rss_peak_mb()
        t0 = time.perf_counter()
        self.table = pacsv.read_csv(csv_file)
        self.load_s = time.perf_counter() - t0
        self.text = query_file.read_text()
        self.query = ceql.compile(self.text)
        gc.collect()
        self.rss_pre_peak, self.rss_pre_now = rss_peak_mb(), rss_now_mb()
        self.runs: list[float] = []
        self.cpus: list[float] = []
        self.counts: list[int] = []
        self.matches: list[Any] = []

    def run_once(self) -> tuple[float, float, int]:
        """One timed ``feed`` of the whole table: (wall s, CPU s, matches)."""
        self.matches = []
        gc.collect()
        ev, table = self.ceql.compile(self.text).evaluator(time="ts", time_unit="us"), self.table
        c0, w0 = time.process_time(), time.perf_counter()
        matches = ev.feed(table)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        self.matches = matches
        self.runs.append(wall)
        self.cpus.append(cpu)
        self.counts.append(len(matches))
        del ev, matches
        return wall, cpu, self.counts[-1]

    def result(self, matches_out: Path | None) -> dict[str, Any]:
        """The record of the runs so far (median); writes the last run's match file."""
        rss_peak = rss_peak_mb()
        seconds = statistics.median(self.runs)
        keys = sorted({(m.end_position, m.start_position, tuple(m.positions))
                       for m in self.matches})
        if matches_out is not None:
            with matches_out.open("w") as f:
                for end, start, pos in keys:
                    f.write(match_line(start, end, pos) + "\n")
        rows = self.table.num_rows
        result: dict[str, Any] = {
            "system": f"ceql {self.ceql.__version__} (Python {platform.python_version()})",
            "engine_digest": engine_digest(),
            "query": self.query_file.name,
            "events": rows,
            "seconds": round(seconds, 4),
            "events_per_s": round(rows / seconds),
            "matches": self.counts[-1],
            "distinct_matches": len(keys),
            "runs_s": [round(r, 4) for r in self.runs],
            "cpu_s": round(statistics.median(self.cpus), 4),
            "load_csv_s": round(self.load_s, 3),
            "rss_start_mb": round(self.rss_start, 1),
            "rss_pre_timing_peak_mb": round(self.rss_pre_peak, 1),
            "rss_pre_timing_now_mb": round(self.rss_pre_now, 1),
            "peak_rss_mb": round(rss_peak, 1),
            "strategy": self.query.ast.strategy,
            "select_star": self.query.ast.select is None,
        }
        if len(set(self.counts)) > 1:
            result["matches_per_run"] = self.counts
        return result


def worker(query_file: Path, csv_file: Path, repeat: int, matches_out: Path | None) -> None:
    """Measure ceql on one query (runs in its own process); print one JSON line."""
    m = Measurement(query_file, csv_file)
    for _ in range(max(1, repeat)):
        m.run_once()
    print(json.dumps(m.result(matches_out)), flush=True)


def serve(query_file: Path, csv_file: Path, matches_out: Path | None) -> None:
    """Measure ceql on one query on command (``--baseline``'s workers).

    Prints ``{"ready": ..., "ceql_modules": [files]}`` once loaded, then answers each stdin
    line ``run`` with one timed repeat's JSON line, and ``done`` (or end of input) with the
    record of :func:`worker`, plus ``ceql_file``.
    """
    m = Measurement(query_file, csv_file)
    mods = sorted({str(mod.__file__) for name, mod in sys.modules.items()
                   if (name == "ceql" or name.startswith("ceql.")) and getattr(mod, "__file__",
                                                                                None)})
    print(json.dumps({"ready": True, "ceql_file": m.ceql.__file__, "ceql_modules": mods}),
          flush=True)
    while sys.stdin.readline().strip() == "run":
        wall, cpu, n = m.run_once()
        print(json.dumps({"wall": wall, "cpu": cpu, "matches": n}), flush=True)
    if not m.runs:
        sys.exit("serve: no timed run before done")
    print(json.dumps({**m.result(matches_out), "ceql_file": m.ceql.__file__}), flush=True)


# --------------------------------------------------------------------------- orchestration
def ensure_stream(events: int, seed: int) -> Path:
    """The cached stock CSV for (events, seed), generated with gen_stock.py when missing."""
    path = CACHE_DIR / f"stock_{events}_seed{seed}.csv"
    if not path.exists():
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        print(f"generating {path} ...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, str(ANCHORS_DIR / "gen_stock.py"), "--events",
                        str(events), "--seed", str(seed), "--out", str(tmp)], check=True)
        tmp.replace(path)
    return path


def query_order(path: Path) -> tuple[int, list[Any]]:
    """P queries, then Q, then the dense D ones; numbers compared as numbers."""
    family = {"p": 0, "q": 1, "d": 2}.get(path.stem[:1], 3)
    return family, [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.stem)]


def select_queries(queries_dir: Path, only: str) -> list[Path]:
    """Query files whose stem matches one of the comma-separated globs in ``only``."""
    patterns = [p.strip().removesuffix(".ceql") for p in only.split(",") if p.strip()]
    files = [f for f in queries_dir.glob("*.ceql")
             if any(fnmatch.fnmatchcase(f.stem, p) for p in patterns)]
    return sorted(files, key=query_order)


def group_of(stem: str) -> str:
    """Summary group of a query: P, P', window, Q or dense."""
    if re.fullmatch(r"p\d+_w\d+_\w+", stem):
        return "window"
    if re.fullmatch(r"p\d+prime_\w+", stem):
        return "P'"
    if re.fullmatch(r"p\d+_\w+", stem):
        return "P"
    if stem.startswith("q"):
        return "Q"
    if stem.startswith("d"):
        return "dense"
    return "other"


def run_json(cmd: list[str], timeout: int, cwd: Path | None = None) -> dict[str, Any]:
    """Run a command that prints one JSON line last; its dict, or {'error': ...}."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False,
                           cwd=cwd, env=baseline.pinned_env())
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout} s"}
    lines = r.stdout.strip().splitlines()
    if r.returncode != 0 or not lines:
        tail = " | ".join(r.stderr.strip().splitlines()[-3:]) or "no output"
        return {"error": f"exit {r.returncode}: {tail}"}
    try:
        res: dict[str, Any] = json.loads(lines[-1])
    except json.JSONDecodeError:
        return {"error": f"unparsable output: {lines[-1][:200]}"}
    return res


def run_ceql(query: Path, csv_file: Path, repeat: int, out: Path, timeout: int) -> dict[str, Any]:
    """ceql on one query, in a fresh interpreter (so its peak RSS is its own)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--query", str(query),
           "--input", str(csv_file), "--repeat", str(repeat), "--matches-out", str(out)]
    return run_json(cmd, timeout, cwd=REPO_DIR)


def run_core(query: Path, csv_file: Path, repeat: int, out: Path, timeout: int,
             python: str) -> dict[str, Any]:
    """CORE C++ on one query through core_cpp.py."""
    cmd = [python, str(ANCHORS_DIR / "core_cpp.py"), "--query", str(query), "--input",
           str(csv_file), "--repeat", str(repeat), "--out", str(out)]
    return run_json(cmd, timeout)


def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo (or platform's guess)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def ram_gib() -> float:
    """Total RAM in GiB from /proc/meminfo (0 when unknown)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024**2
    except OSError:
        pass
    return 0.0


def load_avg() -> str:
    """The 1/5/15-minute load averages."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def fmt_int(x: Any) -> str:
    return f"{x:,}" if isinstance(x, int) else "–"


def fmt_mb(x: Any) -> str:
    return f"{x:,.0f}" if isinstance(x, (int, float)) else "–"


TABLE_HEAD = (
    "| query | matches ceql / CORE | ceql events/s | CORE events/s | ceql/CORE "
    "| ceql CPU s | CORE CPU s | ceql/CORE by CPU s | ceql per CPU-s / CORE best recorded "
    "| ceql peak RSS MB (pre-timing) | CORE peak RSS MB | match sets | load |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"
)


def table_row(rec: dict[str, Any]) -> str:
    """One Markdown row for a query record."""
    c, k = rec.get("ceql", {}), rec.get("core", {})
    ratio, cpu_ratio, ref_ratio = rec.get("ratio"), rec.get("cpu_ratio"), rec.get("ref_ratio")
    ceql_err, core_err = c.get("error"), k.get("error")
    cmp_label = rec.get("match_sets", "–")
    if ceql_err:
        cmp_label = f"ceql error: {ceql_err[:120]}"
    elif core_err:
        cmp_label = f"CORE error: {core_err[:120]}"
    core_matches = k.get("distinct_matches", k.get("matches"))
    return (
        f"| {rec['query']} | {fmt_int(c.get('matches'))} / {fmt_int(core_matches)} "
        f"| {fmt_int(c.get('events_per_s'))} | {fmt_int(k.get('events_per_s'))} "
        f"| {f'{ratio:.2f}×' if ratio else '–'} "
        f"| {c.get('cpu_s', '–')} | {k.get('cpu_s', '–')} "
        f"| {f'{cpu_ratio:.2f}×' if cpu_ratio else '–'} "
        f"| {f'{ref_ratio:.2f}×' if ref_ratio else '–'} "
        f"| {fmt_mb(c.get('peak_rss_mb'))} ({fmt_mb(c.get('rss_pre_timing_peak_mb'))}) "
        f"| {fmt_mb(k.get('peak_rss_mb'))} | {cmp_label} | {rec.get('load_1min', '–')} |"
    )


def geomean(xs: Sequence[float]) -> float | None:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summary(records: list[dict[str, Any]]) -> list[str]:
    """Summary lines: geometric-mean ratios per group, window sensitivity, problems."""
    out: list[str] = []
    by_group: dict[str, list[tuple[str, float]]] = {}
    cpu_by_group: dict[str, list[float]] = {}
    ref_by_group: dict[str, list[tuple[str, float]]] = {}
    for r in records:
        if r.get("ref_ratio"):
            ref_by_group.setdefault(r["group"], []).append((r["query"], r["ref_ratio"]))
        if r.get("ratio"):
            by_group.setdefault(r["group"], []).append((r["query"], r["ratio"]))
        if r.get("cpu_ratio"):
            cpu_by_group.setdefault(r["group"], []).append(r["cpu_ratio"])
    groups = [("P_n and Q1–Q7 rows", ("P", "Q"), 1.0), ("P'_n rows", ("P'",), 3.0),
              ("window rows (P3 at 2T, 4T)", ("window",), None),
              ("dense rows (d*)", ("dense",), None)]
    for title, names, target in groups:
        rows = [x for g in names for x in by_group.get(g, [])]
        refs = [x for g in names for x in ref_by_group.get(g, [])]
        gm, gm_ref = geomean([x for _, x in rows]), geomean([x for _, x in refs])
        gm_cpu = geomean([x for g in names for x in cpu_by_group.get(g, [])])
        parts = []
        if gm is not None:
            low = min(rows, key=lambda x: x[1])
            parts.append(f"**{gm:.2f}×** by wall time (lowest {low[1]:.2f}× on {low[0]})")
        if gm_cpu is not None:
            parts.append(f"{gm_cpu:.2f}× by CPU time")
        if gm_ref is not None:
            low = min(refs, key=lambda x: x[1])
            parts.append(f"{gm_ref:.2f}× per ceql CPU-second against CORE's best recorded run "
                         f"(lowest {low[1]:.2f}× on {low[0]})")
        if not parts:
            continue
        line = f"- {title} ({max(len(rows), len(refs))}): geometric mean ceql/CORE " + \
            ", ".join(parts)
        if target is not None and rows:
            below = [q for q, x in rows if x < target]
            line += (f"; target ≥ {target:g}× on every row (wall): "
                     + ("met" if not below else f"missed on {', '.join(below)}"))
        out.append(line + ".")
    by_query = {r["query"]: r for r in records}
    for policy in ("none", "any"):
        rows3 = [by_query.get(f"{n}_{policy}.ceql") for n in ("p3", "p3_w20", "p3_w40")]
        parts = []
        for side, label in (("ceql", "ceql"), ("core", "CORE")):
            sides = [r.get(side, {}) if r else {} for r in rows3]
            vals = [x.get("events_per_s") for x in sides]
            if not all(isinstance(v, int) and v > 0 for v in vals):
                continue
            t, t2, t4 = (float(v) for v in vals)
            text = (f"{label} {t / 1e3:,.0f}k → {t2 / 1e3:,.0f}k → {t4 / 1e3:,.0f}k events/s, "
                    f"4T/T = **{t4 / t:.2f}**")
            cpus = [x.get("cpu_s") for x in sides]
            if side == "ceql" and all(isinstance(v, (int, float)) and v > 0 for v in cpus):
                text += f" (by CPU time {cpus[0] / cpus[2]:.2f})"
            if side == "ceql":
                text += (" with " + " → ".join(fmt_int(x.get("matches")) for x in sides)
                         + " matches")
            parts.append(text)
        if parts:
            out.append(f"- Window sensitivity, P3 CONSUME BY {policy.upper()} at T, 2T, 4T: "
                       + "; ".join(parts) + " (target for ceql: 4T/T ≥ 0.80)")
    kinds: dict[str, list[str]] = {}
    for r in records:
        kind = r.get("match_kind") or (  # records written before match_kind existed
            "equal" if r.get("match_sets") == "equal"
            else "differ" if "DIFFER" in str(r.get("match_sets")) else "not compared")
        kinds.setdefault(kind, []).append(r["query"])
    errors = [r["query"] for r in records
              if r.get("ceql", {}).get("error") or r.get("core", {}).get("error")]
    if any("core" in r for r in records):
        line = f"- Match sets: {len(kinds.get('equal', []))} of {len(records)} byte-identical"
        if kinds.get("positions-equal"):
            line += (f"; equal as sets of positions, start/end differing, on "
                     f"{', '.join(kinds['positions-equal'])}")
        if kinds.get("differ"):
            line += f"; **DIFFER on {', '.join(kinds['differ'])}**"
        out.append(line + ".")
    else:
        out.append("- Match sets: not compared (--no-core).")
    if errors:
        out.append(f"- **Failed runs**: {', '.join(errors)}.")
    return out


def compare_in_child(ceql_file: Path, core_file: Path, timeout: int) -> Comparison:
    """compare_match_files in a child process, so this process's peak RSS stays small."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--compare", str(ceql_file),
           str(core_file)]
    res = run_json(cmd, timeout)
    if "error" in res:
        raise RuntimeError(f"comparing {ceql_file} with {core_file} failed: {res['error']}")
    return Comparison(**res)


def record_comparison(rec: dict[str, Any], cmp: Comparison) -> None:
    """Store a comparison in a query record; shout when the match sets differ."""
    rec["match_sets"], rec["match_kind"] = cmp.label(), cmp.kind
    if cmp.equal:
        return
    rec["only_ceql"], rec["only_core"] = cmp.only_ceql, cmp.only_core
    rec["hull_mismatch_ceql"] = cmp.hull_mismatch_ceql
    rec["hull_mismatch_core"] = cmp.hull_mismatch_core
    rec["examples_only_ceql"], rec["examples_only_core"] = cmp.examples_ceql, cmp.examples_core
    if cmp.positions_equal:
        print(f"note: {rec['query']}: same sets of positions, but start/end differ "
              f"({cmp.label()}); e.g. ceql {cmp.examples_ceql[:1]} vs CORE "
              f"{cmp.examples_core[:1]}", file=sys.stderr, flush=True)
    else:
        print(f"!!! MATCH SETS DIFFER on {rec['query']}: {cmp.only_ceql} only in ceql, "
              f"{cmp.only_core} only in CORE; only-ceql e.g. {cmp.examples_ceql}; "
              f"only-CORE e.g. {cmp.examples_core}", file=sys.stderr, flush=True)


def core_best_recorded(folder: Path, events: int) -> dict[str, float]:
    """Best CORE throughput per query file in earlier core_cpp.py result lines (events/s).

    The anchors' recorded runs give a second, contention-independent yardstick: CORE's
    fastest repeat on this kind of machine, against ceql's events per CPU-second.
    """
    best: dict[str, float] = {}
    for f in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        for line in f.read_text().splitlines():
            try:
                r = json.loads(line)
                runs = [x for x in r.get("runs_s", []) if x > 0]
            except (json.JSONDecodeError, AttributeError, TypeError):
                continue
            if r.get("events") == events and runs and "query" in r:
                best[r["query"]] = max(best.get(r["query"], 0.0), events / min(runs))
    return best


def run_pair(query: Path, csv_file: Path, repeat: int, tree_out: Path, base_out: Path,
             rev: baseline.Revision, timeout: int) -> tuple[dict[str, Any], dict[str, Any],
                                                         list[str]]:
    """ceql of the working tree and at REV on one query, repeats alternated (``--baseline``).

    Returns the tree's record, REV's record and which side ran first in each repeat.
    """
    def cmd(out: Path) -> list[str]:
        return [sys.executable, str(Path(__file__).resolve()), "--serve", "--query",
                str(query), "--input", str(csv_file), "--matches-out", str(out)]

    res, first = baseline.measure_pair(
        {baseline.TREE: cmd(tree_out), baseline.BASE: cmd(base_out)},
        {baseline.TREE: REPO_DIR / "python", baseline.BASE: rev.root}, repeat, timeout,
        REPO_DIR)
    return res[baseline.TREE], res[baseline.BASE], first


def record_baseline_comparison(rec: dict[str, Any], cmp: Comparison, rev: str) -> None:
    """Store the tree-vs-REV comparison in a record; any difference is a behaviour change."""
    t, b = rec["ceql"], rec[baseline.BASE]
    if cmp.equal and t["matches"] == b["matches"]:
        rec["baseline_match_sets"], rec["baseline_match_kind"] = "equal", "equal"
        return
    rec["baseline_match_kind"] = "differ"
    if cmp.equal:
        rec["baseline_match_sets"] = (f"**DIFFER**: same distinct matches, {t['matches']:,} vs "
                                      f"{b['matches']:,} with repeats")
    else:
        rec["baseline_match_sets"] = (f"**DIFFER** ({cmp.only_ceql:,} only tree, "
                                      f"{cmp.only_core:,} only {rev})")
        rec["only_tree"], rec["only_baseline"] = cmp.only_ceql, cmp.only_core
        rec["examples_only_tree"] = cmp.examples_ceql
        rec["examples_only_baseline"] = cmp.examples_core
    print(f"!!! MATCH SETS DIFFER (tree vs {rev}) on {rec['query']}: "
          f"{rec['baseline_match_sets']}; only-tree e.g. {cmp.examples_ceql}; only-{rev} e.g. "
          f"{cmp.examples_core}", file=sys.stderr, flush=True)


def run_benchmark(a: argparse.Namespace) -> int:
    """Run the benchmark, against ``--baseline REV`` (exported for the run) when given."""
    if a.baseline is None:
        return benchmark(a, None)
    with baseline.exported(a.baseline, REPO_DIR) as rev:
        return benchmark(a, rev)


def benchmark(a: argparse.Namespace, rev: baseline.Revision | None) -> int:
    """Run every selected query through ceql (tree and REV) and CORE; print the report."""
    csv_file = ensure_stream(a.events, a.seed)
    queries = select_queries(a.queries, a.only)
    if not queries:
        sys.exit(f"no query file in {a.queries} matches {a.only!r}")
    started = dt.datetime.now()
    out_json: Path = a.json or BENCH_DIR / "out" / f"engine-{started:%Y-%m-%d-%H%M%S}.jsonl"
    out_json.parent.mkdir(parents=True, exist_ok=True)
    keep = a.keep_matches
    work = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="ceql-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    core_python = a.core_python or shutil.which("python3") or sys.executable
    digest = engine_digest()
    reference = core_best_recorded(a.reference, a.events)
    core = not a.no_core
    title = "ceql vs CORE C++" if rev is None else \
        f"ceql: working tree vs {rev.rev}" + (" and CORE C++" if core else "")
    head = [
        f"# {title} — {started:%Y-%m-%d %H:%M:%S}",
        "",
        f"- Machine: {cpu_model()}, {os.cpu_count()} cores, {ram_gib():.1f} GiB RAM, "
        f"{platform.system()} {platform.release()}; load average (1/5/15 min) at start "
        f"{load_avg()}",
        f"- ceql: Python {platform.python_version()} ({sys.executable}); CORE via "
        f"{ANCHORS_DIR / 'core_cpp.py'} (started with {core_python})",
        f"- Stream: {csv_file} ({a.events:,} events, seed {a.seed}); repeat {a.repeat} "
        f"(median); queries: {a.only!r} ({len(queries)} files)",
        f"- ceql source digest at start: {digest} (sha256 of python/ceql/*.py, *.lark)",
    ]
    if rev is None:
        head.append(f"- CORE reference for the last column: best run per query in "
                    f"{a.reference}/*.jsonl ({len(reference)} queries)")
    else:
        head += [
            f"- Baseline {rev.rev}: commit {rev.commit} ({rev.title}); its tree exported "
            f"with git archive, ceql from {rev.root} (temporary); source digest "
            f"{engine_digest(rev.root / 'ceql')}",
            f"- Working tree: {REPO_DIR / 'python'}.  Per query, two long-lived workers (same "
            f"interpreter, PYTHONPATH = the side's python/ folder; each checks where its ceql "
            f"modules come from), both loaded before timing; {a.repeat} timed repeat(s) each, "
            f"alternated: {rev.rev} first on odd repeats, the tree first on even ones; ratios "
            f"are tree / {rev.rev} (> 1: the tree is faster)",
        ]
    head += [
        f"- Command: `{shlex.join([os.path.relpath(sys.executable), *sys.argv])}`",
        "",
        TABLE_HEAD if rev is None else baseline.table_head(rev.rev, core),
    ]
    print("\n".join(head), flush=True)
    records: list[dict[str, Any]] = []
    for q in queries:
        rec: dict[str, Any] = {"query": q.name, "group": group_of(q.stem),
                               "load_1min": round(os.getloadavg()[0], 2),
                               "time": dt.datetime.now().isoformat(timespec="seconds")}
        ceql_file, core_file = work / f"{q.stem}.ceql.jsonl", work / f"{q.stem}.core.jsonl"
        base_file = work / f"{q.stem}.baseline.jsonl"
        if rev is None:
            rec["ceql"] = run_ceql(q, csv_file, a.repeat, ceql_file, a.timeout)
        else:
            rec["baseline_rev"], rec["baseline_commit"] = rev.rev, rev.commit
            rec["ceql"], rec[baseline.BASE], rec["first"] = run_pair(
                q, csv_file, a.repeat, ceql_file, base_file, rev, a.timeout)
            baseline.add_ratios(rec)
            if "error" not in rec["ceql"] and "error" not in rec[baseline.BASE]:
                record_baseline_comparison(
                    rec, compare_in_child(ceql_file, base_file, a.timeout), rev.rev)
        if not a.no_core:
            rec["core"] = run_core(q, csv_file, a.repeat, core_file, a.timeout, core_python)
        c, k = rec["ceql"], rec.get("core", {})
        if "error" not in c and k and "error" not in k:
            rec["ratio"] = round(c["events_per_s"] / k["events_per_s"], 3)
            if c["cpu_s"] > 0:
                rec["cpu_ratio"] = round(k["cpu_s"] / c["cpu_s"], 3)
            record_comparison(rec, compare_in_child(ceql_file, core_file, a.timeout))
        if "error" not in c:
            if c.get("engine_digest") != digest:
                rec["note"] = f"ceql source changed during the run ({c.get('engine_digest')})"
                print(f"note: {q.name}: {rec['note']}", file=sys.stderr, flush=True)
            best = reference.get(q.name)
            if best and c["cpu_s"] > 0:
                rec["core_best_recorded_eps"] = round(best)
                rec["ref_ratio"] = round(c["events"] / c["cpu_s"] / best, 3)
        if not keep:
            for path in (ceql_file, core_file, base_file):
                path.unlink(missing_ok=True)
        records.append(rec)
        print(table_row(rec) if rev is None else baseline.table_row(rec, core), flush=True)
        with out_json.open("a") as f:
            f.write(json.dumps(rec) + "\n")
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    ended = dt.datetime.now()
    if rev is None:
        tail = ["", "Summary:", "", *summary(records)]
    else:
        lines, data = baseline.summary(records, rev)
        with out_json.open("a") as f:
            f.write(json.dumps(data) + "\n")
        tail = ["", f"Summary, working tree vs {rev.rev}:", "", *lines]
        if core:
            tail += ["", "Summary, ceql (working tree) vs CORE C++:", "", *summary(records)]
    tail += ["",
             f"- Finished {ended:%Y-%m-%d %H:%M:%S} ({(ended - started).total_seconds() / 60:.1f}"
            f" min); load average at end {load_avg()}; JSON lines: {out_json}"]
    unequal = [r for r in records if "only_ceql" in r]
    if unequal:
        tail += ["", "**Match files not byte-identical (examples of lines only one side has):**",
                 ""]
        for r in unequal:
            tail.append(f"- {r['query']} ({r['match_sets']}): only ceql "
                        f"{r['examples_only_ceql']}; only CORE {r['examples_only_core']}")
    if rev is not None and any("only_tree" in r for r in records):
        tail += ["", f"**Match sets tree vs {rev.rev} (examples of lines only one side has):**",
                 ""]
        tail += [f"- {r['query']}: only tree {r['examples_only_tree']}; only {rev.rev} "
                 f"{r['examples_only_baseline']}" for r in records if "only_tree" in r]
    differ = [r for r in records if "differ" in (r.get("match_kind"),
                                                   r.get("baseline_match_kind"))]
    print("\n".join(tail), flush=True)
    if a.markdown:
        rows = [table_row(r) if rev is None else baseline.table_row(r, core) for r in records]
        a.markdown.write_text("\n".join(head + rows + tail) + "\n")
    if differ:
        return 2
    if any("error" in r["ceql"] or "error" in r.get("core", {})
           or "error" in r.get(baseline.BASE, {}) for r in records):
        return 3
    return 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples: `.venv/bin/python bench/engine.py --only 'p3*' --repeat 1` (quick); "
               "`.venv/bin/python bench/engine.py --repeat 3` (everything, ~30 min with CORE); "
               "`.venv/bin/python bench/engine.py --baseline HEAD~1 --no-core` (regression "
               "check against the previous commit).",
    )
    p.add_argument("--events", type=int, default=1_000_000,
                   help="stream length; the stream is gen_stock.py's with this many events "
                        "(default 1000000), cached in $CEQL_ANCHORS_CACHE")
    p.add_argument("--seed", type=int, default=42, help="gen_stock.py seed (default 42)")
    p.add_argument("--repeat", type=int, default=3,
                   help="timed runs per query and engine; the median is reported (default 3)")
    p.add_argument("--only", default="*",
                   help="comma-separated globs on query file names, e.g. 'p3*' or "
                        "'p3_any,q*' (default: all)")
    p.add_argument("--no-core", action="store_true",
                   help="measure ceql only (no CORE columns, no match-set comparison with "
                        "CORE)")
    p.add_argument("--baseline", metavar="REV",
                   help="also measure ceql at git revision REV (e.g. HEAD~1, 7dce591), "
                        "exported to a temporary folder, against the working tree: "
                        "interleaved repeats, ratios tree/REV, match sets compared")
    p.add_argument("--queries", type=Path, default=ANCHORS_DIR / "queries",
                   help="folder of .ceql query files (default: <shared>/anchors/queries)")
    p.add_argument("--timeout", type=int, default=1800,
                   help="seconds allowed per query and engine (default 1800)")
    p.add_argument("--reference", type=Path, default=ANCHORS_DIR / "results",
                   help="folder of earlier core_cpp.py JSON lines; each query's best recorded "
                        "CORE run is compared with ceql's events per CPU-second "
                        "(default: <shared>/anchors/results)")
    p.add_argument("--json", type=Path,
                   help="JSON-lines output (default bench/out/engine-<date-time>.jsonl)")
    p.add_argument("--markdown", type=Path, help="also write the Markdown report here")
    p.add_argument("--keep-matches", metavar="DIR",
                   help="keep both engines' match files in DIR (default: temporary, deleted)")
    p.add_argument("--core-python",
                   help="interpreter that starts core_cpp.py (default: python3 on PATH); "
                        "core_cpp.py itself re-executes in its Python 3.13 pycer venv")
    p.add_argument("--from-json", type=Path, metavar="JSONL",
                   help="run nothing: print the table and summary of an earlier run's JSON lines")
    # internal: one ceql measurement in this (fresh) process
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--query", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--input", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--matches-out", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--compare", type=Path, nargs=2, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.repeat < 1:
        p.error("--repeat must be at least 1")
    if (a.worker or a.serve) and (a.query is None or a.input is None):
        p.error("--worker and --serve need --query and --input")
    return a


def render_saved(path: Path, reference_dir: Path) -> int:
    """Print the table and summary of an earlier run from its JSON lines (nothing is run)."""
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    records = [r for r in records if "summary" not in r]  # --baseline's last line
    if not records:
        sys.exit(f"{path}: no records")
    events = records[0].get("ceql", {}).get("events", 1_000_000)
    reference = core_best_recorded(reference_dir, events)
    for rec in records:  # older records lack the recorded-CORE yardstick
        c, best = rec.get("ceql", {}), reference.get(rec["query"])
        if "ref_ratio" not in rec and best and c.get("cpu_s"):
            rec["core_best_recorded_eps"] = round(best)
            rec["ref_ratio"] = round(c["events"] / c["cpu_s"] / best, 3)
    times = [r.get("time", "?") for r in records]
    print(f"Re-rendered from {path} (queries started {times[0]} … {times[-1]})\n")
    base = next((r for r in records if baseline.BASE in r), None)
    if base is None:
        print("\n".join([TABLE_HEAD, *map(table_row, records), "", "Summary:", "",
                         *summary(records)]))
        return 0
    name, core = base["baseline_rev"], any("core" in r for r in records)
    lines, _ = baseline.summary(records, {"baseline_rev": name,
                                          "baseline_commit": base["baseline_commit"]})
    out = [baseline.table_head(name, core), *(baseline.table_row(r, core) for r in records),
           "", f"Summary, working tree vs {name}:", "", *lines]
    if core:
        out += ["", "Summary, ceql (working tree) vs CORE C++:", "", *summary(records)]
    print("\n".join(out))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    a = parse_args(argv)
    if a.worker:
        worker(a.query, a.input, a.repeat, a.matches_out)
        return 0
    if a.serve:
        serve(a.query, a.input, a.matches_out)
        return 0
    if a.compare is not None:
        print(json.dumps(dataclasses.asdict(compare_match_files(*a.compare))))
        return 0
    if a.from_json is not None:
        return render_saved(a.from_json, a.reference)
    return run_benchmark(a)


if __name__ == "__main__":
    sys.exit(main())
