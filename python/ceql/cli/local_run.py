"""``ceql run --engine local``: the pure-Python engine over the input, batch by batch (or
over the whole input sorted by time first, with ``--sort``)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import ceql
from ceql.runtime import unseen_names_message

from .errors import EXIT_OK, CliError
from .progress import Progress, say, summary_line
from .query import check_streams, cli_words, compile_query, unit_warning
from .readers import BATCH_ROWS, Events, check_columns, open_events
from .sinks import Row, Sink, open_sink, variables_in_order

__all__ = ["run_local"]

_CHUNK = 4096  # matches handed to the output at a time


class _Counts:
    """Running totals of one ``ceql run``."""

    def __init__(self) -> None:
        self.events = 0
        self.matches = 0


def run_local(args: argparse.Namespace, text: str, source: str, fmt_in: str,
              compression: str | None, fmt_out: str) -> int:
    """Evaluate the query ``text`` (read from ``source``) over ``args.input``; write matches."""
    if args.input != "-" and not os.path.exists(args.input):
        raise CliError(f"cannot read {args.input}: No such file or directory")
    started = time.perf_counter()
    events = open_events(args.input, fmt_in, compression)
    try:
        check_columns(events, args)
        # compile again knowing the columns: names and types in FILTER are checked now
        query = compile_query(text, source, schema=events.schema, max_states=args.max_states)
        check_streams(query, events.schema.names, events.name, args.stream_col)
        sink = open_sink(args, fmt_out, query.partition_by, events.schema)
        progress = Progress(not args.quiet and (args.progress or sys.stderr.isatty()))
        counts = _Counts()
        try:
            if args.sort:
                ev = _evaluate_sorted(query, events, args, sink, progress, counts)
            else:
                ev = _evaluate(query, events, args, sink, progress, counts)
            sink.finish()
        except BaseException:
            progress.clear()
            sink.abort()
            raise
        progress.clear()
    finally:
        events.close()
    if not args.quiet:
        unseen = unseen_names_message(ev.unseen(), ev.seen(), ev.events_seen)
        if unseen is not None:
            say(f"ceql: warning: {unseen}")
        say(summary_line(counts.events, counts.matches, time.perf_counter() - started))
    return EXIT_OK


def _evaluator(query: ceql.Query, args: argparse.Namespace) -> ceql.Evaluator:
    return query.evaluator(time=args.time, type_key=args.type_col, stream_key=args.stream_col,
                           time_unit=args.time_unit, time_format=args.time_format,
                           keep_events=args.fields)


def _fields(m: ceql.Match, rows: Sequence[int] | None = None) -> dict[str, Any]:
    """``--fields``: the match's times and events (``rows``: their input rows, when the
    events were evaluated in another order; the events are then put in input order)."""
    d = m.to_dict(fields=True)
    out: dict[str, Any] = {k: d[k] for k in ("start_time", "end_time") if k in d}
    events = d["events"]
    if rows is not None:
        events = [e for _, e in sorted(zip(rows, events, strict=True), key=lambda re: re[0])]
    out["events"] = events
    return out


def _drain(matches: Iterator[ceql.Match], convert: Callable[[ceql.Match], Row], sink: Sink,
           name: str, counts: _Counts, tick: Callable[[], None]) -> None:
    """Write the matches of one batch as they are enumerated, a chunk at a time."""
    chunk: list[Row] = []
    try:
        for m in matches:
            chunk.append(convert(m))
            if len(chunk) >= _CHUNK:
                sink.write(chunk)
                counts.matches += len(chunk)
                chunk = []
                tick()
    except ceql.CeqlError as exc:
        raise CliError(f"{name}: {_input_message(exc)}") from None
    sink.write(chunk)
    counts.matches += len(chunk)


def _input_message(exc: ceql.CeqlError) -> str:
    return cli_words(str(exc))


def _evaluate(query: ceql.Query, events: Events, args: argparse.Namespace, sink: Sink,
              progress: Progress, counts: _Counts) -> ceql.Evaluator:
    ev = _evaluator(query, args)

    def convert(m: ceql.Match) -> Row:
        return Row(m.start_position, m.end_position, m.positions, m.partition,
                   variables_in_order(query.variables, m.variables) if args.variables else {},
                   _fields(m) if args.fields else None)

    def tick() -> None:
        progress.update(counts.events, counts.matches, events.done())

    first = True
    for batch in events:
        if first and not args.quiet:
            unit_warning(query, args, batch)
        first = False
        _drain(ev.iter_feed(batch), convert, sink, events.name, counts, tick)
        counts.events += batch.num_rows
        tick()
    # end of file: matches that waited for time to pass (a trailing NOT) are final
    _drain(iter(ev.close()), convert, sink, events.name, counts, tick)
    return ev


def _sort_keys(column: pa.ChunkedArray, args: argparse.Namespace, name: str) -> pa.Array:
    """The times to sort by: the column, or its text read with ``--time-format``."""
    column = column.combine_chunks()
    if args.time_format is None or not (pa.types.is_string(column.type)
                                        or pa.types.is_large_string(column.type)):
        return column
    try:
        keys = pc.strptime(column, format=args.time_format, unit="us", error_is_null=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise CliError(f"cannot read times with --time-format {args.time_format!r}: {exc}"
                       ) from None
    bad = pc.and_(pc.is_null(keys), pc.is_valid(column))
    if pc.any(bad).as_py():
        i = pc.index(bad, True).as_py()
        raise CliError(f"{name}: Event {i} has time {column[i].as_py()!r} in column "
                       f"{args.time!r}, which does not match --time-format "
                       f"{args.time_format!r}.")
    return keys


def _evaluate_sorted(query: ceql.Query, events: Events, args: argparse.Namespace, sink: Sink,
                     progress: Progress, counts: _Counts) -> ceql.Evaluator:
    table = pa.Table.from_batches(list(events), schema=events.schema)
    column = table.column(args.time)
    if column.null_count:
        bad = pc.index(pc.is_null(column), True).as_py()
        raise CliError(f"{events.name}: Event {bad} has no usable time: column {args.time!r} "
                       "is NULL there; every event needs a number or a timestamp.")
    keys = _sort_keys(column, args, events.name)
    order = pc.sort_indices(pa.table({"t": keys}), sort_keys=[("t", "ascending")]).to_numpy()
    if not args.quiet and table.num_rows:
        unit_warning(query, args, table.slice(0, 1))
    ev = _evaluator(query, args)

    def convert(m: ceql.Match) -> Row:
        # positions count sorted rows: map them back to input rows
        variables = (variables_in_order(query.variables, {
            v: tuple(sorted(order[list(ps)].tolist())) for v, ps in m.variables.items()})
                     if args.variables else {})
        rows = order[list(m.positions)].tolist()
        return Row(int(order[m.start_position]), int(order[m.end_position]),
                   tuple(sorted(rows)), m.partition, variables,
                   _fields(m, rows) if args.fields else None)

    n = table.num_rows

    def tick() -> None:
        progress.update(counts.events, counts.matches, counts.events / n)

    for lo in range(0, n, BATCH_ROWS):
        chunk = table.take(pa.array(order[lo:lo + BATCH_ROWS]))
        _drain(ev.iter_feed(chunk), convert, sink, events.name, counts, tick)
        counts.events += chunk.num_rows
        tick()
    _drain(iter(ev.close()), convert, sink, events.name, counts, tick)
    return ev
