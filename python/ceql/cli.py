"""The ``ceql`` command line.

``ceql run QUERY_FILE --input EVENTS`` evaluates a CEQL query over a CSV, Parquet or JSON-lines
file, batch by batch, and writes one JSON line (or CSV/Parquet row) per match;
``ceql explain QUERY_FILE`` describes the automaton the query compiles to.

Exit status: 0 done; 1 the input or output cannot be used (missing file, unknown column, events
out of time order, …); 2 a bad query or bad arguments; 130 interrupted; 141 output pipe closed.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any, NamedTuple, Protocol, TextIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

import ceql

__all__ = ["main"]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141

_INPUT_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl",
                  ".ndjson": "jsonl", ".json": "jsonl"}
_OUTPUT_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet",
                   ".pq": "parquet"}
_COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd", ".lz4": "lz4"}
_BLOCK_BYTES = 1 << 20  # CSV / JSON read block (types are inferred from the first one)
_BATCH_ROWS = 65_536  # Parquet read batch, and rows buffered per Parquet write
_FIXED_COLUMNS = ("start", "end", "positions", "variables")


# ---------------------------------------------------------------------------- errors

class CliError(Exception):
    """A failure reported as one ``ceql: error: …`` line, ending the command with ``status``."""

    def __init__(self, message: str, status: int = EXIT_FAILURE) -> None:
        super().__init__(" ".join(message.split()))
        self.status = status


class QueryError(Exception):
    """A query that does not compile: reported in full (caret snippet included), exit 2."""

    def __init__(self, source: str, error: ceql.CeqlError) -> None:
        super().__init__(f"{source}: {error}")


# ---------------------------------------------------------------------------- arguments

def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text}")
    return value


_RUN_DESCRIPTION = """\
Evaluate a CEQL query over the events of a file, in input order, and write every
match: JSON lines on standard output, or --output FILE. A progress bar (on a
terminal) and a summary line go to standard error."""

_RUN_EPILOG = """\
output:
  one JSON line per match, e.g. {"start": 408, "end": 415, "positions": [408, 413, 415]}:
  0-based input rows of the interval's ends and of the match's events; "partition"
  holds the PARTITION BY key, "variables" (--variables) the rows of each variable.
  CSV and Parquet: columns start, end, positions (';'-joined in CSV), one per
  PARTITION BY attribute, and variables.

examples:
  ceql run examples/queries/p3.ceql --input examples/stock.csv --time ts --time-unit us
  ceql run q.ceql -i events.parquet -t ts -o matches.parquet --engine spark"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``ceql`` and its subcommands."""
    parser = argparse.ArgumentParser(
        prog="ceql",
        description="Complex event recognition with CEQL queries (CORE's algorithm).",
        epilog="exit status: 0 done, 1 unusable input or output, 2 bad query or arguments, "
               "130 interrupted",
    )
    parser.add_argument("--version", action="version", version=f"ceql {ceql.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = sub.add_parser(
        "run", help="evaluate a query over an event file",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=_RUN_DESCRIPTION, epilog=_RUN_EPILOG,
    )
    run.add_argument("query", metavar="QUERY_FILE", help="CEQL query file ('-': standard input)")
    run.add_argument("-i", "--input", required=True, metavar="EVENTS",
                     help="events: .csv, .parquet or .jsonl (.csv and .jsonl may end in .gz, "
                          ".bz2, .zst or .lz4); '-' reads standard input (give --input-format)")
    run.add_argument("--input-format", choices=("csv", "parquet", "jsonl"),
                     help="read EVENTS in this format, whatever its name")
    run.add_argument("-t", "--time", metavar="COL",
                     help="column with each event's time: numbers (see --time-unit) or "
                          "timestamps; without it an event's position is its time")
    run.add_argument("--time-unit", choices=("s", "ms", "us", "ns"), default="s",
                     help="unit of a numeric --time column (default: s)")
    run.add_argument("--type-col", default="type", metavar="COL",
                     help="column with the event type (default: type)")
    run.add_argument("--stream-col", default="stream", metavar="COL",
                     help="column naming each event's stream, checked against FROM "
                          "(default: stream; events without one belong to every stream)")
    run.add_argument("--sort", action="store_true",
                     help="sort the events by --time first instead of refusing events out of "
                          "order (reads the whole input into memory; positions still count "
                          "input rows)")
    run.add_argument("-e", "--engine", choices=("local", "spark"), default="local",
                     help="local: the pure-Python engine, no JVM (default); spark: an embedded "
                          "local Spark session and its MATCH_CEQL table function")
    run.add_argument("-o", "--output", metavar="FILE",
                     help="write the matches to FILE (.jsonl, .csv or .parquet) instead of "
                          "standard output; FILE appears only once the run succeeds")
    run.add_argument("--output-format", choices=("jsonl", "csv", "parquet"),
                     help="write in this format, whatever the name of FILE (standard output: "
                          "jsonl or csv)")
    run.add_argument("--variables", action="store_true",
                     help="also write, for each match, the positions each variable binds")
    run.add_argument("--max-states", type=_positive_int, default=ceql.DEFAULT_MAX_STATES,
                     metavar="N", help="cap on determinized automaton states (default: "
                                       f"{ceql.DEFAULT_MAX_STATES:,})")
    noise = run.add_mutually_exclusive_group()
    noise.add_argument("-q", "--quiet", action="store_true",
                       help="print no progress bar, summary line or warning")
    noise.add_argument("--progress", action="store_true",
                       help="draw the progress bar even when standard error is not a terminal")

    explain = sub.add_parser(
        "explain", help="describe a query's automaton",
        description="Print the query as ceql reads it, its predicates and its automaton.",
    )
    explain.add_argument("query", metavar="QUERY_FILE", help="CEQL query file ('-': standard "
                                                             "input)")
    explain.add_argument("--dot", action="store_true",
                         help="print the automaton as Graphviz DOT instead")
    return parser


