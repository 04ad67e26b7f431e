#!/usr/bin/env python3
# mypy: disable-error-code="import-not-found"
"""OpenCEP against the engine on workload (a) of ``bench/correlation.py``: same data, same query.

Usage (from the repository root)::

    .venv/bin/python bench/opencep.py --sizes 5000,20000,50000 --timeout 300
        [--storage default,name] [--mirror /work/.mirror/ilya-kolchinsky+OpenCEP/repo]
    .venv/bin/python bench/opencep.py --table bench/out/opencep-<date-time>.jsonl  # table only

OpenCEP (Technion, https://github.com/ilya-kolchinsky/OpenCEP; no PyPI release) is read from
the bare mirror ``--mirror``: its ``HEAD`` is exported once (``git archive``; the ``test``
folder is left out, its event files are not in the mirror) to
``<anchors cache>/opencep-<commit>``, and the commit is printed with the results. Its code is
run as it is; the only change is at import time: ``collections.Callable`` (removed in Python
3.10, imported by ``plan/invariant/Invariants.py``) is set to ``collections.abc.Callable``.

The workload is (a) of ``bench/correlation.py``: the first ``n`` events of the 1 M-event anchor
stock stream (its Parquet copy) and ``SELL AS a ; BUY AS b FILTER b[price > a.price] AND
a[name NOT IN {20 most frequent tickers of the 1 M stream}] PARTITION BY [name] WITHIN 10
SECONDS``. In OpenCEP it is ``SEQ(SELL a, BUY b)`` with ``a.name == b.name``, ``b.price >
a.price``, ``a.name not in TOP``, window ``timedelta(seconds=10)``, selection strategy
``MATCH_ANY`` and no consumption. OpenCEP's window test is ``max ts − min ts <= window`` and its
SEQ test is ``ts(a) <= ts(b)``; the stream's timestamps are strictly increasing, so both agree
with the engine (``b`` after ``a``, ``ts(b) − ts(a) <= 10 s``).

``--storage`` selects OpenCEP's partial-match storage, one run of OpenCEP per value:

* ``default``: ``TreeStorageParameters()``, OpenCEP's default: each new ``BUY`` is compared
  with every ``SELL`` of the last 10 s, all tickers;
* ``name``: ``TreeStorageParameters(sort_storage=True, prioritize_sorting_by_timestamp=False,
  attributes_priorities={"a": 1, "b": 1})``: the leaves are sorted by the equality condition on
  ``name``, so a new ``BUY`` is compared with the ``SELL``\\ s of its own ticker only (OpenCEP's
  closest to ``PARTITION BY``).

Each measurement runs in a fresh process with ``--timeout`` seconds. Both read the first ``n``
rows from the Parquet copy into Arrow batches before their clock starts (decoding the first
256 Ki-row batch takes ≈0.2 s, most of the engine's time at a few thousand events). The
engine runs as ``correlation.py``'s ``child`` does (its ``_stock_batches`` returns these
batches) and is fed the Arrow batches; OpenCEP gets an input stream that turns the same batches
into row tuples as it pulls them (its ``DataFormatter`` makes the payload dict) and an output
stream that folds each match into the fingerprint instead of holding it. Timed: from the start
of the feed to its end, compilation / tree construction excluded. The fingerprint is
``correlation.py``'s (count, Σx, Σx² mod 2^61−1 with ``x = id(a)·P + id(b)``; the engine's side
uses match positions, as ``child`` does, which equal ``id`` in this stream); the two engines'
must be equal. A storage setting whose OpenCEP run times out is not run at larger ``n``.
Prints a Markdown table and writes JSON lines to ``bench/out/opencep-<date-time>.jsonl``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import correlation as cb
import engine as eb

MIRROR = Path("/work/.mirror/ilya-kolchinsky+OpenCEP/repo")
STREAM_EVENTS = 1_000_000  # the anchor stream whose first n events are used
WINDOW_S = 10
STORAGES = ("default", "name")


# --------------------------------------------------------------------------- input
def first_batches(n: int, seed: int, source: Any = cb._stock_batches) -> list[Any]:
    """The first ``n`` rows of the 1 M anchor stream as Arrow batches in memory, read as
    ``correlation._stock_batches`` reads them (``source`` is bound here, before
    :func:`ceql_child` replaces it). Read before timing: the first 256 Ki-row batch takes
    ≈0.2 s to decode, which at a few thousand events would be most of the engine's time."""
    out: list[Any] = []
    left = n
    for batch in source(STREAM_EVENTS, seed):
        if left <= 0:
            break
        if batch.num_rows > left:
            batch = batch.slice(0, left)
        left -= batch.num_rows
        out.append(batch)
    return out


