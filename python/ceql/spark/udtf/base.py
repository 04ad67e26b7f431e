"""What MATCH_CEQL and MATCH_SPASEQ share as Spark Arrow Python UDTFs.

Both read one TABLE argument, the query (named or the one unnamed value) and named constant
options; both turn ceql's errors into Spark's in ``analyze``, and into a message without a
traceback in a task; both get a task's rows as Arrow batches holding one partition after
another (Spark sorted them by key) and run a per-partition runner on each. A language adds its
plan (``analyze``'s result) and its runner (:class:`PartitionRunner`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from itertools import pairwise
from typing import Any, NoReturn, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.errors import PySparkValueError
from pyspark.sql.types import StructType
from pyspark.sql.udtf import AnalyzeArgument

import ceql
from ceql.constants import OPTION_QUERY
from ceql.runtime import canonical_key
from ceql.spark.errors import MatchCeqlError
from ceql.spark.udtf.batching import BatchLimits

__all__ = ["ArrowTableFunction", "PartitionRunner", "call_options", "partition_starts",
           "refused_in_analyze", "reported"]


def call_options(name: str, usage: str, args: tuple[AnalyzeArgument, ...],
                 kwargs: Mapping[str, AnalyzeArgument]) -> tuple[StructType, dict[str, Any]]:
    """The table argument's schema and the call's options (the unnamed value is the query),
    each a constant; :class:`MatchCeqlError` naming ``name`` and showing ``usage`` if not."""
    tables = [a for a in (*args, *kwargs.values()) if a.isTable]
    if len(tables) != 1:
        raise MatchCeqlError(
            f"{name} takes exactly one table argument, got {len(tables)}: {usage}.")
    scalars = [a for a in args if not a.isTable]
    if len(scalars) > 1:
        raise MatchCeqlError(
            f"{name} takes the query and then named options (time => 'ts', …), got "
            f"{len(scalars)} unnamed values: {usage}.")
    named = {k: v for k, v in kwargs.items() if not v.isTable}
    if scalars:
        named = {OPTION_QUERY: scalars[0], **named}
    options: dict[str, Any] = {}
    for k, v in named.items():
        if not v.isConstantExpression:
            raise MatchCeqlError(f"{name}: option {k} must be a constant string, not an "
                                 "expression over the rows.")
        options[k] = v.value
    schema = tables[0].dataType
    assert isinstance(schema, StructType)
    return schema, options


def refused_in_analyze(name: str, e: ceql.CeqlError) -> NoReturn:
    """``analyze``'s failure for ``e``: Spark's error type, ceql's message."""
    raise PySparkValueError(str(e) if isinstance(e, MatchCeqlError) else f"{name}: {e}") from None


def reported(name: str, e: ceql.CeqlError) -> MatchCeqlError:
    """The error a task reports for ``e``: its message, without a Python traceback.

    Spark's Python worker sends the traceback of the error that ends a task, and the user
    would read past it to find ceql's message; with ``SPARK_HIDE_TRACEBACK`` set when it
    reports, it sends only ``MatchCeqlError: <message>``. The worker exits after reporting,
    so the setting ends with it; errors that are not ceql's keep their traceback.
    """
    os.environ["SPARK_HIDE_TRACEBACK"] = "1"
    message = str(e)
    return e if isinstance(e, MatchCeqlError) else MatchCeqlError(
        message if message.startswith(name) else f"{name}: {message}")


def partition_starts(columns: Sequence[pa.Array]) -> list[int]:
    """Rows (after the first) where any of ``columns`` changes value; NULL equals NULL and
    NaN equals NaN (as Spark groups, and as the engine's partitions do)."""
    n = len(columns[0])
    if n < 2:
        return []
    changed: Any = False
    for c in columns:
        a, b = c.slice(1), c.slice(0, n - 1)
        unequal = pc.not_equal(a, b)
        if pa.types.is_floating(c.type):
            unequal = pc.and_(unequal, pc.invert(pc.and_(pc.is_nan(a), pc.is_nan(b))))
        diff = pc.or_(pc.fill_null(unequal, False),
                      pc.not_equal(pc.is_null(a), pc.is_null(b)))
        changed = pc.or_(changed, diff)
    return [int(i) + 1 for i in np.flatnonzero(changed.to_numpy(zero_copy_only=False))]