# ---------------------------------------------------------------------------- entry point

def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ceql`` command line; return its exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "explain":
            return _explain(args)
        return _run(args, parser)
    except QueryError as exc:
        _say(f"ceql: error: {exc}")
        return EXIT_USAGE
    except CliError as exc:
        _say(f"ceql: error: {exc}")
        return exc.status
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader of standard output went away (e.g. `| head`): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _say(line: str, stream: TextIO | None = None) -> None:
    print(line, file=stream if stream is not None else sys.stderr, flush=True)


def _read_query(path: str) -> tuple[str, str]:
    """The query text and the name to report it by."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(), path
    except UnicodeDecodeError as exc:
        raise CliError(f"query file {path} is not UTF-8 text ({exc.reason} at byte "
                       f"{exc.start})") from None
    except OSError as exc:
        raise CliError(f"cannot read query file {path}: {exc.strerror or exc}") from None


def _compile(text: str, source: str, *, schema: Any = None,
             max_states: int = ceql.DEFAULT_MAX_STATES) -> ceql.Query:
    try:
        return ceql.compile(text, schema=schema, max_states=max_states)
    except ceql.CeqlError as exc:
        raise QueryError(source, exc) from None


def _explain(args: argparse.Namespace) -> int:
    text, source = _read_query(args.query)
    _compile(text, source)
    sys.stdout.write(ceql.explain(text, dot=args.dot).rstrip("\n") + "\n")
    sys.stdout.flush()
    return EXIT_OK


# ---------------------------------------------------------------------------- input

class Events:
    """An opened event file: its schema, its record batches and how far reading has got."""

    def __init__(self, name: str, schema: pa.Schema, batches: Iterator[pa.RecordBatch],
                 done: Callable[[], float | None], close: Callable[[], None]) -> None:
        self.name = name
        self.schema = schema
        self._batches = batches
        self.done = done
        self.close = close

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        """The batches; read errors become :class:`CliError`."""
        while True:
            try:
                batch = next(self._batches)
            except StopIteration:
                return
            except (pa.ArrowException, OSError) as exc:
                raise CliError(f"cannot read {self.name}: {_arrow_message(exc)}") from None
            yield batch


def _arrow_message(exc: BaseException) -> str:
    msg = str(exc)
    if "conversion error" in msg or "changed" in msg or "unexpected field" in msg.lower():
        msg += (" (column types are inferred from the first MiB of the file; a column whose "
                "values change kind later cannot be read)")
    return msg


def input_format(path: str, given: str | None) -> tuple[str, str | None]:
    """``(format, compression)`` of an input file, from ``given`` or the file name."""
    base, ext = os.path.splitext(path.lower())
    compression = _COMPRESSIONS.get(ext)
    if compression is not None:
        ext = os.path.splitext(base)[1]
    fmt = given or _INPUT_FORMATS.get(ext)
    if fmt is None:
        what = "standard input" if path == "-" else repr(path)
        raise CliError(f"cannot tell the format of {what}: name it .csv, .parquet or .jsonl, "
                       "or give --input-format", EXIT_USAGE)
    if fmt == "parquet" and (compression is not None or path == "-"):
        raise CliError("Parquet input must be a plain file (it is compressed inside)",
                       EXIT_USAGE)
    return fmt, compression


def open_events(path: str, fmt: str, compression: str | None) -> Events:
    """Open ``path`` for reading in batches (streamed: memory stays bounded)."""
    name = "<stdin>" if path == "-" else path
    try:
        if fmt == "parquet":
            return _open_parquet(path)
        return _open_text(path, name, fmt, compression)
    except (pa.ArrowException, OSError) as exc:
        if isinstance(exc, OSError) and exc.strerror:
            raise CliError(f"cannot read {name}: {exc.strerror}") from None
        raise CliError(f"cannot read {name}: {_arrow_message(exc)}") from None


def _open_parquet(path: str) -> Events:
    pf = pq.ParquetFile(path)
    total = pf.metadata.num_rows
    read = 0

    def batches() -> Iterator[pa.RecordBatch]:
        nonlocal read
        for batch in pf.iter_batches(batch_size=_BATCH_ROWS):
            read += batch.num_rows
            yield batch

    return Events(path, pf.schema_arrow, batches(), lambda: read / total if total else None,
                  pf.close)


def _open_text(path: str, name: str, fmt: str, compression: str | None) -> Events:
    # standard input unbuffered: a read returns what the pipe holds instead of waiting for a
    # full block, so batches come as soon as the data for them has arrived
    raw: IO[bytes] = (open(sys.stdin.fileno(), "rb", buffering=0, closefd=False)
                      if path == "-" else open(path, "rb"))
    try:
        st = os.fstat(raw.fileno())
        size = st.st_size if path != "-" and st.st_size > 0 else None
        stream: Any = pa.CompressedInputStream(raw, compression) if compression else raw
        reader: Any
        if fmt == "csv":
            reader = pacsv.open_csv(stream, read_options=pacsv.ReadOptions(
                block_size=_BLOCK_BYTES))
        elif hasattr(pajson, "open_json"):
            reader = pajson.open_json(stream, read_options=pajson.ReadOptions(
                block_size=_BLOCK_BYTES))
        else:  # pyarrow < 19 has no streaming JSON reader
            reader = pajson.read_json(stream).to_reader(max_chunksize=_BATCH_ROWS)
    except BaseException:
        raw.close()
        raise

    blocks = 0

    def batches() -> Iterator[pa.RecordBatch]:
        nonlocal blocks
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                return
            blocks += 1
            yield batch

    def done() -> float | None:
        # the readers read ahead, so the file offset says little; each batch is one block
        if size is None or compression is not None:
            return None
        return min(1.0, blocks * _BLOCK_BYTES / size)

    def close() -> None:
        raw.close()

    return Events(name, reader.schema, batches(), done, close)


def check_columns(events: Events, args: argparse.Namespace) -> None:
    """Refuse a ``--time`` or ``--type-col`` column that the input does not have."""
    names = events.schema.names
    listed = ", ".join(names) if names else "none"
    if args.type_col not in names:
        how = "the event type (--type-col)"
        raise CliError(f"{events.name} has no column {args.type_col!r} for {how}; its columns "
                       f"are {listed}")
    if args.time is not None and args.time not in names:
        raise CliError(f"{events.name} has no column {args.time!r} for --time; its columns are "
                       f"{listed}")


# ---------------------------------------------------------------------------- output

class Row(NamedTuple):
    """One match as written out: interval, positions, partition key and variables."""

    start: int
    end: int
    positions: tuple[int, ...]
    partition: tuple[Any, ...]
    variables: dict[str, tuple[int, ...]]


def _ordered(variables: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """Variables in the order a match reads: by their first event, then by name."""
    return dict(sorted(variables.items(), key=lambda kv: (kv[1][:1], kv[0])))


class Sink(Protocol):
    """Where matches go."""

    def write(self, rows: Sequence[Row]) -> None:
        """Write some matches."""

    def finish(self) -> None:
        """Complete the output (a file appears under its name only now)."""

    def abort(self) -> None:
        """Give up: leave no partial file behind."""


def _json_default(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


class JsonLinesSink:
    """One JSON object per line: ``{"start", "end", "positions"[, "partition"][, "variables"]}``
    (the first keys as :meth:`ceql.Match.to_dict` gives them)."""

    def __init__(self, out: TextIO, variables: bool, target: _Target | None = None) -> None:
        self._out = out
        self._variables = variables
        self._target = target

    def write(self, rows: Sequence[Row]) -> None:
        """Write one line per match."""
        if not rows:
            return
        lines = []
        for r in rows:
            # what json.dumps writes, without its cost per match for the integer fields
            line = (f'{{"start": {r.start}, "end": {r.end}, '
                    f'"positions": [{", ".join(map(str, r.positions))}]')
            if r.partition:
                line += ', "partition": ' + json.dumps(list(r.partition), default=_json_default)
            if self._variables:
                line += ', "variables": ' + json.dumps(
                    {k: list(v) for k, v in r.variables.items()})
            lines.append(line + "}")
        self._out.write("\n".join(lines) + "\n")
        if self._target is None:
            self._out.flush()  # standard output: let a reader downstream see matches now

    def finish(self) -> None:
        """Flush, and move the file into place."""
        self._out.flush()
        if self._target is not None:
            self._out.close()
            self._target.commit()

    def abort(self) -> None:
        """Drop a partial file."""
        if self._target is not None:
            self._out.close()
            self._target.discard()


def _column_names(partition: Sequence[str]) -> list[str]:
    return [f"partition.{a}" if a in _FIXED_COLUMNS else a for a in partition]


class CsvSink:
    """CSV with a header: ``start,end,positions`` (``;``-joined), one column per PARTITION BY
    attribute, and ``variables`` (a JSON object) when asked for."""

    def __init__(self, out: TextIO, partition: Sequence[str], variables: bool,
                 target: _Target | None = None) -> None:
        self._out = out
        self._writer = csv.writer(out, lineterminator="\n")
        self._variables = variables
        self._target = target
        header = ["start", "end", "positions", *_column_names(partition)]
        self._writer.writerow([*header, "variables"] if variables else header)

    def write(self, rows: Sequence[Row]) -> None:
        """Write one CSV row per match."""
        for r in rows:
            cells: list[Any] = [r.start, r.end, ";".join(map(str, r.positions)),
                                *("" if v is None else v for v in r.partition)]
            if self._variables:
                cells.append(json.dumps({k: list(v) for k, v in r.variables.items()}))
            self._writer.writerow(cells)
        if self._target is None and rows:
            self._out.flush()

    def finish(self) -> None:
        """Flush, and move the file into place."""
        self._out.flush()
        if self._target is not None:
            self._out.close()
            self._target.commit()

    def abort(self) -> None:
        """Drop a partial file."""
        if self._target is not None:
            self._out.close()
            self._target.discard()


class ParquetSink:
    """Parquet: ``start``, ``end`` (int64), ``positions`` (list<int64>), one column per
    PARTITION BY attribute (the input's type), ``variables`` (map<string, list<int64>>) when
    asked for."""

    def __init__(self, target: _Target, partition: Sequence[str], input_schema: pa.Schema,
                 variables: bool) -> None:
        fields = [pa.field("start", pa.int64()), pa.field("end", pa.int64()),
                  pa.field("positions", pa.list_(pa.int64()))]
        for attr, col in zip(partition, _column_names(partition), strict=True):
            i = input_schema.get_field_index(attr)
            fields.append(pa.field(col, input_schema.field(i).type if i >= 0 else pa.string()))
        if variables:
            fields.append(pa.field("variables", pa.map_(pa.string(), pa.list_(pa.int64()))))
        self._schema = pa.schema(fields)
        self._variables = variables
        self._target = target
        self._writer = pq.ParquetWriter(target.temp, self._schema)
        self._buffer: list[Row] = []

    def write(self, rows: Sequence[Row]) -> None:
        """Buffer the matches; write a row group now and then."""
        self._buffer.extend(rows)
        if len(self._buffer) >= _BATCH_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self._buffer:
            return
        rows, self._buffer = self._buffer, []
        cols: list[list[Any]] = [[r.start for r in rows], [r.end for r in rows],
                                 [list(r.positions) for r in rows]]
        nparts = len(self._schema) - 3 - (1 if self._variables else 0)
        for k in range(nparts):
            cols.append([r.partition[k] for r in rows])
        if self._variables:
            cols.append([[(v, list(ps)) for v, ps in r.variables.items()] for r in rows])
        self._writer.write_table(pa.Table.from_arrays(
            [pa.array(c, type=f.type) for c, f in zip(cols, self._schema, strict=True)],
            schema=self._schema))

    def finish(self) -> None:
        """Write what is buffered, close, and move the file into place."""
        self._flush()
        self._writer.close()
        self._target.commit()

    def abort(self) -> None:
        """Drop a partial file."""
        self._writer.close()
        self._target.discard()


class _Target:
    """An output file written under a temporary name and renamed when complete."""

    def __init__(self, path: str) -> None:
        self.path = path
        folder, base = os.path.split(os.path.abspath(path))
        self.temp = os.path.join(folder, f".{base}.{os.getpid()}.part")
        try:
            open(self.temp, "wb").close()
        except OSError as exc:
            raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None

    def commit(self) -> None:
        try:
            os.replace(self.temp, self.path)
        except OSError as exc:
            self.discard()
            raise CliError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def discard(self) -> None:
        try:
            os.remove(self.temp)
        except OSError:
            pass


def output_format(args: argparse.Namespace) -> str:
    """The output format: ``--output-format``, else the ``--output`` file's extension."""
    if args.output_format:
        fmt: str = args.output_format
    elif args.output in (None, "-"):
        fmt = "jsonl"
    else:
        ext = os.path.splitext(args.output.lower())[1]
        if ext not in _OUTPUT_FORMATS:
            raise CliError(f"cannot tell the output format of {args.output!r}: name it .jsonl, "
                           ".csv or .parquet, or give --output-format", EXIT_USAGE)
        fmt = _OUTPUT_FORMATS[ext]
    if fmt == "parquet" and args.output in (None, "-"):
        raise CliError("Parquet output needs a file: give --output FILE.parquet", EXIT_USAGE)
    return fmt


def open_sink(args: argparse.Namespace, fmt: str, partition: Sequence[str],
              input_schema: pa.Schema, target: _Target | None = None) -> Sink:
    """Create the output (a file under a temporary name, unless ``target`` made it already)."""
    if args.output in (None, "-"):
        if fmt == "csv":
            return CsvSink(sys.stdout, partition, args.variables)
        return JsonLinesSink(sys.stdout, args.variables)
    if target is None:
        target = _Target(args.output)
    try:
        if fmt == "parquet":
            return ParquetSink(target, partition, input_schema, args.variables)
        out = open(target.temp, "w", encoding="utf-8", newline="")
        if fmt == "csv":
            return CsvSink(out, partition, args.variables, target)
        return JsonLinesSink(out, args.variables, target)
    except BaseException:
        target.discard()
        raise


# ---------------------------------------------------------------------------- progress

class Progress:
    """A one-line progress bar on standard error, redrawn at most ten times a second."""

    def __init__(self, enabled: bool, stream: TextIO | None = None) -> None:
        self.enabled = enabled
        self._stream = stream if stream is not None else sys.stderr
        self._start = time.perf_counter()
        self._last = 0.0
        self._drawn = False

    def update(self, events: int, matches: int, fraction: float | None) -> None:
        """Redraw, unless the last redraw was less than 0.1 s ago."""
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last < 0.1:
            return
        self._last = now
        width = max(20, shutil.get_terminal_size((80, 24)).columns - 1)
        counts = (f"{events:,} events, {_plural(matches, 'match', 'matches')}, "
                  f"{now - self._start:.1f} s")
        if fraction is not None:
            bar_width = max(10, min(40, width - len(counts) - 14))
            filled = round(bar_width * fraction)
            line = (f"ceql [{'#' * filled}{'-' * (bar_width - filled)}] "
                    f"{fraction * 100:3.0f}%  {counts}")
        else:
            line = f"ceql  {counts}"
        self._stream.write("\r" + line[:width] + "\x1b[K")
        self._stream.flush()
        self._drawn = True

    def note(self, text: str) -> None:
        """Show what is going on when there is nothing to count yet."""
        if self.enabled:
            elapsed = time.perf_counter() - self._start
            self._stream.write(f"\rceql  {text}... {elapsed:.1f} s\x1b[K")
            self._stream.flush()
            self._drawn = True

    def clear(self) -> None:
        """Erase the bar (before the summary line, or when stopping)."""
        if self._drawn:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._drawn = False


def _plural(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def summary_line(events: int, matches: int, seconds: float) -> str:
    """``ceql: 1,000,000 events read, 1,074 matches in 0.41 s (2.4 M events/s)``."""
    rate = events / seconds if seconds > 0 else 0.0
    if rate >= 1e6:
        speed = f"{rate / 1e6:.1f} M events/s"
    elif rate >= 1e3:
        speed = f"{rate / 1e3:.1f} k events/s"
    else:
        speed = f"{rate:.0f} events/s"
    return (f"ceql: {_plural(events, 'event', 'events')} read, "
            f"{_plural(matches, 'match', 'matches')} in {seconds:.2f} s ({speed})")


# ---------------------------------------------------------------------------- run

class _Counts:
    """Running totals of one ``ceql run``."""

    def __init__(self) -> None:
        self.events = 0
        self.matches = 0


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.query == "-" and args.input == "-":
        parser.error("the query and the events cannot both come from standard input")
    if args.sort and args.time is None:
        parser.error("--sort needs --time")
    fmt_in, compression = input_format(args.input, args.input_format)
    fmt_out = output_format(args)
    text, source = _read_query(args.query)
    query = _compile(text, source, max_states=args.max_states)
    if args.engine == "spark":
        return _run_spark(args, text, source, fmt_in, fmt_out)
    if args.input != "-" and not os.path.exists(args.input):
        raise CliError(f"cannot read {args.input}: No such file or directory")
    started = time.perf_counter()
    events = open_events(args.input, fmt_in, compression)
    try:
        check_columns(events, args)
        # compile again knowing the columns: names and types in FILTER are checked now
        query = _compile(text, source, schema=events.schema, max_states=args.max_states)
        sink = open_sink(args, fmt_out, query.partition_by, events.schema)
        if not args.quiet:
            _time_warnings(query, args)
        progress = Progress(not args.quiet and (args.progress or sys.stderr.isatty()))
        counts = _Counts()
        try:
            if args.sort:
                _evaluate_sorted(query, events, args, sink, progress, counts)
            else:
                _evaluate(query, events, args, sink, progress, counts)
            sink.finish()
        except BaseException:
            progress.clear()
            sink.abort()
            raise
        progress.clear()
    finally:
        events.close()
    if not args.quiet:
        _say(summary_line(counts.events, counts.matches, time.perf_counter() - started))
    return EXIT_OK


def _evaluator(query: ceql.Query, args: argparse.Namespace) -> ceql.Evaluator:
    return query.evaluator(time=args.time, type_key=args.type_col, stream_key=args.stream_col,
                           time_unit=args.time_unit)


_CHUNK = 4096  # matches handed to the output at a time


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
    return str(exc).replace("Query.run(..., sort=True) does it", "ceql run --sort does it")


def _evaluate(query: ceql.Query, events: Events, args: argparse.Namespace, sink: Sink,
              progress: Progress, counts: _Counts) -> None:
    ev = _evaluator(query, args)

    def convert(m: ceql.Match) -> Row:
        return Row(m.start_position, m.end_position, m.positions, m.partition,
                   _ordered(m.variables) if args.variables else {})

    def tick() -> None:
        progress.update(counts.events, counts.matches, events.done())

    first = True
    for batch in events:
        if first and not args.quiet:
            _unit_warning(query, args, batch)
        first = False
        _drain(ev.iter_feed(batch), convert, sink, events.name, counts, tick)
        counts.events += batch.num_rows
        tick()


def _evaluate_sorted(query: ceql.Query, events: Events, args: argparse.Namespace, sink: Sink,
                     progress: Progress, counts: _Counts) -> None:
    table = pa.Table.from_batches(list(events), schema=events.schema)
    column = table.column(args.time)
    if column.null_count:
        bad = pc.index(pc.is_null(column), True).as_py()
        raise CliError(f"{events.name}: Event {bad} has no usable time: column {args.time!r} "
                       "is empty there; every event needs a number or a timestamp.")
    order = pc.sort_indices(table, sort_keys=[(args.time, "ascending")]).to_numpy()
    if not args.quiet and table.num_rows:
        _unit_warning(query, args, table.slice(0, 1))
    ev = _evaluator(query, args)

    def convert(m: ceql.Match) -> Row:
        # positions count sorted rows: map them back to input rows
        variables = (_ordered({v: tuple(sorted(order[list(ps)].tolist()))
                               for v, ps in m.variables.items()}) if args.variables else {})
        return Row(int(order[m.start_position]), int(order[m.end_position]),
                   tuple(sorted(order[list(m.positions)].tolist())), m.partition, variables)

    n = table.num_rows

    def tick() -> None:
        progress.update(counts.events, counts.matches, counts.events / n)

    for lo in range(0, n, _BATCH_ROWS):
        chunk = table.take(pa.array(order[lo:lo + _BATCH_ROWS]))
        _drain(ev.iter_feed(chunk), convert, sink, events.name, counts, tick)
        counts.events += chunk.num_rows
        tick()


def _time_warnings(query: ceql.Query, args: argparse.Namespace,
                   err: TextIO | None = None) -> None:
    within = query.ast.within
    if within is not None and within.kind == "time" and args.time is None:
        _say("ceql: warning: the query has a time window but no --time column was given, "
             "so each event's position counts as its time in seconds", err)


def _unit_warning(query: ceql.Query, args: argparse.Namespace, batch: Any,
                  err: TextIO | None = None) -> None:
    """Warn when numeric times look like epoch milli/micro/nanoseconds but are read as s."""
    within = query.ast.within
    if (args.time is None or args.time_unit != "s" or within is None or within.kind != "time"
            or batch.num_rows == 0):
        return
    col = batch.column(batch.schema.get_field_index(args.time))
    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
        return
    first = col[0].as_py()
    if not isinstance(first, int | float):
        return
    for unit, name, threshold in (("ns", "nanoseconds", 1e17), ("us", "microseconds", 1e14),
                                  ("ms", "milliseconds", 1e11)):
        if abs(first) >= threshold:
            _say(f"ceql: warning: column {args.time!r} starts at {first}, which looks like "
                 f"{name} since 1970, but --time-unit is s (the default): did you mean "
                 f"--time-unit {unit}?", err)
            return



# ---------------------------------------------------------------------------- Spark engine

_SPARK_READERS = {"csv": "csv", "parquet": "parquet", "jsonl": "json"}


class _SparkLog:
    """Send the JVM's and Spark's own output on standard error to a log file while Spark runs.

    Spark's JVM inherits file descriptor 2 when it starts; ceql's own lines (progress,
    summary, errors) keep going to the original standard error through :attr:`stderr`.
    """

    def __init__(self) -> None:
        import tempfile

        fd, self.path = tempfile.mkstemp(prefix="ceql-spark-", suffix=".log")
        sys.stderr.flush()
        self._saved = os.dup(2)
        os.dup2(fd, 2)
        os.close(fd)
        self.stderr: TextIO = os.fdopen(os.dup(self._saved), "w", encoding="utf-8",
                                        errors="replace")

    def restore(self, keep: bool) -> None:
        """Give standard error back; delete the log unless ``keep``."""
        sys.stderr.flush()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self.stderr.flush()
        if not keep:
            try:
                os.remove(self.path)
            except OSError:
                pass


def _spark_message(exc: BaseException) -> str:
    """The line of a Spark error that says what is wrong (not the JVM or Python trace)."""
    text = str(exc)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for marker in ("MatchCeqlError:", "CeqlInputError:", "CeqlError:", "MATCH_CEQL"):
        found = [ln for ln in lines if marker in ln]
        if found:
            line = found[-1]
            return line.split(marker, 1)[1].strip() if marker.endswith(":") else line
    return lines[0] if lines else type(exc).__name__


def _fresh_name(base: str, taken: Sequence[str]) -> str:
    names = {n.lower() for n in taken}
    name, k = base, 0
    while name.lower() in names:
        k += 1
        name = f"{base}_{k}"
    return name


class _SparkFailure(CliError):
    """An error Spark reported: its log is kept and named in the message."""


def _run_spark(args: argparse.Namespace, text: str, source: str, fmt_in: str,
               fmt_out: str) -> int:
    """``ceql run --engine spark``: the same matches through a local Spark session.

    The file is read by Spark, each row numbered in file order (its position); the query runs
    through SQL, ``MATCH_CEQL(TABLE(events) ORDER BY (time, position), query => …)``, and the
    positions come back from the matched rows. Matches are collected on the driver.
    """
    if args.input == "-":
        raise CliError("--engine spark reads a file, not standard input", EXIT_USAGE)
    if args.stream_col != "stream":
        raise CliError("--engine spark reads streams from a column named 'stream'; "
                       "--stream-col cannot change that", EXIT_USAGE)
    if _input_compression(args.input) not in (None, "gzip", "bz2"):
        raise CliError("--engine spark reads .gz and .bz2 files, not other compressions",
                       EXIT_USAGE)
    if not os.path.exists(args.input):
        raise CliError(f"cannot read {args.input}: No such file or directory")
    try:
        import ceql.spark as cspark
    except ImportError as exc:
        raise CliError(f"the Spark engine needs pyspark ({exc}): pip install 'ceql[spark]'"
                       ) from None
    target = _Target(args.output) if args.output not in (None, "-") else None
    log = _SparkLog()
    keep_log = False
    try:
        progress = Progress(not args.quiet and (args.progress or sys.stderr.isatty()),
                            log.stderr)
        progress.note("starting Spark")
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # listen on this machine only
        try:
            spark = cspark.local_session(**{"spark.log.level": "ERROR"})
        except ceql.CeqlError as exc:  # e.g. the shim jar is missing
            raise CliError(str(exc)) from None
        except Exception as exc:
            raise _SparkFailure(f"cannot start Spark: {_spark_message(exc)}") from None
        try:
            started = time.perf_counter()
            rows, events, schema = _spark_matches(spark, args, text, source, fmt_in,
                                                  progress, log.stderr)
        finally:
            spark.stop()
        query = _compile(text, source, max_states=args.max_states)
        sink = open_sink(args, fmt_out, query.partition_by, schema, target)
        target = None  # the sink owns it now
        try:
            sink.write(rows)
            sink.finish()
        except BaseException:
            sink.abort()
            raise
        progress.clear()
        if not args.quiet:
            print(summary_line(events, len(rows), time.perf_counter() - started),
                  file=log.stderr, flush=True)
    except _SparkFailure as exc:
        keep_log = True
        raise CliError(f"{exc} (Spark's log: {log.path})") from None
    finally:
        if target is not None:
            target.discard()
        log.restore(keep=keep_log)
    return EXIT_OK


def _input_compression(path: str) -> str | None:
    return _COMPRESSIONS.get(os.path.splitext(path.lower())[1])


def _read_spark(spark: Any, path: str, fmt: str) -> Any:
    reader = spark.read.format(_SPARK_READERS[fmt])
    if fmt == "csv":
        reader = reader.option("header", True).option("inferSchema", True)
    return reader.load(path)


def _spark_matches(spark: Any, args: argparse.Namespace, text: str, source: str, fmt: str,
                   progress: Progress, err: TextIO) -> tuple[list[Row], int, pa.Schema]:
    """Run the query on Spark: the matches, the number of events and the output's schema."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    try:
        raw = _read_spark(spark, args.input, fmt)
        columns = raw.columns
    except AnalysisException as exc:
        raise _SparkFailure(f"cannot read {args.input}: {_spark_message(exc)}") from None
    listed = ", ".join(columns) if columns else "none"
    if args.type_col not in columns:
        raise CliError(f"{args.input} has no column {args.type_col!r} for the event type "
                       f"(--type-col); its columns are {listed}")
    if args.time is not None and args.time not in columns:
        raise CliError(f"{args.input} has no column {args.time!r} for --time; its columns are "
                       f"{listed}")
    query = _compile(text, source, schema=raw.schema, max_states=args.max_states)
    if not args.quiet:
        _time_warnings(query, args, err)
    pos = _fresh_name("ceql_pos", columns)
    order = _fresh_name("ceql_order", [*columns, pos])
    progress.note("numbering the events")
    numbered = (raw.withColumn(order, F.monotonically_increasing_id())
                .withColumn(pos, F.row_number().over(Window.orderBy(order)) - 1)
                .drop(order).cache())
    time_col = args.time if args.time is not None else pos
    check = numbered.select(pos, F.col(time_col).alias("t"),
                            F.lag(time_col).over(Window.orderBy(pos)).alias("prev"))
    stats = check.agg(
        F.count(F.lit(1)).alias("n"),
        F.min(F.when(F.col("t").isNull(), F.col(pos))).alias("null_at"),
        F.min(F.when(F.col("t") < F.col("prev"), F.col(pos))).alias("back_at"),
    ).collect()[0]
    events = int(stats["n"])
    if stats["null_at"] is not None:
        raise CliError(f"{args.input}: Event {stats['null_at']} has no usable time: "
                       f"attribute {time_col!r} is missing; every event needs a number or a "
                       "timestamp there.")
    if stats["back_at"] is not None and not args.sort:
        bad = int(stats["back_at"])
        pair = check.where(F.col(pos) == bad).collect()[0]
        raise CliError(f"{args.input}: Event {bad} is out of order: {time_col!r} goes back "
                       f"from {pair['prev']!r} to {pair['t']!r}. Sort the events by time first "
                       "(ceql run --sort does it), or fix the data.")
    if not args.quiet and args.time is not None:
        _unit_warning(query, args, numbered.select(args.time).limit(1).toArrow(), err)
    view = _fresh_name("ceql_events", [])
    numbered.createOrReplaceTempView(view)
    params = {"ceql_query": text, "ceql_type": args.type_col, "ceql_unit": args.time_unit}
    options = ["query => :ceql_query", "type => :ceql_type", "time_unit => :ceql_unit"]
    # a query partitioned by its own key runs one Spark task per key, except under CONSUME BY
    # ANY, which consumes across keys; ties in time keep the file's order either way
    if query.partition_by and query.ast.consume != "ANY":
        spread = f"PARTITION BY ({', '.join(map(_quote, query.partition_by))})"
    else:
        spread = "WITH SINGLE PARTITION"
    sql = (f"SELECT * FROM MATCH_CEQL(TABLE({view}) {spread} ORDER BY ({_quote(time_col)}, "
           f"{_quote(pos)}), {', '.join(options)})")
    progress.note(f"matching {events:,} events")
    try:
        result = spark.sql(sql, args=params).toArrow()
    except Exception as exc:  # Spark wraps the engine's errors in its own
        raise _SparkFailure(f"{args.input}: {_spark_message(exc)}") from None
    rows = _rows_from_spark(result, query, pos, time_col, numbered, args.variables)
    numbered.unpersist()
    return rows, events, result.schema


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _rows_from_spark(result: pa.Table, query: ceql.Query, pos: str, time_col: str,
                     numbered: Any, variables: bool) -> list[Row]:
    """Matches as :class:`Row`s, in the order the local engine gives them."""
    parts = [result.column(c).to_pylist() for c in query.partition_by]
    var_cols = {v: result.column(v).to_pylist() for v in query.variables}
    starts = result.column("match_start").to_pylist()
    ends = result.column("match_end").to_pylist()
    projected = query.ast.select is not None
    lookup = (_time_lookup(numbered, pos, time_col, query.partition_by, starts + ends)
              if projected else {})
    out: list[tuple[Any, Row]] = []
    for i in range(result.num_rows):
        bound: dict[str, tuple[int, ...]] = {}
        seen: dict[int, Any] = {}
        for v, col in var_cols.items():
            events = col[i] or []
            bound[v] = tuple(sorted(e[pos] for e in events))
            for e in events:
                seen[e[pos]] = e[time_col]
        key = tuple(p[i] for p in parts)
        if projected or not seen:
            # the interval's ends need not be among the projected events: find them by time
            # (with tied times, the earliest row for the start and the latest for the end)
            start = min(lookup.get((starts[i], key), [-1]))
            end = max(lookup.get((ends[i], key), [-1]))
        else:  # the interval runs from the first to the last event (in time, then row order)
            start = min(seen, key=lambda p: (seen[p], p))
            end = max(seen, key=lambda p: (seen[p], p))
        out.append(((ends[i], end), Row(start, end, tuple(sorted(seen)), key,
                                        _ordered({v: ps for v, ps in bound.items() if ps})
                                        if variables else {})))
    # the local engine reports matches in stream order of their last event; Spark's tasks
    # report each partition's matches in that order, one partition after another
    out.sort(key=lambda kr: kr[0])
    return [r for _, r in out]


def _time_lookup(numbered: Any, pos: str, time_col: str, partition: Sequence[str],
                 times: list[Any]) -> dict[tuple[Any, tuple[Any, ...]], list[int]]:
    """Rows (positions) by (time, partition key), for the times of match boundaries."""
    from pyspark.sql import functions as F

    wanted = sorted({t for t in times if t is not None})
    if not wanted:
        return {}
    found: dict[tuple[Any, tuple[Any, ...]], list[int]] = {}
    picked = numbered.where(F.col(time_col).isin(wanted)).select(time_col, pos, *partition)
    for r in picked.collect():
        found.setdefault((r[0], tuple(r[2:])), []).append(int(r[1]))
    return found
