#!/usr/bin/env python3
"""Plot throughput against sequence length and against window size, ceql and CORE C++.

Usage (from the repository root)::

    .venv/bin/python bench/plot.py [bench/out/engine-<date-time>.jsonl] [--out bench/throughput.png]

Reads the JSON lines ``bench/engine.py`` wrote (the newest file in ``bench/out`` by default)
and draws two panels: events/s for P3, P6, P9 and P12 (sequence length 3 to 12, window T)
and for P3 at windows T, 2T and 4T; one line per engine and consumption policy (ANY, NONE).
Both axes of events/s are logarithmic: the engines differ by more than an order of magnitude.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
LENGTHS = {"p3": 3, "p6": 6, "p9": 9, "p12": 12}
WINDOWS = {"p3": 10, "p3_w20": 20, "p3_w40": 40}
SYSTEMS = (("ceql", "ceql", "tab:blue"), ("core", "CORE C++", "tab:red"))
POLICIES = (("any", "-", "o"), ("none", "--", "s"))


def newest(pattern: str) -> Path:
    """The most recent ``bench/out`` file matching ``pattern``."""
    files = sorted((BENCH_DIR / "out").glob(pattern))
    if not files:
        sys.exit(f"bench/plot.py: no {pattern} in bench/out; run bench/engine.py first")
    return files[-1]


def load(path: Path) -> dict[str, dict[str, Any]]:
    """Records by query stem."""
    out: dict[str, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            rec = json.loads(line)
            out[rec["query"].removesuffix(".ceql")] = rec
    return out


def series(recs: dict[str, dict[str, Any]], xs: dict[str, int], system: str,
           policy: str) -> tuple[list[int], list[float]]:
    """(x, events/s) points of one engine and policy, where measured."""
    pts = []
    for stem, x in xs.items():
        rec = recs.get(f"{stem}_{policy}", {}).get(system, {})
        if "events_per_s" in rec:
            pts.append((x, float(rec["events_per_s"])))
    return [p[0] for p in pts], [p[1] for p in pts]


def plot(recs: dict[str, dict[str, Any]], out: Path, title: str) -> None:
    """Write the two-panel PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    panels = ((axes[0], LENGTHS, "sequence length n (query Pn, window T = 10 s)"),
              (axes[1], WINDOWS, "window (seconds; query P3)"))
    for ax, xs, label in panels:
        for system, name, colour in SYSTEMS:
            for policy, style, marker in POLICIES:
                x, y = series(recs, xs, system, policy)
                if x:
                    ax.plot(x, y, style, marker=marker, color=colour,
                            label=f"{name}, CONSUME BY {policy.upper()}")
        ax.set_xticks(list(xs.values()))
        ax.set_xlabel(label)
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("events per second (1 M stock events)")
    axes[0].legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("records", nargs="?", type=Path, help="engine JSON lines (default: newest)")
    p.add_argument("--out", type=Path, default=BENCH_DIR / "throughput.png")
    a = p.parse_args(argv)
    path = a.records or newest("engine-*.jsonl")
    recs = load(path)
    plot(recs, a.out, f"ceql vs CORE C++ on the same stream and queries ({path.name})")
    print(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
