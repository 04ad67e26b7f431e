"""Match output: JSON lines, CSV or Parquet, to standard output or to a file that appears
under its name only once the run succeeds."""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol, TextIO

import pyarrow as pa
import pyarrow.parquet as pq

from .errors import EXIT_USAGE, CliError

__all__ = [
    "CsvSink",
    "JsonLinesSink",
    "ParquetSink",
    "Row",
    "Sink",
    "Target",
    "open_sink",
    "output_format",
    "variables_in_order",
]

_OUTPUT_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet",
                   ".pq": "parquet"}
_FIXED_COLUMNS = ("start", "end", "positions", "variables")
_BUFFERED_ROWS = 65_536  # matches buffered per Parquet row group


class Row(NamedTuple):
    """One match as written out: interval, positions, partition key, variables and (with
    ``--fields``) ``start_time``, ``end_time`` and ``events``."""

    start: int
    end: int
    positions: tuple[int, ...]
    partition: tuple[Any, ...]
    variables: dict[str, tuple[int, ...]]
    fields: dict[str, Any] | None = None


def variables_in_order(names: Sequence[str], variables: dict[str, tuple[int, ...]]
                       ) -> dict[str, tuple[int, ...]]:
    """The variables of a match that the query reports (``names``: ``Query.variables``, in
    pattern order), in that order; those binding nothing in this match are left out."""
    return {v: variables[v] for v in names if variables.get(v)}


class Sink(Protocol):
    """Where matches go."""

    def write(self, rows: Sequence[Row]) -> None:
        """Write some matches."""

    def finish(self) -> None:
        """Complete the output (a file appears under its name only now)."""

    def abort(self) -> None:
        """Give up: leave no partial file behind."""


class Target:
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
        """Move the complete file to its name."""
        try:
            os.replace(self.temp, self.path)
        except OSError as exc:
            self.discard()
            raise CliError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def discard(self) -> None:
        """Delete the temporary file."""
        try:
            os.remove(self.temp)
        except OSError:
            pass


def _json_default(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


class JsonLinesSink:
    """One JSON object per line: ``{"start", "end", "positions"[, "partition"][, "variables"]
    [, "start_time", "end_time", "events"]}`` (the keys :meth:`ceql.Match.to_dict` gives)."""

    def __init__(self, out: TextIO, variables: bool, target: Target | None = None) -> None:
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
            if r.fields is not None:
                for k, v in r.fields.items():
                    line += f", {json.dumps(k)}: " + json.dumps(v, default=_json_default)
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
                 target: Target | None = None) -> None:
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

    def __init__(self, target: Target, partition: Sequence[str], input_schema: pa.Schema,
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
        if len(self._buffer) >= _BUFFERED_ROWS:
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
              input_schema: pa.Schema, target: Target | None = None) -> Sink:
    """Create the output (a file under a temporary name, unless ``target`` made it already)."""
    if args.output in (None, "-"):
        if fmt == "csv":
            return CsvSink(sys.stdout, partition, args.variables)
        return JsonLinesSink(sys.stdout, args.variables)
    if target is None:
        target = Target(args.output)
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