# --------------------------------------------------------------------------- OpenCEP
def mirror_commit(mirror: Path) -> str:
    return subprocess.run(["git", "-C", str(mirror), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()


def export_opencep(mirror: Path, commit: str) -> Path:
    """OpenCEP's tree at ``commit`` without ``test`` (read-only on the mirror), once."""
    dest = eb.CACHE_DIR / f"opencep-{commit[:12]}"
    if (dest / "CEP.py").exists():
        return dest
    tops = subprocess.run(["git", "-C", str(mirror), "ls-tree", "--name-only", commit],
                          capture_output=True, text=True, check=True).stdout.split()
    tmp = dest.with_name(dest.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(mirror), "archive", commit, "--",
                              *[t for t in tops if t != "test"]], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
    tmp.replace(dest)
    return dest


def opencep_child(src: Path, n: int, seed: int, top: Sequence[str],
                  storage: str) -> dict[str, Any]:
    """Run OpenCEP on the first ``n`` events in this process; a JSON-able record."""
    import collections
    import collections.abc

    collections.Callable = collections.abc.Callable  # type: ignore[attr-defined]
    sys.path.insert(0, str(src))
    from base.DataFormatter import DataFormatter, EventTypeClassifier
    from base.Pattern import Pattern
    from base.PatternStructure import PrimitiveEventStructure, SeqOperator
    from CEP import CEP
    from condition.BaseRelationCondition import EqCondition, GreaterThanCondition
    from condition.CompositeCondition import AndCondition
    from condition.Condition import SimpleCondition, Variable
    from evaluation.EvaluationMechanismFactory import TreeBasedEvaluationMechanismParameters
    from misc.ConsumptionPolicy import ConsumptionPolicy
    from misc.SelectionStrategies import SelectionStrategies
    from stream.Stream import InputStream, OutputStream
    from tree.PatternMatchStorage import TreeStorageParameters

    epoch = dt.datetime(1970, 1, 1)
    fields = ("type", "id", "name", "volume", "price", "ts")

    class TypeColumn(EventTypeClassifier):  # type: ignore[misc]
        def get_event_type(self, event_payload: dict[str, Any]) -> str:
            return str(event_payload["type"])

    class RowFormatter(DataFormatter):  # type: ignore[misc]
        """A row tuple (type, id, name, volume, price, ts µs) → payload; ts as a datetime
        (exact: datetime has µs resolution)."""

        def __init__(self) -> None:
            super().__init__(TypeColumn())

        def parse_event(self, raw_data: tuple[Any, ...]) -> dict[str, Any]:
            return dict(zip(fields, raw_data, strict=True))

        def get_event_timestamp(self, event_payload: dict[str, Any]) -> dt.datetime:
            return epoch + dt.timedelta(microseconds=event_payload["ts"])

    class ArrowRows(InputStream):  # type: ignore[misc]
        """The first ``n`` rows, turned into tuples batch by batch as OpenCEP pulls them."""

        def __iter__(self) -> Iterator[tuple[Any, ...]]:
            for batch in batches:
                yield from zip(*(batch.column(f).to_pylist() for f in fields), strict=True)

    fp = [0, 0, 0]

    class Fingerprint(OutputStream):  # type: ignore[misc]
        """Folds each match into the fingerprint; holds none."""

        def add_item(self, item: Any) -> None:
            ids = {e.type: e.payload["id"] for e in item.events}
            cb._fold(fp, ids["SELL"] * cb.P + ids["BUY"])

        def close(self) -> None:
            pass

    top_set = frozenset(top)
    pattern = Pattern(
        SeqOperator(PrimitiveEventStructure("SELL", "a"), PrimitiveEventStructure("BUY", "b")),
        AndCondition(
            EqCondition(Variable("a", lambda x: x["name"]), Variable("b", lambda x: x["name"])),
            GreaterThanCondition(Variable("b", lambda x: x["price"]),
                                 Variable("a", lambda x: x["price"])),
            SimpleCondition(Variable("a", lambda x: x["name"]),
                            relation_op=lambda name: name not in top_set)),
        dt.timedelta(seconds=WINDOW_S),
        ConsumptionPolicy(primary_selection_strategy=SelectionStrategies.MATCH_ANY))
    if storage == "default":
        storage_params = TreeStorageParameters()
    elif storage == "name":
        storage_params = TreeStorageParameters(sort_storage=True,
                                               prioritize_sorting_by_timestamp=False,
                                               attributes_priorities={"a": 1, "b": 1})
    else:
        raise ValueError(f"unknown storage {storage!r}")
    cep = CEP([pattern], TreeBasedEvaluationMechanismParameters(storage_params=storage_params))
    batches = first_batches(n, seed)
    t0 = time.perf_counter()
    cep.run(ArrowRows(), Fingerprint(), RowFormatter())
    seconds = time.perf_counter() - t0
    return {"seconds": round(seconds, 3), "matches": fp[0], "fingerprint": fp,
            "events_per_s": round(n / seconds), "rss_mb": round(eb.rss_peak_mb(), 1)}


# --------------------------------------------------------------------------- engine
def ceql_child(n: int, seed: int, query: str) -> dict[str, Any]:
    """``correlation.child`` (work a) on the first ``n`` events: for the length of this process
    its stream reader returns them from memory (``child`` calls it before starting its clock)."""
    batches = first_batches(n, seed)

    def prefix(events: int, seed: int) -> Iterator[Any]:
        assert events == n
        return iter(batches)

    cb._stock_batches = prefix
    return cb.child("a", n, seed, query)


# --------------------------------------------------------------------------- parent
def run(args: Sequence[str], timeout: float) -> dict[str, Any]:
    """This file with ``args`` in a fresh interpreter; its record or a timeout."""
    cmd = [sys.executable, __file__, *args]
    t0 = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"timeout_s": timeout}
    if out.returncode:
        return {"error": out.stderr.strip().splitlines()[-1][:300] if out.stderr else
                f"exit {out.returncode}", "wall_s": round(time.perf_counter() - t0, 1)}
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def fmt_s(rec: dict[str, Any]) -> str:
    if "timeout_s" in rec:
        return f">{rec['timeout_s']:g}"
    if "error" in rec:
        return "error"
    return f"{rec['seconds']:.2f}"


def row(rec: dict[str, Any]) -> str:
    """One Markdown row for a record; an OpenCEP timeout gives a lower bound on the ratio."""
    oc, ce = rec["opencep"], rec["ceql"]
    ok = "fingerprint" in oc and "fingerprint" in ce
    same = ("yes" if oc["fingerprint"] == ce["fingerprint"] else "DIFFER") if ok else "–"
    if ok:
        ratio = f"{oc['seconds'] / ce['seconds']:,.0f}×"
    elif "timeout_s" in oc and "seconds" in ce:
        ratio = f"> {oc['timeout_s'] / ce['seconds']:,.0f}×"
    else:
        ratio = "–"
    if oc.get("matches") == ce.get("matches"):
        matches = eb.fmt_int(ce.get("matches"))
    elif "matches" not in oc:
        matches = f"{eb.fmt_int(ce.get('matches'))} (ceql)"
    else:
        matches = f"{eb.fmt_int(oc.get('matches'))} / {eb.fmt_int(ce.get('matches'))}"
    return (f"| {rec['events']:,} | {rec['storage']} | {fmt_s(oc)} | "
            f"{eb.fmt_int(oc.get('events_per_s'))} | {eb.fmt_mb(oc.get('rss_mb'))} | {fmt_s(ce)} "
            f"| {eb.fmt_int(ce.get('events_per_s'))} | {eb.fmt_mb(ce.get('rss_mb'))} | {matches} "
            f"| {same} | {ratio} | {rec['load_before'].split(' / ')[0]} → "
            f"{rec['load_after'].split(' / ')[0]} |")


def table(records: Sequence[dict[str, Any]]) -> str:
    """The Markdown table of the records."""
    head = ("| n | OpenCEP storage | OpenCEP s | OpenCEP events/s | OpenCEP RSS MB | ceql s "
            "| ceql events/s | ceql RSS MB | matches | fingerprints equal | ceql speed / "
            "OpenCEP speed | load (1 min) before → after |\n"
            "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|")
    return "\n".join([head, *(row(r) for r in records)])


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="5000,20000,50000")
    p.add_argument("--storage", default=",".join(STORAGES),
                   help="OpenCEP storage settings to run: default, name (comma-separated)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--mirror", type=Path, default=MIRROR)
    p.add_argument("--child", choices=("opencep", "ceql"), help=argparse.SUPPRESS)
    p.add_argument("--events", type=int, help=argparse.SUPPRESS)
    p.add_argument("--src", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--top", help=argparse.SUPPRESS)
    p.add_argument("--query", help=argparse.SUPPRESS)
    p.add_argument("--table", type=Path, help="only print the table of this JSONL file")
    args = p.parse_args(argv)
    if args.table:
        print(table([json.loads(line) for line in args.table.read_text().splitlines()]))
        return 0
    if args.child == "opencep":
        rec = opencep_child(args.src, args.events, args.seed, json.loads(args.top),
                            args.storage)
        print(json.dumps(rec))
        return 0
    if args.child == "ceql":
        print(json.dumps(ceql_child(args.events, args.seed, args.query)))
        return 0

    sizes = [int(s) for s in args.sizes.split(",")]
    storages = [s for s in args.storage.split(",") if s]
    commit = mirror_commit(args.mirror)
    src = export_opencep(args.mirror, commit)
    importlib.import_module("spark").ensure_parquet(STREAM_EVENTS, args.seed)
    top = cb.top_names(STREAM_EVENTS, args.seed)
    query = cb.query_a(top)
    cb.OUT.mkdir(exist_ok=True)
    started = dt.datetime.now()
    out = cb.OUT / f"opencep-{started:%Y%m%d-%H%M%S}.jsonl"
    print(f"OpenCEP: {args.mirror} @ {commit} (exported to {src})")
    print(f"python {sys.version.split()[0]}; started {started:%Y-%m-%d %H:%M:%S}; "
          f"load {eb.load_avg()}")
    print(f"query: {query}", flush=True)
    records: list[dict[str, Any]] = []
    stopped: set[str] = set()  # storages whose OpenCEP run exceeded the timeout
    for n in sizes:
        ce: dict[str, Any] | None = None
        for storage in storages:
            if storage in stopped:
                continue
            load_before = eb.load_avg()
            oc = run(["--child", "opencep", "--src", str(src), "--events", str(n), "--seed",
                      str(args.seed), "--top", json.dumps(top), "--storage", storage],
                     args.timeout)
            if ce is None:
                ce = run(["--child", "ceql", "--events", str(n), "--seed", str(args.seed),
                          "--query", query], args.timeout)
            rec = {"events": n, "storage": storage, "opencep": oc, "ceql": ce,
                   "opencep_commit": commit, "load_before": load_before,
                   "load_after": eb.load_avg(),
                   "fingerprints_equal": oc.get("fingerprint") == ce.get("fingerprint")
                   if "fingerprint" in oc else None}
            with out.open("a") as f:
                f.write(json.dumps(rec) + "\n")
            print(json.dumps(rec), flush=True)
            records.append(rec)
            if "seconds" not in oc or oc["seconds"] > args.timeout:
                stopped.add(storage)
    print(f"\nOpenCEP {commit[:12]} vs ceql, workload (a), first n events of the 1 M stream "
          f"(finished {dt.datetime.now():%Y-%m-%d %H:%M:%S}, load {eb.load_avg()})\n")
    print(table(records))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