class PartitionRunner(Protocol):
    """One partition's evaluation: rows in, output batches within ``limits`` out."""

    def feed(self, rb: pa.RecordBatch, limits: BatchLimits) -> Iterator[pa.RecordBatch]:
        """The output of the matches the partition's next rows complete."""
        ...

    def close(self, limits: BatchLimits) -> Iterator[pa.RecordBatch]:
        """The partition's rows ended: the output of the matches that waited for that."""
        ...


class ArrowTableFunction:
    """The task side of a table function: Arrow batches in, a runner per partition key.

    A subclass names the function (:attr:`NAME`), says which columns key a partition
    (:meth:`partition_columns`) and builds a partition's runner (:meth:`runner`).
    """

    #: the SQL name, in messages
    NAME = ""
    #: rows whose partition key holds a NULL belong to no partition (they are dropped)
    NULL_KEYS_DROPPED = False

    def __init__(self) -> None:
        self._runner: PartitionRunner | None = None
        self._key: tuple[Any, ...] | None = None
        self._limits: BatchLimits | None = None  # read in the task (a bad value: its error)

    def partition_columns(self) -> tuple[str, ...]:
        """The columns whose values key a partition (none: the task's rows are one)."""
        raise NotImplementedError

    def runner(self, key: tuple[Any, ...]) -> PartitionRunner:
        """A new runner for the partition of ``key``."""
        raise NotImplementedError

    def eval(self, *args: Any, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        """Feed one Arrow batch; yield the rows of the matches it completes, in batches
        bounded by rows and bytes (:mod:`ceql.spark.udtf.batching`).

        A batch may hold several partitions, one after another: each gets its own runner,
        started when its first row arrives. An error of ceql's (bad data) is reported as its
        message alone (:func:`reported`).
        """
        try:
            yield from self._eval(args, kwargs)
        except ceql.CeqlError as e:
            raise reported(self.NAME, e) from None

    def _eval(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[pa.RecordBatch]:
        if self._limits is None:
            self._limits = BatchLimits.of_task()
        for a in (*args, *kwargs.values()):
            if isinstance(a, pa.RecordBatch):
                for key, part in self._segments(a):
                    if self._runner is None or key != self._key:
                        if self._runner is not None:  # that partition's rows ended
                            yield from self._runner.close(self._limits)
                        self._runner, self._key = self.runner(key), key
                    yield from self._runner.feed(part, self._limits)
                return
        raise MatchCeqlError(
            f"{self.NAME} received no table rows as an Arrow batch (got "
            f"{', '.join(type(a).__name__ for a in (*args, *kwargs.values()))}); it must run "
            "with Spark's Arrow UDTF eval type and one TABLE argument.")

    def _segments(self, rb: pa.RecordBatch) -> Iterator[tuple[tuple[Any, ...], pa.RecordBatch]]:
        """The runs of equal partition keys in ``rb`` (the whole batch without partitioning);
        NaN equals NaN in a key, as Spark groups."""
        cols = self.partition_columns()
        if not cols or rb.num_rows == 0:
            yield (), rb
            return
        if self.NULL_KEYS_DROPPED:
            valid = None
            for c in cols:
                v = pc.is_valid(rb.column(c))
                valid = v if valid is None else pc.and_(valid, v)
            if pc.all(valid).as_py() is False:
                rb = rb.filter(valid)
                if rb.num_rows == 0:
                    return
        starts = [0, *partition_starts([rb.column(c) for c in cols]), rb.num_rows]
        for s, e in pairwise(starts):
            key = tuple(rb.column(c)[s].as_py() for c in cols)
            yield canonical_key(key) or key, rb.slice(s, e - s)

    def terminate(self) -> Iterator[pa.RecordBatch]:
        """The input ended: output the matches that waited for it (a trailing NOT makes a
        match final only once its window has passed, or at the end; SPAseq's last instant)."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        try:
            yield from runner.close(self._limits or BatchLimits.of_task())
        except ceql.CeqlError as e:
            raise reported(self.NAME, e) from None
