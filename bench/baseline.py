"""Helpers of ``bench/engine.py --baseline REV``: ceql at an earlier commit against the tree.

* :func:`exported` resolves REV and extracts its tree with ``git archive`` into a temporary
  directory (read-only git commands: no worktree, branch or index changes; the whole tree,
  because ``python/`` has symlinks into it); the directory is deleted on exit.
* :func:`measure_pair` runs one query on both sides: two long-lived ``engine.py --serve``
  workers (same interpreter, ``PYTHONPATH`` = the side's ``python/`` folder, which precedes the
  editable install's ``.pth`` entry on ``sys.path``), both loaded before any timed run, then
  one timed repeat at a time, REV first on odd repeats and the tree first on even ones.  Each
  worker reports the files its ``ceql`` modules came from; a side whose ``ceql`` is not from
  its own folder is an error.
* :func:`table_head`, :func:`table_row`, :func:`summary`: the Markdown report.
"""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import statistics
import subprocess
import tarfile
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

TREE, BASE = "tree", "baseline"


@dataclass(frozen=True)
class Revision:
    """The exported baseline: REV as given, its commit, a one-line title, its ``python/``."""

    rev: str
    commit: str
    title: str
    root: Path


def git(repo: Path, *args: str) -> str:
    """Output of a read-only git command in ``repo`` (stripped); exits with git's message."""
    r = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                       check=False)
    if r.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout.strip()


@contextmanager
def exported(rev: str, repo: Path) -> Iterator[Revision]:
    """REV's tree in a temporary directory (``git archive``), removed on exit."""
    if rev.startswith("-"):
        raise SystemExit(f"--baseline {rev!r}: not a revision")
    try:
        commit = git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except SystemExit:
        raise SystemExit(f"--baseline {rev!r}: not a commit of {repo}") from None
    title = git(repo, "log", "-1", "--format=%h %cs %s", commit)
    tmp = Path(tempfile.mkdtemp(prefix="ceql-baseline-"))
    try:
        # the whole tree (about 1 MB): python/ has symlinks into it (the grammar)
        tar = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", commit],
                             capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(tar)) as f:
            f.extractall(tmp, filter="data")
        root = tmp / "python"
        if not (root / "ceql" / "__init__.py").is_file():
            raise SystemExit(f"--baseline {rev}: no python/ceql/__init__.py at {commit[:12]}")
        yield Revision(rev, commit, title, root)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# glibc's malloc moves its mmap and trim thresholds with what a process has freed so far, so
# the same numpy temporaries are either reused or mapped, faulted in and unmapped again on
# every batch depending on heap history: p3_any's feed measured 0.12 s with no page faults
# and 0.18 s with 12-15 k minor faults, same code (RESULTS.md section 19). Every process a
# benchmark times runs with the thresholds pinned, so that runs compare code, not heap luck.
PINNED_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(64 << 20), "MALLOC_TRIM_THRESHOLD_": str(256 << 20)}


def pinned_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (this environment by default) with glibc's malloc thresholds pinned, unless the
    caller set them."""
    env = dict(os.environ if base is None else base)
    for k, v in PINNED_MALLOC.items():
        env.setdefault(k, v)
    return env


def env_for(python_dir: Path) -> dict[str, str]:
    """This environment, malloc pinned, with ``python_dir`` first on ``PYTHONPATH``."""
    env = pinned_env()
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(python_dir), env.get("PYTHONPATH", "")) if p)
    return env


class WorkerError(Exception):
    """A served worker died, timed out, answered nonsense or imported the wrong ceql."""


class ServedWorker:
    """One ``engine.py --serve`` process: commands on stdin, one JSON line back for each."""

    def __init__(self, cmd: list[str], python_dir: Path, cwd: Path, timeout: int) -> None:
        self.root = python_dir.resolve()
        self.timeout = timeout
        self.timed_out = False
        self.stderr: IO[bytes] = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, text=True, cwd=cwd,
                                     env=env_for(python_dir))
        self.timer = threading.Timer(timeout, self._kill)
        self.timer.daemon = True
        self.timer.start()

    def _kill(self) -> None:
        self.timed_out = True
        self.proc.kill()

    def failure(self) -> str:
        """Why the worker stopped: timeout, or its exit status and last stderr lines."""
        if self.timed_out:
            return f"timeout after {self.timeout} s"
        code = self.proc.wait()
        self.stderr.seek(0)
        lines = self.stderr.read().decode(errors="replace").strip().splitlines()
        return f"exit {code}: {' | '.join(reversed(lines[-3:])) or 'no output'}"

    def reply(self) -> dict[str, Any]:
        """The next JSON line the worker prints (other stdout lines are skipped)."""
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise WorkerError(self.failure())
            if line.startswith("{"):
                try:
                    res: dict[str, Any] = json.loads(line)
                except json.JSONDecodeError:
                    continue
                return res

    def send(self, command: str) -> dict[str, Any]:
        """Send one command (``run`` or ``done``); its reply."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise WorkerError(self.failure()) from e
        return self.reply()

    def ready(self) -> dict[str, Any]:
        """Wait for the loaded worker; check that every ``ceql`` module is from ``root``."""
        msg = self.reply()
        files = [Path(f).resolve() for f in msg.get("ceql_modules", [])]
        stray = [f for f in files if not f.is_relative_to(self.root)]
        if not files or stray:
            where = str(stray[0]) if stray else "nowhere"
            raise WorkerError(f"ceql imported from {where}, not from {self.root}")
        return msg

    def close(self) -> None:
        """Stop the watchdog; kill the process if it still runs; release the pipes."""
        self.timer.cancel()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass
        self.stderr.close()


