"""One partition of MATCH_RECOGNIZE_TABLE: its rows (in ORDER BY order, ties broken by
``tie_break``) kept as Arrow batches until the partition ends, then run by ceql's engine
(:meth:`ceql.mr.MatchRecognizeQuery.run_sorted_table`: the columnar engine's Arrow table when
it runs the query, else rows) and its output rows sent in batches within the
task's limits; rows no key orders told once (:class:`~ceql.spark.TieOrderWarning`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Sequence
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_type

import ceql
from ceql.constants import MATCH_RECOGNIZE_TABLE, OPTION_TIE_BREAK
from ceql.mr import MatchRecognizeQuery, arrow_rows
from ceql.spark.errors import MatchCeqlError, TieOrderWarning
from ceql.spark.notices import key_of, say
from ceql.spark.udtf.batching import BatchLimits, TooLarge, cuts, row_bytes
from ceql.spark.udtf.mr_plan import MrSpec
from ceql.spark.udtf.ties import TieWatch

__all__ = ["MrOutput", "MrRunner", "tie_words"]


def tie_words(spec: MrSpec, where: str, rows: tuple[dict[str, Any], dict[str, Any]]) -> str:
    """What the warning says of two rows that no ORDER BY key nor ``tie_break`` orders."""
    a, b = rows
    keys = (*spec.order, *spec.tie_columns)
    apart = [c for c in spec.input_columns if c not in keys and c not in spec.partition
             and a.get(c) != b.get(c)]
    column = apart[0] if apart else "seq"
    option = ", ".join([*spec.tie_columns, column])
    equal = ", ".join(f"{k} = {a.get(k)!r}" for k in keys)
    return (f"{MATCH_RECOGNIZE_TABLE}{where}: rows are equal in every ORDER BY key"
            f"{' and tie_break column' if spec.tie_columns else ''} ({equal}) and differ, so "
            "Spark reads them in an order that can change from run to run, and so can the "
            f"matches; name a column that orders them: {OPTION_TIE_BREAK} => {option!r} "
            f"(ceql.spark.match_recognize(..., {OPTION_TIE_BREAK}={option!r})), or add it to "
            f"ORDER BY. The columns telling them apart: {', '.join(apart[:4]) or '(none)'}.")


def _converter(t: pa.DataType) -> Callable[[Any], Any]:
    """A value of the engine's made to fit Arrow type ``t`` (the measure's Spark type)."""
    if pa.types.is_decimal(t):
        step = Decimal(1).scaleb(-t.scale)

        def decimal(v: Any) -> Any:
            if v is None or isinstance(v, bool):
                return v
            try:
                return Decimal(str(v) if isinstance(v, float) else v).quantize(
                    step, rounding=ROUND_HALF_UP)
            except (InvalidOperation, TypeError):
                return v
        return decimal
    if pa.types.is_floating(t):
        return lambda v: float(v) if isinstance(v, (int, Decimal)) and not isinstance(
            v, bool) else v
    if pa.types.is_integer(t):
        return lambda v: int(v) if isinstance(v, (float, Decimal)) and v == int(v) else v
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return lambda v: v if v is None or isinstance(v, str) else str(v)
    if pa.types.is_timestamp(t) and t.tz is not None:
        return lambda v: v.replace(tzinfo=dt.UTC) if isinstance(
            v, dt.datetime) and v.tzinfo is None else v
    return lambda v: v


class MrRunner:
    """One partition: rows in (:meth:`feed`), the output of its matches at the end
    (:meth:`close`)."""

    def __init__(self, spec: MrSpec, query: Callable[[dict[str, Any]], MatchRecognizeQuery],
                 key: tuple[Any, ...]) -> None:
        self._spec = spec
        self._query = query
        self._batches: list[pa.RecordBatch] = []
        self._where = ("" if not spec.partition else " in the partition " + ", ".join(
            f"{c} = {v!r}" for c, v in zip(spec.partition, key, strict=True)))
        keys = (*spec.order, *spec.tie_columns)
        self._ties = (TieWatch(keys[0], (*keys[1:], *spec.partition)) if keys else None)
        self._tie_key = key_of(spec.text, TieOrderWarning.__name__)
        self._output = MrOutput(spec, self._where)

    def feed(self, rb: pa.RecordBatch, limits: BatchLimits) -> Iterator[pa.RecordBatch]:
        """Keep the partition's next rows (matches end only with the partition)."""
        if rb.num_rows:
            self._batches.append(rb)
            if self._ties is not None:
                tied = self._ties.find(rb)
                if tied is not None:
                    self._ties = None
                    say(self._tie_key, TieOrderWarning, tie_words(self._spec, self._where, tied))
        return iter(())

    def close(self, limits: BatchLimits) -> Iterator[pa.RecordBatch]:
        """The partition ended: run the engine over its rows, send its output rows."""
        if not self._batches:
            return
        table = pa.Table.from_batches(self._batches)
        self._batches = []
        try:
            query = self._query(arrow_rows(table.slice(0, 1))[0])
            out = query.run_sorted_table(table)
        except ceql.CeqlError as e:
            raise MatchCeqlError(
                f"{MATCH_RECOGNIZE_TABLE}{self._where}: {type(e).__name__}: {e}") from None
        if out:
            yield from self._output.batches(out, limits)


class MrOutput:
    """The engine's output rows as Arrow batches of a MATCH_RECOGNIZE_TABLE call's output
    schema (a batch task's, or a stream key's); ``where`` names the partition in messages."""

    def __init__(self, spec: MrSpec, where: str = "") -> None:
        self._spec = spec
        self._where = where
        self._arrow = {f.name: to_arrow_type(f.dataType, timezone="UTC")
                       for f in spec.schema.fields}

    def batches(self, out: Sequence[dict[str, Any]] | pa.Table, limits: BatchLimits
                ) -> Iterator[pa.RecordBatch]:
        """``out`` (the engine's rows, or the columnar engine's table) as Arrow batches of
        the output's columns and types, within ``limits``."""
        if not len(out):
            return
        fields = self._spec.schema.fields
        table = out if isinstance(out, pa.Table) else None
        arrays = []
        for f in fields:
            t = self._arrow[f.name]
            if table is not None:
                if f.name not in table.schema.names:
                    arrays.append(pa.nulls(table.num_rows, t))
                    continue
                column = table.column(f.name).combine_chunks()
                try:
                    arrays.append(column if column.type == t else column.cast(t))
                    continue
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                    values = column.to_pylist()
            else:
                values = [r.get(f.name) for r in out]
            try:
                arrays.append(pa.array(values, t))
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
                convert = _converter(t)
                try:
                    arrays.append(pa.array([convert(v) for v in values], t))
                except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError,
                        OverflowError) as e:
                    bad = next((v for v in values if v is not None), None)
                    raise MatchCeqlError(
                        f"{MATCH_RECOGNIZE_TABLE}{self._where}: column {f.name} is "
                        f"{f.dataType.simpleString()}, but the engine gave {bad!r} "
                        f"({type(bad).__name__}) ({e}); write CAST(… AS <type>) in the "
                        "measure to say the type you want.") from None
        batch = pa.RecordBatch.from_arrays(arrays, names=[f.name for f in fields])
        sizes = np.zeros(batch.num_rows, np.int64)
        for a in arrays:
            sizes += row_bytes(a)
        try:
            spans = cuts(sizes, limits)
        except TooLarge as e:
            raise MatchCeqlError(f"{MATCH_RECOGNIZE_TABLE}{self._where}: {e}; raise it if the "
                                 "executors have the memory to spare.") from None
        for start, stop in spans:
            yield batch.slice(start, stop - start)
