#!/usr/bin/env python3
"""SPAseq's per-event graph patterns (issue 15 item 3): pyoxigraph against rdflib.

Usage (from the repository root; rdflib comes with the ``bench`` extra)::

    .venv/bin/python bench/rdf_gpm.py [--events 20000] [--rdflib-events 2000] [--repeat 3]
                                      [--batch 1000] [--seed 42] [--only stock,filter]
                                      [--no-rdflib]

Events are the stock use case's (the paper's UC 4 and its SMD dataset mapped to N-Triples):
one company's transaction per event, 7 triples (price, volume, sector, transaction id, type,
time, exchange), as N-Triples text. Workloads, each a set of GPMs as the SPAseq front end
writes them (``SELECT DISTINCT``, full IRIs):

* ``stock`` — the paper's GPM shape ``?company :price ?p . ?company :volume ?vol``;
* ``q3`` — the head-and-shoulders query's seven GPMs A…G, each of that shape (their FILTERs are
  cross-GPM: evaluated by the sequence, not here);
* ``filter`` — the stock GPM with a FILTER of its own (``?p1 > 250 && ?vol1 < 5000``);
* ``kb`` — the stock GPM joined with a static graph of 110 companies (CEO, city) through
  ``GRAPH <…/kb> { … }``.

For ``stock``, pyoxigraph also reads the same events as lists of ``(s, p, o)`` in N-Triples
syntax (``array<struct<s,p,o>>`` cells). Per library and workload: **parse** (text → the
library's triples), **per event** (parse and every GPM, one event at a time:
``GpmEvaluator.evaluate``; rdflib: a ``Dataset`` whose default graph is refilled per event,
prepared queries), and **batch** (``GpmEvaluator.evaluate_many`` over ``--batch`` events: one
rewritten query per GPM per batch on the store, ``GpmEvaluator(fast=False)``; rdflib: the
same rewrite over a ``Dataset`` holding the batch as named graphs), and for the workloads
whose GPMs allow it (all but ``kb``), **batch …, no store**: ``GpmEvaluator(fast=True)``,
basic graph patterns matched in Python (:mod:`ceql.rdf.fast`). Each is timed ``--repeat``
times, the median kept; rates are events/s and triples/s over the parse+evaluate work.
Both libraries' mappings are compared (values normalised: numbers as floats) on the rdflib
events, and every batch path's against the store's per-event path (exit status 2 if anything
differs). Two ways of putting an event into pyoxigraph's store and out again are timed too
(:func:`oxi_load_variants`). Writes ``bench/out/rdf_gpm-<time>.jsonl`` and prints a Markdown
table with the machine load before and after.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from ceql.rdf import GpmEvaluator, StaticDataset, read_event
from ceql.rdf.sparql import plan_batch

OUT = Path(__file__).resolve().parent / "out"
P = "http://example/"
KB = "http://stockmarket.org/kb"
COMPANIES = 110
SECTORS = 11
XSD = "http://www.w3.org/2001/XMLSchema#"


def make_events(n: int, seed: int) -> list[str]:
    """``n`` stock events as N-Triples text, 7 triples each."""
    rng = random.Random(seed)
    t0 = dt.datetime(2024, 3, 1, 9, 30)
    out = []
    for i in range(n):
        c = rng.randrange(COMPANIES)
        price = round(rng.uniform(10, 500), 2)
        t = (t0 + dt.timedelta(milliseconds=190 * i)).isoformat()
        out.append(
            f'<{P}company/{c}> <{P}price> "{price}"^^<{XSD}decimal> .\n'
            f'<{P}company/{c}> <{P}volume> "{rng.randrange(1, 10000)}"^^<{XSD}integer> .\n'
            f"<{P}company/{c}> <{P}sector> <{P}sector/{c % SECTORS}> .\n"
            f'<{P}company/{c}> <{P}transaction> "{i}"^^<{XSD}integer> .\n'
            f'<{P}company/{c}> <{P}type> "{rng.choice(["buy", "sell"])}" .\n'
            f'<{P}company/{c}> <{P}time> "{t}"^^<{XSD}dateTime> .\n'
            f"<{P}company/{c}> <{P}exchange> <{P}NYSE> .\n")
    return out


def as_triples(events: Sequence[str]) -> list[list[tuple[str, str, str]]]:
    """The events as lists of ``(s, p, o)`` in N-Triples syntax (an ``array<struct<s,p,o>>``
    cell's values)."""
    return [[(str(q.subject), str(q.predicate), str(q.object))
             for q in ox.parse(e, ox.RdfFormat.N_TRIPLES)] for e in events]


def kb_text() -> str:
    return "".join(f'<{P}company/{c}> <{P}ceo> "ceo {c}" .\n'
                   f"<{P}company/{c}> <{P}city> <{P}city/{c % 17}> .\n"
                   for c in range(COMPANIES))


def _gpm(i: str) -> str:
    return (f"SELECT DISTINCT ?company ?p{i} ?vol{i}\nWHERE {{\n"
            f"  ?company <{P}price> ?p{i} .\n  ?company <{P}volume> ?vol{i} .\n}}")


WORKLOADS: dict[str, dict[str, str]] = {
    "stock": {"A": _gpm("1")},
    "q3": {name: _gpm(str(k + 1)) for k, name in enumerate("ABCDEFG")},
    "filter": {"A": (f"SELECT DISTINCT ?company ?p1 ?vol1\nWHERE {{\n"
                     f"  ?company <{P}price> ?p1 .\n  ?company <{P}volume> ?vol1 .\n"
                     f"  FILTER(?p1 > 250 && ?vol1 < 5000)\n}}")},
    "kb": {"A": (f"SELECT DISTINCT ?company ?p1 ?vol1 ?ceo ?city\nWHERE {{\n"
                 f"  ?company <{P}price> ?p1 .\n  ?company <{P}volume> ?vol1 .\n"
                 f"  GRAPH <{KB}> {{ ?company <{P}ceo> ?ceo . ?company <{P}city> ?city . }}\n}}")},
}

Results = list[dict[str, list[dict[str, Any]]]]


# ---------------------------------------------------------------- pyoxigraph (ceql.rdf)

def oxi_evaluator(workload: str, fast: bool) -> GpmEvaluator:
    kb = StaticDataset().load(kb_text(), format="ntriples", graph=KB)
    return GpmEvaluator(WORKLOADS[workload], kb if workload == "kb" else None, fast=fast)


def oxi_per_event(gpms: GpmEvaluator, events: Sequence[Any]) -> Results:
    fmt = "ntriples" if isinstance(events[0], str) else None
    return [gpms.evaluate(e, format=fmt) for e in events]


def oxi_batch(gpms: GpmEvaluator, events: Sequence[Any], batch: int) -> Results:
    fmt = "ntriples" if isinstance(events[0], str) else None
    out: Results = []
    for i in range(0, len(events), batch):
        out.extend(gpms.evaluate_many(events[i:i + batch], format=fmt))
    return out


def oxi_parse(events: Sequence[str]) -> int:
    return sum(len(read_event(e, format="ntriples")) for e in events)


def oxi_load_variants(events: Sequence[str]) -> dict[str, float]:
    """Seconds to put every event into a store and take it out again: parsed quads into the
    default graph then the default graph cleared (the first design); the text straight into a
    graph then that graph removed, with one graph name for all events or a name per event
    (ceql's: pyoxigraph's store slows down as a reused name's history grows)."""
    out = {}
    store = ox.Store()
    t = time.perf_counter()
    for e in events:
        store.extend(ox.parse(e, ox.RdfFormat.N_TRIPLES, rename_blank_nodes=True))
        store.clear_graph(ox.DefaultGraph())
    out["extend, clear_graph"] = time.perf_counter() - t
    store = ox.Store()
    node = ox.BlankNode("ceqlev")
    t = time.perf_counter()
    for e in events:
        store.load(e, ox.RdfFormat.N_TRIPLES, to_graph=node)
        store.remove_graph(node)
    out["load, remove_graph, one name"] = time.perf_counter() - t
    store = ox.Store()
    t = time.perf_counter()
    for k, e in enumerate(events):
        node = ox.BlankNode(f"ceqlev{k}")
        store.load(e, ox.RdfFormat.N_TRIPLES, to_graph=node)
        store.remove_graph(node)
    out["load, remove_graph, a name per event"] = time.perf_counter() - t
    return out


# ---------------------------------------------------------------- rdflib

def rdflib_setup(workload: str) -> tuple[Any, Any, dict[str, Any], dict[str, Any]]:
    import rdflib
    from rdflib.plugins.sparql import prepareQuery

    ds = rdflib.Dataset()
    if workload == "kb":
        ds.graph(rdflib.URIRef(KB)).parse(data=kb_text(), format="nt")
    gpms = WORKLOADS[workload]
    prepared = {n: prepareQuery(q) for n, q in gpms.items()}
    batch = {n: prepareQuery(plan_batch(q).query) for n, q in gpms.items()}
    return rdflib, ds, prepared, batch


def _rdflib_value(term: Any) -> Any:
    import rdflib

    if isinstance(term, rdflib.Literal):
        v = term.toPython()
        return v if isinstance(v, (str, bool, dt.datetime)) else float(v)
    return str(term)


def rdflib_per_event(setup: Any, events: Sequence[str]) -> Results:
    _, ds, prepared, _ = setup
    default = ds.default_graph
    out: Results = []
    for e in events:
        default.parse(data=e, format="nt")
        answer = {}
        for name, q in prepared.items():
            result = ds.query(q)
            names = [str(v) for v in result.vars]
            answer[name] = [{k: _rdflib_value(t) for k, t in zip(names, row, strict=True)
                             if t is not None} for row in result]
        out.append(answer)
        default.remove((None, None, None))
    return out


def rdflib_batch(setup: Any, events: Sequence[str], batch: int) -> Results:
    rdflib, ds, _, prepared = setup
    out: Results = []
    for i in range(0, len(events), batch):
        chunk = events[i:i + batch]
        graphs = [ds.graph(rdflib.BNode(f"ceqlev{k}")) for k in range(len(chunk))]
        for g, e in zip(graphs, chunk, strict=True):
            g.parse(data=e, format="nt")
        answers: Results = [{n: [] for n in prepared} for _ in chunk]
        for name, q in prepared.items():
            result = ds.query(q)
            names = [str(v) for v in result.vars]
            for row in result:
                m = dict(zip(names, row, strict=True))
                k = int(str(m.pop("__ceql_event"))[len("ceqlev"):])
                answers[k][name].append({v: _rdflib_value(t) for v, t in m.items()
                                         if t is not None})
        for g in graphs:
            ds.remove_graph(g)
        out.extend(answers)
    return out


def rdflib_parse(events: Sequence[str]) -> int:
    import rdflib

    return sum(len(rdflib.Graph().parse(data=e, format="nt")) for e in events)


# ---------------------------------------------------------------- comparing, timing

def normalised(results: Results) -> list[dict[str, list[tuple[tuple[str, Any], ...]]]]:
    def norm(v: Any) -> Any:
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
    return [{n: sorted(tuple(sorted((k, norm(v)) for k, v in m.items())) for m in ms)
             for n, ms in r.items()} for r in results]


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def load_avg() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--rdflib-events", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--only", default="", help="workloads, comma-separated")
    ap.add_argument("--no-rdflib", action="store_true")
    args = ap.parse_args(argv)
    import pyoxigraph
    import rdflib

    before = load_avg()
    events = make_events(args.events, args.seed)
    small = events[:args.rdflib_events]
    triples = 7
    rows: list[dict[str, Any]] = []
    bad = False

    def row(lib: str, workload: str, path: str, n: int, seconds: float) -> None:
        rows.append({"library": lib, "workload": workload, "path": path, "events": n,
                     "seconds": round(seconds, 4), "events_per_s": round(n / seconds),
                     "triples_per_s": round(n * triples / seconds)})
        print(f"  {lib} {workload} {path}: {seconds:.3f} s", file=sys.stderr, flush=True)

    s, _ = timed(lambda: oxi_parse(events), args.repeat)
    row("pyoxigraph", "-", "parse", len(events), s)
    if not args.no_rdflib:
        s, _ = timed(lambda: rdflib_parse(small), args.repeat)
        row("rdflib", "-", "parse", len(small), s)
    variants = oxi_load_variants(events)
    for name, seconds in variants.items():
        row("pyoxigraph", "-", name, len(events), seconds)

    for workload in (args.only.split(",") if args.only else WORKLOADS):
        gpms = oxi_evaluator(workload, fast=False)
        quick = oxi_evaluator(workload, fast=True)
        # the store's paths, then without a store (ceql.rdf.fast) when every GPM allows it
        paths = [("", gpms)] + ([(", no store", quick)] if quick.storeless else [])
        s_one, one = timed(lambda g=gpms: oxi_per_event(g, events), args.repeat)
        row("pyoxigraph", workload, "per event", len(events), s_one)
        for size in sorted({10, 100, args.batch}):
            for label, g in paths:
                s_b, many = timed(lambda g=g, b=size: oxi_batch(g, events, b), args.repeat)
                row("pyoxigraph", workload, f"batch {size}{label}", len(events), s_b)
                if many != one:
                    print(f"MISMATCH pyoxigraph {workload}: batch {size}{label} != per event")
                    bad = True
        if workload == "stock":  # the same events as lists of triples
            lists = as_triples(events)
            s_t, t_one = timed(lambda g=gpms, ls=lists: oxi_per_event(g, ls), args.repeat)
            row("pyoxigraph", workload, "per event, triples", len(events), s_t)
            for label, g in paths:
                s_tb, t_many = timed(lambda g=g, ls=lists: oxi_batch(g, ls, args.batch),
                                     args.repeat)
                row("pyoxigraph", workload, f"batch {args.batch}, triples{label}", len(events),
                    s_tb)
                if t_one != one or t_many != one:
                    print(f"MISMATCH pyoxigraph {workload}: triples{label} != text")
                    bad = True
        if args.no_rdflib:
            continue
        setup = rdflib_setup(workload)
        s_r, r_one = timed(lambda su=setup: rdflib_per_event(su, small), args.repeat)
        row("rdflib", workload, "per event", len(small), s_r)
        s_rb, r_many = timed(lambda su=setup: rdflib_batch(su, small, args.batch), args.repeat)
        row("rdflib", workload, f"batch {args.batch}", len(small), s_rb)
        if normalised(r_one) != normalised(one[:len(small)]) or \
                normalised(r_many) != normalised(r_one):
            print(f"MISMATCH {workload}: rdflib's mappings differ from pyoxigraph's")
            bad = True
    after = load_avg()

    OUT.mkdir(exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    meta = {"pyoxigraph": pyoxigraph.__version__, "rdflib": rdflib.__version__,
            "python": sys.version.split()[0], "load_before": before, "load_after": after,
            "cpus": os.cpu_count(), "args": vars(args)}
    with open(OUT / f"rdf_gpm-{stamp}.jsonl", "w") as f:
        f.write(json.dumps({"meta": meta}) + "\n")
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print(f"pyoxigraph {meta['pyoxigraph']}, rdflib {meta['rdflib']}, Python {meta['python']};"
          f" load (1/5/15 min) before {before}, after {after}; {triples} triples per event;"
          f" median of {args.repeat}")
    print("\n| library | workload | path | events | s | events/s | triples/s |")
    print("|---|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['library']} | {r['workload']} | {r['path']} | {r['events']} | "
              f"{r['seconds']:.3f} | {r['events_per_s']:,} | {r['triples_per_s']:,} |")
    return 2 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
