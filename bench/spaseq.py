#!/usr/bin/env python3
"""SPAseq over streams of RDF graphs (issue 15 item 7): triples/s, the GPM share, and the
price of the RDF model against the same pattern in CEQL over the same data as a table.

Usage (from the repository root)::

    .venv/bin/python bench/spaseq.py [--events 200000] [--seed 42] [--windows 0.1,1,10,3600]
                                     [--only v_shape,v_shape_next] [--no-ceql] [--repeat 1]
                                     [--gpm-store] [--run-loop]

The data is bench/engine.py's anchor stock stream (``gen_stock.py``: 1000 Zipf tickers, BUY or
SELL, round-lot volumes, a random walk of prices, ~1000 events per second of event time),
cached under ``~/.cache/ceql-anchors/``. Each trade becomes one event of the stream
``<http://stockmarket.org/stocks>`` (time: the trade's ``ts`` as an aware datetime) whose
graph is 5 triples about the company's IRI, as N-Triples text::

    <http://stockmarket.org/company/MSFT> <http://example/price> "26.04"^^xsd:decimal .
    … <http://example/volume> "400"^^xsd:integer ; <http://example/type> "SELL" ;
      <http://example/trade> "17"^^xsd:integer ; <http://example/ts> "…"^^xsd:integer .

so ``--events 200000`` is 1 M triples. Queries: the paper's V shape and head and shoulders
(``tests/data/spaseq/q4_v_shape.rq``, ``q3_head_and_shoulders.rq``) read from their files with
the stream IRI and the window replaced:

* ``v_shape``, ``head_shoulders`` — as printed, ``SEQ (A, B, C)``: strict contiguity in the
  whole stream, ``?company`` shared (three consecutive trades of one company going up then
  down): very selective, a run lives one instant;
* ``v_shape_next``, ``head_shoulders_next`` — every ``,`` made ``;`` (skip-till-next per
  run: the company's next trade that fits): a run waits for its company's next fit trade,
  so the live runs grow with the window.

For each query and window (``--windows``, seconds): the SPAseq query over the events
(``ceql.spaseq.compile(text).evaluator()``: ``feed(events)`` in time order, then ``close()``,
every match kept; the events are built before timing), with
the evaluator's time inside GPM evaluation (``Evaluator.gpm_seconds``) against the rest (the
sequence run loop, cross-GPM FILTERs, event checks); with ``--gpm-store``, the same SPAseq
run again with GPMs evaluated on pyoxigraph's store (``GpmEvaluator(fast=False)``, the path
before ``ceql.rdf.fast``) in the same process, its figures under ``store_*`` and the ratios
``fast_speedup`` (all) and ``gpm_speedup`` (GPM seconds); with ``--run-loop``, the sequence is
evaluated by SPAseq's run loop (``evaluator(engine=False)``) instead of ceql's engine;
then the same pattern in CEQL
(``ceql.compile(text).run(rows, time="ts", time_unit="us")`` over the trades as dicts: ``,``
is ``:`` — contiguity by positions equals contiguity by instants here, one trade per
microsecond at most — ``;`` is ``;`` with a named ``NOT`` between every two steps forbidding
a fit event, ``?company`` is ``name``), and both match sets compared (positions; exit status 2
if they differ). Rates: events/s and triples/s of the SPAseq run; ``rdf_price`` = SPAseq
seconds / CEQL seconds (the price of the RDF model). Each figure is the median of
``--repeat`` runs.

Prints one JSON line per (query, window) and a Markdown table, and writes the lines, after a
first ``meta`` line (versions, load before and after, arguments), to
``bench/out/spaseq-<date-time>.jsonl``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow.csv as pacsv

import ceql
import ceql.spaseq
import ceql.spaseq.evaluator as spaseq_evaluator
from ceql.rdf import GpmEvaluator

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import engine  # noqa: E402  (bench/engine.py: the anchor stock stream)

OUT = BENCH / "out"
DATA = BENCH.parent / "tests" / "data" / "spaseq"
STREAM = "http://stockmarket.org/stocks"
COMPANY = "http://stockmarket.org/company/"
P = "http://example/"
XSD = "http://www.w3.org/2001/XMLSchema#"
TRIPLES = 5
QUERIES = {"v_shape": "q4_v_shape.rq", "v_shape_next": "q4_v_shape.rq",
           "head_shoulders": "q3_head_and_shoulders.rq",
           "head_shoulders_next": "q3_head_and_shoulders.rq"}


def load_rows(events: int, seed: int) -> list[dict[str, Any]]:
    """The anchor stream's first ``events`` trades as dicts (type, id, name, volume, price,
    ts in µs)."""
    table = pacsv.read_csv(engine.ensure_stream(events, seed))
    return table.to_pylist()


def rdf_events(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each trade as an event on :data:`STREAM`: its time as an aware datetime, its graph
    5 triples of N-Triples text about the company."""
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    out = []
    for r in rows:
        c = f"<{COMPANY}{r['name']}>"
        graph = (f'{c} <{P}price> "{r["price"]:.2f}"^^<{XSD}decimal> .\n'
                 f'{c} <{P}volume> "{r["volume"]}"^^<{XSD}integer> .\n'
                 f'{c} <{P}type> "{r["type"]}" .\n'
                 f'{c} <{P}trade> "{r["id"]}"^^<{XSD}integer> .\n'
                 f'{c} <{P}ts> "{r["ts"]}"^^<{XSD}integer> .\n')
        out.append({"stream": "S1", "time": epoch + dt.timedelta(microseconds=r["ts"]),
                    "graph": graph})
    return out


