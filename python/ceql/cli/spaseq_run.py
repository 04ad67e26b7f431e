"""``ceql run --language spaseq``: a SPAseq query (docs/SPASEQ.md) over RDF graph events, with
the pure-Python evaluator (:mod:`ceql.spaseq`), one JSON line per match.

Events come from

* a JSON-lines file (or ``-``, standard input): one object per line with the event's stream
  (an IRI, or the query's name for it), time (seconds, or an ISO 8601 datetime string) and
  graph (N-Triples / Turtle text, or a list of triples ``[s, p, o]`` / ``{"s", "p", "o"}``
  with terms in N-Triples syntax), under the keys ``stream``, ``time``, ``graph`` or those
  ``--stream-col``, ``--time``, ``--graph-col`` name; positions count the file's lines
  (blank lines aside) from 0;
* a directory of one RDF file per event, named ``STREAM@TIME.EXT``: STREAM the query's name
  of the stream (``S1``), TIME seconds (``10``, ``2.5``) or an ISO 8601 datetime, EXT
  ``nt``, ``ttl`` or ``jsonld`` (``S1@10.ttl``, ``S2@2024-05-01T10:00:00.nt``); positions
  count the files in (time, stream) order, and each match lists its ``files``.

``--dataset`` (repeatable) names the static graphs ``GRAPH <iri>`` reads: ``IRI=FILE`` (the
file's triples form the named graph IRI) or a TriG / N-Quads FILE (its named graphs).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from decimal import Decimal
from typing import IO, Any

import ceql

from .errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, CliError, QueryError
from .progress import say, summary_line
from .query import read_query

__all__ = ["EVENT_FILE", "run_spaseq"]

#: The name of a per-event RDF file in an input directory.
EVENT_FILE = re.compile(r"(?P<stream>[^@/\\]+)@(?P<time>.+)\.(?P<ext>nt|ttl|jsonld)\Z")
_FORMATS = {"nt": "ntriples", "ttl": "turtle", "jsonld": "jsonld"}


def _time(text: str) -> Any:
    """A time written as text: a number of seconds, else an ISO 8601 datetime, else as is
    (the evaluator then says what a time must be)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        return text


def _dataset(items: list[str]) -> Any:
    from ceql.rdf import StaticDataset

    ds = StaticDataset()
    for item in items:
        iri, sep, path = item.rpartition("=")
        if not sep:
            iri, path = "", item
        iri = iri.strip().removeprefix("<").removesuffix(">")
        path = path.strip()
        if not os.path.isfile(path):
            raise CliError(f"--dataset {item}: no file {path}")
        try:
            ds.load(path=path, graph=iri or None)
        except ceql.CeqlError as exc:
            message = str(exc)
            if not iri and "triples outside a named graph" in message:
                raise CliError(f"--dataset {item}: the file has triples outside a named graph; "
                               f"name their graph: --dataset 'http://…={path}'", EXIT_USAGE
                               ) from None
            raise _Failed(f"--dataset {item}: {message}") from None
    return ds


class _Failed(Exception):
    """An input that cannot be used, reported in full (a caret snippet keeps its lines)."""


def _json_events(stream: IO[str], name: str) -> Iterator[dict[str, Any]]:
    for n, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CliError(f"{name}: line {n} is not JSON ({exc.msg})") from None
        if not isinstance(event, dict):
            raise CliError(f"{name}: line {n} is a JSON {type(event).__name__}, not an object "
                           "with the event's stream, time and graph")
        yield event


def _open_text(path: str) -> IO[str]:
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _directory_events(path: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The events of a directory of ``STREAM@TIME.EXT`` files, in (time, stream) order."""
    found = []
    for entry in sorted(os.listdir(path)):
        if entry.startswith("."):
            continue
        m = EVENT_FILE.match(entry)
        if m is None:
            raise CliError(f"{os.path.join(path, entry)}: an event file is named "
                           "STREAM@TIME.EXT (EXT nt, ttl or jsonld), e.g. S1@10.ttl")
        found.append((_time(m["time"]), m["stream"], entry, m["ext"]))
    try:
        found.sort(key=lambda f: (f[0], f[1]))
    except TypeError:
        raise CliError(f"{path}: the file names mix numbers and datetimes as times; use one "
                       "kind") from None
    events, names = [], []
    from ceql.rdf import read_event

    for t, stream, entry, ext in found:
        with open(os.path.join(path, entry), "rb") as f:
            text = f.read()
        graph: Any = text
        try:
            graph = read_event(text, format=_FORMATS[ext], name=entry)
        except ceql.CeqlError as exc:
            raise _Failed(str(exc)) from None
        events.append({"stream": stream, "time": t, "graph": graph})
        names.append(entry)
    return events, names


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def run_spaseq(args: argparse.Namespace) -> int:
    """Run the SPAseq query ``args.query`` over ``args.input``; write its matches."""
    try:
        import ceql.spaseq
    except ImportError as exc:
        raise CliError(f"SPAseq needs pyoxigraph: pip install 'ceql[spaseq]' ({exc})") from None
    for flag, value in (("--time-format", args.time_format), ("--output-format",
                                                              args.output_format)):
        if value is not None and not (flag == "--output-format" and value == "jsonl"):
            raise CliError(f"{flag} is for CEQL queries; SPAseq matches are JSON lines",
                           EXIT_USAGE)
    if args.output is not None and not args.output.endswith((".jsonl", ".json", ".ndjson")):
        raise CliError(f"--output {args.output}: SPAseq matches are written as JSON lines "
                       "(.jsonl)", EXIT_USAGE)
    if args.engine != "local":
        raise CliError("--language spaseq runs on the local engine; in Spark, use the "
                       "MATCH_SPASEQ table function (docs/spark.md)", EXIT_USAGE)
    started = time.perf_counter()
    text, source = read_query(args.query)
    try:
        try:
            dataset = _dataset(args.dataset or [])
            query = ceql.spaseq.compile(text, dataset=dataset if args.dataset else None)
        except ceql.CeqlError as exc:
            raise QueryError(source, exc) from None
        names: list[str] | None = None
        if args.input == "-":
            events = list(_json_events(sys.stdin, "<stdin>"))
        elif os.path.isdir(args.input):
            events, names = _directory_events(args.input)
        elif os.path.isfile(args.input):
            with _open_text(args.input) as f:
                events = list(_json_events(f, args.input))
        else:
            raise CliError(f"cannot read {args.input}: No such file or directory")
        keys = {"time": args.time or "time", "stream": args.stream_col,
                "graph": args.graph_col}
        for e in events:
            t = e.get(keys["time"])
            if isinstance(t, str):
                e[keys["time"]] = _time(t)
        lines = []
        for m in query.run(events, **keys):
            d = m.to_dict()
            if names is not None:
                d["files"] = [names[p] for p in m.positions]
            lines.append(json.dumps(d, default=_json_default) + "\n")
        if args.output:
            with open(args.output, "w", encoding="utf-8") as f:
                f.writelines(lines)
        else:
            sys.stdout.writelines(lines)
            sys.stdout.flush()
    except ceql.CeqlInputError as exc:
        say(f"ceql: error: {args.input}: {exc}")
        return EXIT_FAILURE
    except _Failed as exc:
        say(f"ceql: error: {exc}")
        return EXIT_FAILURE
    if not args.quiet:
        say(summary_line(len(events), len(lines), time.perf_counter() - started))
    return EXIT_OK