def measure_pair(cmds: dict[str, list[str]], roots: dict[str, Path], repeat: int,
                 timeout: int, cwd: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Both sides of one query, repeats alternated; results by side and who went first.

    ``cmds``/``roots`` are keyed by :data:`BASE` and :data:`TREE`.  A side that fails gets
    ``{"error": ...}``; the other side still runs its repeats.
    """
    results: dict[str, dict[str, Any]] = {}
    workers: dict[str, ServedWorker] = {}
    try:
        for side in (BASE, TREE):
            workers[side] = ServedWorker(cmds[side], roots[side], cwd, timeout)
        for side in (BASE, TREE):  # both loaded before any timed run
            try:
                workers[side].ready()
            except WorkerError as e:
                results[side] = {"error": str(e)}
        first: list[str] = []
        for r in range(1, repeat + 1):
            order = (BASE, TREE) if r % 2 else (TREE, BASE)
            first.append(order[0])
            for side in order:
                if side not in results:
                    try:
                        workers[side].send("run")
                    except WorkerError as e:
                        results[side] = {"error": str(e)}
        for side in (BASE, TREE):
            if side not in results:
                try:
                    results[side] = workers[side].send("done")
                except WorkerError as e:
                    results[side] = {"error": str(e)}
        return results, first
    finally:
        for w in workers.values():
            w.close()


# --------------------------------------------------------------------------- report
def geomean(xs: Sequence[float]) -> float | None:
    """Geometric mean (None for no values)."""
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def spread(res: dict[str, Any]) -> float | None:
    """(slowest − fastest) / median of a side's timed runs; None below two runs."""
    runs = [x for x in res.get("runs_s", []) if x > 0]
    return (max(runs) - min(runs)) / statistics.median(runs) if len(runs) > 1 else None


def add_ratios(rec: dict[str, Any]) -> None:
    """Tree/REV ratios of a record (> 1: the tree is faster): median wall, CPU, best run."""
    t, b = rec.get("ceql", {}), rec.get(BASE, {})
    if "error" in t or "error" in b or not t or not b:
        return
    rec["baseline_ratio"] = round(t["events_per_s"] / b["events_per_s"], 4)
    if t.get("cpu_s", 0) > 0:
        rec["baseline_cpu_ratio"] = round(b["cpu_s"] / t["cpu_s"], 4)
    if t.get("runs_s") and b.get("runs_s") and min(t["runs_s"]) > 0:
        rec["baseline_best_ratio"] = round(min(b["runs_s"]) / min(t["runs_s"]), 4)
    for side, res in ((TREE, t), (BASE, b)):
        s = spread(res)
        if s is not None:
            rec[f"spread_{side}"] = round(s, 4)


def fmt_int(x: Any) -> str:
    return f"{x:,}" if isinstance(x, int) else "–"


def fmt_ratio(x: Any) -> str:
    return f"{x:.3f}×" if isinstance(x, (int, float)) else "–"


def fmt_pct(x: Any) -> str:
    return f"{100 * x:.1f} %" if isinstance(x, (int, float)) else "–"


def table_head(rev: str, core: bool) -> str:
    """Header of the tree-vs-REV table (with CORE columns when CORE runs)."""
    cols = [("query", "---"), (f"matches tree / {rev}", "---:"), ("tree events/s", "---:"),
            (f"{rev} events/s", "---:"), (f"tree/{rev}", "---:"), ("tree CPU s", "---:"),
            (f"{rev} CPU s", "---:"), (f"tree/{rev} by CPU s", "---:"),
            (f"spread of repeats tree / {rev}", "---:"), (f"match sets tree vs {rev}", "---")]
    if core:
        cols += [("CORE events/s", "---:"), ("tree/CORE", "---:"),
                 ("match sets tree vs CORE", "---")]
    cols.append(("load", "---:"))
    return ("| " + " | ".join(c for c, _ in cols) + " |\n|"
            + "|".join(a for _, a in cols) + "|")


def table_row(rec: dict[str, Any], core: bool) -> str:
    """One Markdown row of the tree-vs-REV table."""
    t, b, k = rec.get("ceql", {}), rec.get(BASE, {}), rec.get("core", {})
    label = rec.get("baseline_match_sets", "–")
    if t.get("error") or b.get("error"):
        label = "; ".join(f"{name} error: {r['error'][:120]}"
                          for name, r in (("tree", t), ("REV", b)) if r.get("error"))
    cells = [rec["query"], f"{fmt_int(t.get('matches'))} / {fmt_int(b.get('matches'))}",
             fmt_int(t.get("events_per_s")), fmt_int(b.get("events_per_s")),
             fmt_ratio(rec.get("baseline_ratio")), str(t.get("cpu_s", "–")),
             str(b.get("cpu_s", "–")), fmt_ratio(rec.get("baseline_cpu_ratio")),
             f"{fmt_pct(rec.get('spread_tree'))} / {fmt_pct(rec.get('spread_baseline'))}",
             label]
    if core:
        ratio = rec.get("ratio")
        cells += [fmt_int(k.get("events_per_s")), f"{ratio:.2f}×" if ratio else "–",
                  f"CORE error: {k['error'][:120]}" if k.get("error")
                  else rec.get("match_sets", "–")]
    cells.append(str(rec.get("load_1min", "–")))
    return "| " + " | ".join(cells) + " |"


def stats(records: Sequence[dict[str, Any]], key: str) -> dict[str, Any] | None:
    """Geometric mean, min and max (with their queries) of a ratio over the records."""
    rows = [(r["query"], float(r[key])) for r in records if r.get(key)]
    gm = geomean([x for _, x in rows])
    if gm is None:
        return None
    low, high = min(rows, key=lambda x: x[1]), max(rows, key=lambda x: x[1])
    return {"geomean": round(gm, 4), "min": low[1], "min_query": low[0], "max": high[1],
            "max_query": high[0], "queries": len(rows)}


def summary(records: Sequence[dict[str, Any]], rev: Revision | dict[str, str]
            ) -> tuple[list[str], dict[str, Any]]:
    """Markdown summary lines of the tree-vs-REV comparison, and the same as a JSON record."""
    info = rev if isinstance(rev, dict) else {"baseline_rev": rev.rev,
                                              "baseline_commit": rev.commit}
    name = info["baseline_rev"]
    data: dict[str, Any] = {"query": "(summary)", "summary": "baseline", **info,
                            "records": len(records)}
    out: list[str] = []
    for key, what in (("baseline_ratio", "median wall time"),
                      ("baseline_cpu_ratio", "median CPU time"),
                      ("baseline_best_ratio", "fastest repeat")):
        s = stats(records, key)
        data[key] = s
        if s is not None:
            out.append(f"- Working tree / {name} by {what} ({s['queries']} queries): geometric "
                       f"mean **{s['geomean']:.3f}×**, min {s['min']:.3f}× ({s['min_query']}),"
                       f" max {s['max']:.3f}× ({s['max_query']}); > 1 means the tree is "
                       f"faster.")
    for side in (TREE, BASE):
        xs = [r[f"spread_{side}"] for r in records if f"spread_{side}" in r]
        data[f"median_spread_{side}"] = round(statistics.median(xs), 4) if xs else None
    if data["median_spread_tree"] is not None and data["median_spread_baseline"] is not None:
        out.append(f"- Noise: median over queries of (slowest − fastest) / median repeat: tree "
                   f"{fmt_pct(data['median_spread_tree'])}, {name} "
                   f"{fmt_pct(data['median_spread_baseline'])}.")
    kinds: dict[str, list[str]] = {}
    for r in records:
        kinds.setdefault(r.get("baseline_match_kind", "not compared"), []).append(r["query"])
    data["match_sets_equal"] = len(kinds.get("equal", []))
    data["match_sets_differ"] = kinds.get("differ", [])
    line = (f"- Match sets tree vs {name}: {len(kinds.get('equal', []))} of {len(records)} "
            f"equal")
    if kinds.get("differ"):
        line += f"; **DIFFER on {', '.join(kinds['differ'])}**"
    if kinds.get("not compared"):
        line += f"; not compared (a run failed) on {', '.join(kinds['not compared'])}"
    out.append(line + ".")
    errors = [r["query"] for r in records
              if r.get("ceql", {}).get("error") or r.get(BASE, {}).get("error")]
    data["failed"] = errors
    if errors:
        out.append(f"- **Failed runs**: {', '.join(errors)}.")
    return out, data
