"""The command line itself: its arguments, the ``run`` and ``explain`` commands, exit statuses.

Exit status: 0 done; 1 the input or output cannot be used (missing file, unknown column, events
out of time order, …); 2 a bad query or bad arguments; 130 interrupted; 141 output pipe closed.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import TextIO

import ceql

from .errors import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    QueryError,
)
from .local_run import run_local
from .mr_run import explain_mr, run_mr
from .progress import say
from .query import check_time, compile_query, looks_like_mr, read_query
from .readers import input_format, reading_stdin
from .sinks import output_format
from .spark_run import run_spark
from .spaseq_run import run_spaseq

__all__ = ["build_parser", "main"]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text}")
    return value


#: The values of ``--language`` (explain takes the first two).
LANGUAGES = ("ceql", "mr", "spaseq")

#: The levels of ``--spark-log`` (Spark's ``spark.log.level``, log4j's levels).
SPARK_LOG_LEVELS = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", "ALL")

_RUN_DESCRIPTION = """\
Evaluate a CEQL query over the events of a file, in input order, and write every
match: JSON lines on standard output, or --output FILE. A progress bar (on a
terminal) and a summary line go to standard error. MATCH_RECOGNIZE text (SQL's
row pattern recognition) runs too, writing its output rows."""

_RUN_EPILOG = """\
output:
  one JSON line per match, e.g. {"start": 408, "end": 415, "positions": [408, 413, 415]}:
  0-based input rows of the interval's ends and of the match's events; "partition"
  holds the PARTITION BY key, "variables" (--variables) the rows of each variable (in
  the query's pattern order), "start_time", "end_time" and "events" (--fields) the
  times and the events themselves. CSV and Parquet: columns start, end, positions
  (';'-joined in CSV), one per PARTITION BY attribute, and variables.

FROM: one FROM name stands for the whole input, whatever the name; with a stream
  column (--stream-col), FROM names are its values.

MATCH_RECOGNIZE: the clause's body (PARTITION BY ... PATTERN (...) DEFINE ...) or
  SELECT * FROM t MATCH_RECOGNIZE ( ... ), found as such (or --language mr); one
  JSON line (CSV row, Parquet row) per output row: ONE ROW PER MATCH gives the
  PARTITION BY columns and the measures.

examples:
  ceql run examples/queries/p3.ceql --input examples/stock.csv --time ts --time-unit us
  ceql run "SELECT * FROM S WHERE login ; purchase WITHIN 1 HOUR" -i clicks.csv -t ts
  ceql run q.ceql -i log.csv -t when --time-format '%d/%m/%Y %H:%M:%S' --fields
  ceql run q.ceql -i events.parquet -t ts -o matches.parquet --engine spark
  ceql run --language spaseq q.rq -i events.jsonl --dataset http://ex/kb=kb.ttl
  ceql run "PATTERN (A B+) DEFINE B AS price > PREV(price)" -i stock.csv"""


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
    run.add_argument("query", metavar="QUERY", help="CEQL query file ('-': standard input), or "
                                                    "the query itself (text starting with "
                                                    "SELECT, or MATCH_RECOGNIZE text)")
    run.add_argument("-l", "--language", choices=LANGUAGES,
                     help="the query's language (default: mr for MATCH_RECOGNIZE text, else "
                          "ceql); mr: SQL's MATCH_RECOGNIZE over the input's rows (see "
                          "docs/match_recognize.md); spaseq: a SPAseq query over "
                          "RDF graph events (JSON lines, or a directory of STREAM@TIME.ttl "
                          "files; see docs/SPASEQ.md)")
    run.add_argument("--dataset", action="append", metavar="[IRI=]FILE",
                     help="spaseq: static RDF the query's GRAPH <IRI> reads: FILE's triples "
                          "as the graph IRI, or a TriG/N-Quads FILE (repeatable)")
    run.add_argument("--graph-col", default="graph", metavar="KEY",
                     help="spaseq: the key of each event's graph (default: graph)")
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
    run.add_argument("--time-format", metavar="FMT",
                     help="read a --time column of text with this format of Python's "
                          "strptime, e.g. '%%d/%%m/%%Y %%H:%%M:%%S' (both engines)")
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
    run.add_argument("--spark-log", type=str.upper, choices=SPARK_LOG_LEVELS, metavar="LEVEL",
                     help="with --engine spark: show Spark's own log on standard error from "
                          "LEVEL up (ERROR, WARN, INFO, DEBUG, ...); without it Spark's output "
                          "goes to a temporary file, named only if Spark fails")
    run.add_argument("-o", "--output", metavar="FILE",
                     help="write the matches to FILE (.jsonl, .csv or .parquet) instead of "
                          "standard output; FILE appears only once the run succeeds")
    run.add_argument("--output-format", choices=("jsonl", "csv", "parquet"),
                     help="write in this format, whatever the name of FILE (standard output: "
                          "jsonl or csv)")
    run.add_argument("--variables", action="store_true",
                     help="also write, for each match, the positions each variable binds")
    run.add_argument("--fields", action="store_true",
                     help="also write each match's start and end times and its events with "
                          "all their fields (JSON lines only)")
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
    explain.add_argument("query", metavar="QUERY", help="CEQL query file ('-': standard "
                                                        "input), or the query itself")
    explain.add_argument("-l", "--language", choices=LANGUAGES[:2],
                         help="the query's language (default: mr for MATCH_RECOGNIZE text, "
                              "else ceql)")
    explain.add_argument("--dot", action="store_true",
                         help="print the automaton as Graphviz DOT instead")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ceql`` command line; return its exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", ceql.CeqlWarning)
            warnings.showwarning = _warning_printer(getattr(args, "quiet", False))
            if args.command == "explain":
                return _explain(args)
            return _run(args, parser)
    except QueryError as exc:
        say(f"ceql: error: {exc}")
        return EXIT_USAGE
    except CliError as exc:
        say(f"ceql: error: {exc}")
        return exc.status
    except KeyboardInterrupt:
        if reading_stdin():  # a reader blocked in Arrow would stop the interpreter's exit
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_INTERRUPTED)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader of standard output went away (e.g. `| head`): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _warning_printer(quiet: bool) -> Callable[..., None]:
    """``warnings.showwarning`` for a command: ceql's warnings as ``ceql: warning: …`` lines,
    each once (none with ``--quiet``); other warnings as Python prints them."""
    said: set[str] = set()
    default = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        if not issubclass(category, ceql.CeqlWarning):
            default(message, category, filename, lineno, file, line)
            return
        text = " ".join(str(message).split())
        if not quiet and text not in said:
            said.add(text)
            say(f"ceql: warning: {text}")

    return show


def _is_mr(language: str | None, text: str) -> bool:
    """Whether the query is MATCH_RECOGNIZE: ``--language mr``, or text that reads as it when
    no language was given."""
    return language == "mr" or (language is None and looks_like_mr(text))


def _explain(args: argparse.Namespace) -> int:
    text, source = read_query(args.query)
    if _is_mr(args.language, text):
        sys.stdout.write(explain_mr(text, source, args.dot).rstrip("\n") + "\n")
        sys.stdout.flush()
        return EXIT_OK
    compile_query(text, source)
    sys.stdout.write(ceql.explain(text, dot=args.dot).rstrip("\n") + "\n")
    sys.stdout.flush()
    return EXIT_OK


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.language == "spaseq":
        if args.query == "-" and args.input == "-":
            parser.error("the query and the events cannot both come from standard input")
        return run_spaseq(args)
    if args.dataset is not None:
        parser.error("--dataset needs --language spaseq")
    if args.query == "-" and args.input == "-":
        parser.error("the query and the events cannot both come from standard input")
    text, source = read_query(args.query)
    if _is_mr(args.language, text):
        return run_mr(args, text, source)
    if args.sort and args.time is None:
        parser.error("--sort needs --time")
    if args.time_format is not None and args.time is None:
        parser.error("--time-format needs --time")
    if args.spark_log is not None and args.engine != "spark":
        parser.error("--spark-log needs --engine spark")
    fmt_in, compression = input_format(args.input, args.input_format)
    fmt_out = output_format(args)
    if args.fields and fmt_out != "jsonl":
        raise CliError("--fields writes JSON lines (each event with its own fields), not "
                       f"{fmt_out}: write to standard output or a .jsonl file", EXIT_USAGE)
    query = compile_query(text, source, max_states=args.max_states)  # before any input
    check_time(query, args)
    if args.engine == "spark":
        return run_spark(args, text, source, fmt_in, fmt_out)
    return run_local(args, text, source, fmt_in, compression, fmt_out)