def window_text(seconds: float) -> str:
    ms = round(seconds * 1000)
    return f"{ms // 1000} SECONDS" if ms % 1000 == 0 else f"{ms} MILLISECONDS"


def spaseq_text(name: str, window: float) -> str:
    """The paper's query file with this stream's IRI, the window, and for ``*_next`` every
    ``,`` of SEQ made ``;``."""
    text = (DATA / QUERIES[name]).read_text(encoding="utf-8")
    text = text.replace("<http://stockmarket.org/stocks/google>", f"<{STREAM}>")
    text = re.sub(r"WITHIN 60 MINUTES", f"WITHIN {window_text(window)}", text)
    if name.endswith("_next"):
        text = re.sub(r"SEQ \(([^)]*)\)", lambda m: f"SEQ ({m.group(1).replace(',', ';')})",
                      text)
    return text


# the cross-GPM FILTERs of the two queries: variable k's conditions on earlier ones
CONDITIONS = {
    "v_shape": {2: [(">", 1)], 3: [("<", 2)]},
    "head_shoulders": {2: [(">", 1)], 3: [("<", 2), (">", 1)], 4: [(">", 2)],
                       5: [("<", 4), (">", 3)], 6: [(">", 5), ("<", 4)], 7: [("<", 6), (">", 5)]},
}


def ceql_text(name: str, window: float) -> str:
    """The same pattern in CEQL over the trades table."""
    base = name.removesuffix("_next")
    steps = max(CONDITIONS[base]) if CONDITIONS[base] else 1
    nxt = name.endswith("_next")
    parts, conds = [], []
    for k in range(1, steps + 1):
        if k > 1 and nxt:
            parts.append(f"NOT (BUY OR SELL) AS n{k}")
            conds.append(f"n{k}[name = e1.name]")
            conds += [f"n{k}[price {op} e{j}.price]" for op, j in CONDITIONS[base][k]]
        parts.append(f"(BUY OR SELL) AS e{k}")
        if k > 1:
            conds.append(f"e{k}[name = e1.name]")
            conds += [f"e{k}[price {op} e{j}.price]" for op, j in CONDITIONS[base][k]]
    seq = " ; ".join(parts) if nxt else " : ".join(parts)
    return (f"SELECT * FROM S WHERE {seq}\nFILTER " + "\n   AND ".join(conds)
            + f"\nWITHIN {window_text(window)}")


