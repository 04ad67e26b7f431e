"""Event input: telling an input's format, reading CSV, Parquet or JSON lines (compressed or
not) batch by batch, and checking that the columns the command names are there."""

from __future__ import annotations

import argparse
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import IO, Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from .errors import EXIT_USAGE, CliError

__all__ = [
    "BATCH_ROWS",
    "Events",
    "check_columns",
    "input_compression",
    "input_format",
    "open_events",
]

_INPUT_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl",
                  ".ndjson": "jsonl", ".json": "jsonl"}
_COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd", ".lz4": "lz4"}
_BLOCK_BYTES = 1 << 20  # CSV / JSON read block (types are inferred from the first one)
BATCH_ROWS = 65_536  # Parquet read batch (and the batch of events evaluated after --sort)


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


def input_compression(path: str) -> str | None:
    """The compression the file name's last extension says (``None``: none)."""
    return _COMPRESSIONS.get(os.path.splitext(path.lower())[1])


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
        for batch in pf.iter_batches(batch_size=BATCH_ROWS):
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
            opts = pacsv.ReadOptions(block_size=_BLOCK_BYTES)
            reader = (pacsv.open_csv(stream, read_options=opts) if path != "-" else
                      _interruptible(lambda: pacsv.open_csv(stream, read_options=opts),
                                     once=True)())
        elif hasattr(pajson, "open_json"):
            jopts = pajson.ReadOptions(block_size=_BLOCK_BYTES)
            reader = (pajson.open_json(stream, read_options=jopts) if path != "-" else
                      _interruptible(lambda: pajson.open_json(stream, read_options=jopts),
                                     once=True)())
        else:  # pyarrow < 19 has no streaming JSON reader
            reader = pajson.read_json(stream).to_reader(max_chunksize=BATCH_ROWS)
    except BaseException:
        raw.close()
        raise

    blocks = 0

    def batches() -> Iterator[pa.RecordBatch]:
        nonlocal blocks
        read = reader.read_next_batch if path != "-" else _interruptible(reader.read_next_batch)
        while True:
            try:
                batch = read()
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


#: helper threads reading standard input (see :func:`_interruptible`); while one is
#: blocked in Arrow, the interpreter cannot finalize (exit with :func:`os._exit` then)
STDIN_READERS: set[threading.Thread] = set()


def reading_stdin() -> bool:
    """Whether a helper thread may still be blocked reading standard input."""
    return any(t.is_alive() for t in STDIN_READERS)


#: seconds Ctrl-C leaves the command to end by itself before it is ended (see below)
INTERRUPT_GRACE = 2.0


def _exit_soon_on_interrupt() -> None:
    """Ctrl-C raises KeyboardInterrupt as usual, and ends the process with status 130 if it
    has not ended ``INTERRUPT_GRACE`` seconds later: Arrow's reader, blocked on standard
    input in its own thread, can hold the clean-up (its destructor waits for the read)."""
    if threading.current_thread() is not threading.main_thread():
        return

    def on_interrupt(signum: int, frame: Any) -> None:
        timer = threading.Timer(INTERRUPT_GRACE, os._exit, (130,))
        timer.daemon = True
        timer.start()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_interrupt)


def _interruptible(read: Callable[[], Any], once: bool = False) -> Callable[[], Any]:
    """``read`` (called for each result, or ``once``) run in a helper thread while this one
    waits in short slices: Arrow's readers block in C while standard input stays open, and
    Ctrl-C (handled on the main thread only between Python steps) would otherwise wait for
    the next block or the end of input."""
    results: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=1)

    def produce() -> None:
        while True:
            try:
                results.put((True, read()))
            except BaseException as exc:  # StopIteration at the end, or a read error
                results.put((False, exc))
                return
            if once:
                return

    thread = threading.Thread(target=produce, name="ceql-stdin", daemon=True)
    STDIN_READERS.add(thread)
    thread.start()
    _exit_soon_on_interrupt()

    def next_batch() -> Any:
        while True:
            try:
                ok, value = results.get(timeout=0.2)
            except queue.Empty:
                continue
            if ok:
                return value
            raise value
    return next_batch


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