class StoreGpms(GpmEvaluator):
    """GPMs evaluated on pyoxigraph's store only (the path before :mod:`ceql.rdf.fast`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, fast=False, **kwargs)


def run_spaseq(text: str, events: list[dict[str, Any]], store: bool = False,
               engine: bool = True) -> tuple[float, float, set[tuple[int, ...]]]:
    q = ceql.spaseq.compile(text)
    if store:  # the evaluator makes its GpmEvaluators when it is made
        saved = spaseq_evaluator.GpmEvaluator
        spaseq_evaluator.GpmEvaluator = StoreGpms  # type: ignore[misc]
        try:
            ev = q.evaluator(engine=engine)
        finally:
            spaseq_evaluator.GpmEvaluator = saved  # type: ignore[misc]
    else:
        ev = q.evaluator(engine=engine)
    t = time.perf_counter()
    matches = ev.feed(events)
    matches += ev.close()
    seconds = time.perf_counter() - t
    return seconds, getattr(ev, "gpm_seconds", 0.0), {m.positions for m in matches}


def run_ceql(text: str, rows: list[dict[str, Any]]) -> tuple[float, set[tuple[int, ...]]]:
    q = ceql.compile(text)
    t = time.perf_counter()
    matches = list(q.run(rows, time="ts", time_unit="us"))
    seconds = time.perf_counter() - t
    return seconds, {tuple(m.positions) for m in matches}


def median_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    times, last = [], None
    for _ in range(repeat):
        last = fn()
        times.append(last[0])
    return statistics.median(times), last


def load_avg() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--windows", default="0.1,1,10,3600", help="seconds, comma-separated")
    ap.add_argument("--only", default="", help="queries, comma-separated")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-ceql", action="store_true")
    ap.add_argument("--run-loop", action="store_true",
                    help="evaluate sequences with the run loop instead of ceql's engine")
    ap.add_argument("--gpm-store", action="store_true",
                    help="also run each query with GPMs on the store (the old path)")
    args = ap.parse_args(argv)
    import pyoxigraph

    rows = load_rows(args.events, args.seed)
    events = rdf_events(rows)
    before = load_avg()
    out: list[dict[str, Any]] = []
    bad = False
    names = args.only.split(",") if args.only else list(QUERIES)
    for name in names:
        for window in (float(w) for w in args.windows.split(",")):
            s, (_, gpm_s, got) = median_of(
                args.repeat, lambda n=name, w=window: run_spaseq(spaseq_text(n, w), events,
                                                                 engine=not args.run_loop))
            rec: dict[str, Any] = {
                "query": name, "window_s": window, "events": len(events),
                "sequence": "run loop" if args.run_loop else "engine",
                "triples": len(events) * TRIPLES, "matches": len(got), "seconds": round(s, 3),
                "events_per_s": round(len(events) / s),
                "triples_per_s": round(len(events) * TRIPLES / s),
                "gpm_seconds": round(gpm_s, 3), "gpm_share": round(gpm_s / s, 3)}
            if args.gpm_store:
                o, (_, old_gpm, old) = median_of(
                    args.repeat,
                    lambda n=name, w=window: run_spaseq(spaseq_text(n, w), events, True,
                                                        not args.run_loop))
                rec.update({"store_seconds": round(o, 3),
                            "store_triples_per_s": round(len(events) * TRIPLES / o),
                            "store_gpm_seconds": round(old_gpm, 3),
                            "store_gpm_share": round(old_gpm / o, 3),
                            "fast_speedup": round(o / s, 2),
                            "gpm_speedup": round(old_gpm / gpm_s, 2) if gpm_s else None,
                            "store_same_matches": old == got})
                if old != got:
                    bad = True
            if not args.no_ceql:
                c, (_, want) = median_of(
                    args.repeat, lambda n=name, w=window: run_ceql(ceql_text(n, w), rows))
                rec.update({"ceql_seconds": round(c, 3), "ceql_matches": len(want),
                            "rdf_price": round(s / c, 2), "same_matches": got == want})
                if got != want:
                    bad = True
            print(json.dumps(rec), flush=True)
            out.append(rec)
    after = load_avg()
    meta = {"pyoxigraph": pyoxigraph.__version__, "python": sys.version.split()[0],
            "load_before": before, "load_after": after, "cpus": os.cpu_count(),
            "args": vars(args)}
    OUT.mkdir(exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    with open(OUT / f"spaseq-{stamp}.jsonl", "w") as f:
        f.write(json.dumps({"meta": meta}) + "\n")
        for r in out:
            f.write(json.dumps(r) + "\n")
    print(f"\npyoxigraph {meta['pyoxigraph']}, Python {meta['python']}; load (1/5/15 min) "
          f"before {before}, after {after}; {len(events):,} events, "
          f"{len(events) * TRIPLES:,} triples; median of {args.repeat}")
    print("\n| query | window s | matches | s | triples/s | GPM share | CEQL s | RDF price "
          "| same |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in out:
        print(f"| {r['query']} | {r['window_s']:g} | {r['matches']:,} | {r['seconds']:.2f} | "
              f"{r['triples_per_s']:,} | {r['gpm_share']:.0%} | {r.get('ceql_seconds', '-')} | "
              f"{r.get('rdf_price', '-')} | {r.get('same_matches', '-')} |")
    if args.gpm_store:
        print("\n| query | window s | triples/s store → fast | GPM share store → fast "
              "| GPM s store → fast | speedup (all, GPM) | same |")
        print("|---|---:|---:|---:|---:|---:|---|")
        for r in out:
            print(f"| {r['query']} | {r['window_s']:g} | {r['store_triples_per_s']:,} → "
                  f"{r['triples_per_s']:,} | {r['store_gpm_share']:.0%} → {r['gpm_share']:.0%} "
                  f"| {r['store_gpm_seconds']} → {r['gpm_seconds']} | {r['fast_speedup']}×, "
                  f"{r['gpm_speedup']}× | {r['store_same_matches']} |")
    return 2 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
