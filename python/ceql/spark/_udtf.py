"""The Python table function behind MATCH_CEQL (Arrow eval type, with an ``analyze`` step).

Spark calls :meth:`MatchCeql.analyze` once on the driver while analysing the SQL: it compiles
the query, derives the output schema and requests the partitioning and ordering. Each task then
builds a :class:`MatchCeql` from that result and gets its partition's rows as Arrow batches. The
JVM shim references this class by name (its entry in ``ceql.constants.TABLE_FUNCTIONS``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any

import pyarrow as pa
from pyspark.errors import PySparkValueError
from pyspark.sql.types import StructField, StructType
from pyspark.sql.udtf import AnalyzeArgument, AnalyzeResult, OrderingColumn, PartitioningColumn

import ceql
from ceql.constants import (
    CALL_ARGUMENT,
    INTERNAL_PREFIX,
    MATCH_CEQL,
    OPTION_QUERY,
    PREFILTER_ARGUMENT,
    PREFILTER_KEY,
    PREFILTER_ON,
)
from ceql.runtime import canonical_key

from ._batching import BatchLimits
from ._errors import MatchCeqlError
from ._notices import key_of, say
from ._pushdown import prefilter
from ._runner import MatchRunner, partition_starts
from ._spec import WARNED_ARGUMENT, CallInfo, MatchSpec, output_schema, plan_match

__all__ = ["MatchAnalysis", "MatchCeql"]

_USAGE = "MATCH_CEQL(TABLE(t), query => 'SELECT * FROM t WHERE …')"


@dataclass
class MatchAnalysis(AnalyzeResult):
    """``analyze``'s result, handed to every task: the plan of the call."""

    spec: MatchSpec | None = None


def _table_and_options(args: tuple[AnalyzeArgument, ...],
                       kwargs: Mapping[str, AnalyzeArgument]
                       ) -> tuple[StructType, dict[str, Any], CallInfo, bool]:
    tables = [a for a in (*args, *kwargs.values()) if a.isTable]
    if len(tables) != 1:
        raise MatchCeqlError(
            f"MATCH_CEQL takes exactly one table argument, got {len(tables)}: {_USAGE}.")
    options: dict[str, Any] = {}
    scalars = [a for a in args if not a.isTable]
    if len(scalars) > 1:
        raise MatchCeqlError(
            f"MATCH_CEQL takes the query and then named options (time => 'ts', …), got "
            f"{len(scalars)} unnamed values: {_USAGE}.")
    named = {k: v for k, v in kwargs.items() if not v.isTable}
    if scalars:
        named = {OPTION_QUERY: scalars[0], **named}
    for k, v in named.items():
        if not v.isConstantExpression:
            raise MatchCeqlError(
                f"MATCH_CEQL: option {k} must be a constant string, not an expression over "
                "the rows.")
        options[k] = v.value
    call = CallInfo.from_json(options.pop(CALL_ARGUMENT, None))
    if options.pop(PREFILTER_ARGUMENT, None) == PREFILTER_ON:
        call = replace(call, prefilter=True)
    warned = options.pop(WARNED_ARGUMENT, None) is not None
    schema = tables[0].dataType
    assert isinstance(schema, StructType)
    return schema, options, call, warned


def _planned(schema: StructType, options: dict[str, Any], call: CallInfo,
             warned: bool) -> MatchSpec:
    """:func:`plan_match`, its warnings said once per query to the session's console
    (:mod:`ceql.spark._notices`) rather than printed by this worker — or not at all when the
    caller's process has issued them already (``warned``: ``ceql.spark.match``, ``run``)."""
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", ceql.CeqlWarning)
        spec = plan_match(schema, options, call)
    for w in said:
        if not issubclass(w.category, ceql.CeqlWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        elif not warned:
            message = str(w.message)
            say(key_of(spec.query, w.category.__name__, message), w.category, message)
    return spec


def _with_prefilter(out: StructType, spec: MatchSpec, schema: StructType) -> StructType:
    """``out`` carrying, for the JVM shim, the row filter it may apply before the shuffle."""
    visible = StructType([f for f in schema.fields if not f.name.startswith(INTERNAL_PREFIX)])
    with warnings.catch_warnings():  # plan_match compiled it, and warned, already
        warnings.simplefilter("ignore", ceql.CeqlWarning)
        query = ceql.compile(spec.query, schema=visible)
    cond = prefilter(query, schema, spec)
    if cond is None:
        return out
    first = out.fields[0]
    tagged = StructField(first.name, first.dataType, first.nullable,
                         {**first.metadata, PREFILTER_KEY: cond})
    return StructType([tagged, *out.fields[1:]])


def _reported(e: ceql.CeqlError) -> MatchCeqlError:
    """The error a task reports for ``e``: its message, without a Python traceback.

    Spark's Python worker sends the traceback of the error that ends a task, and the user
    would read past it to find ceql's message; with ``SPARK_HIDE_TRACEBACK`` set when it
    reports, it sends only ``MatchCeqlError: <message>``. The worker exits after reporting,
    so the setting ends with it; errors that are not ceql's keep their traceback.
    """
    os.environ["SPARK_HIDE_TRACEBACK"] = "1"
    message = str(e)
    return e if isinstance(e, MatchCeqlError) else MatchCeqlError(
        message if message.startswith(MATCH_CEQL) else f"{MATCH_CEQL}: {message}")


class MatchCeql:
    """MATCH_CEQL: complex events of a CEQL query over a table, one Spark partition at a time."""

    @staticmethod
    def analyze(*args: AnalyzeArgument, **kwargs: AnalyzeArgument) -> AnalyzeResult:
        """Compile the query, derive the output schema, request partitioning and ordering."""
        try:
            schema, options, call, warned = _table_and_options(args, kwargs)
            spec = _planned(schema, options, call, warned)
        except MatchCeqlError as e:
            raise PySparkValueError(str(e)) from None
        except ceql.CeqlError as e:
            raise PySparkValueError(f"MATCH_CEQL: {e}") from None
        return MatchAnalysis(
            schema=_with_prefilter(output_schema(spec, schema), spec, schema)
            if call.prefilter else output_schema(spec, schema),
            withSinglePartition=not spec.spark_partitioned,
            partitionBy=[PartitioningColumn(c) for c in spec.request_partition_by],
            orderBy=[OrderingColumn(c) for c in spec.request_order_by],
            spec=spec,
        )

    def __init__(self, analysis: MatchAnalysis) -> None:
        assert analysis.spec is not None
        self._spec = analysis.spec
        self._runner: MatchRunner | None = None
        self._key: tuple[Any, ...] | None = None
        self._limits: BatchLimits | None = None  # read in the task (a bad value: its error)

    def eval(self, *args: Any, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        """Feed one Arrow batch; yield the rows of the matches it completes, in batches
        bounded by rows and bytes (:mod:`ceql.spark._batching`).

        A batch may hold several partitions, one after another (Spark sorted them by key): each
        partition gets its own engine, started when its first row arrives. An error of ceql's
        (bad data) is reported as its message alone (:func:`_reported`).
        """
        try:
            yield from self._eval(args, kwargs)
        except ceql.CeqlError as e:
            raise _reported(e) from None

    def _eval(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[pa.RecordBatch]:
        if self._limits is None:
            self._limits = BatchLimits.of_task()
        for a in (*args, *kwargs.values()):
            if isinstance(a, pa.RecordBatch):
                for key, part in self._segments(a):
                    if self._runner is None or key != self._key:
                        if self._runner is not None:  # that partition's rows ended
                            yield from self._runner.close(self._limits)
                        self._runner, self._key = MatchRunner(self._spec), key
                    yield from self._runner.feed(part, self._limits)
                return
        raise MatchCeqlError(
            "MATCH_CEQL received no table rows as an Arrow batch (got "
            f"{', '.join(type(a).__name__ for a in (*args, *kwargs.values()))}); it must run "
            "with Spark's Arrow UDTF eval type and one TABLE argument.")

    def _segments(self, rb: pa.RecordBatch) -> Iterator[tuple[tuple[Any, ...], pa.RecordBatch]]:
        """The runs of equal partition keys in ``rb`` (the whole batch without partitioning)."""
        cols = self._spec.partition if self._spec.spark_partitioned else ()
        if not cols or rb.num_rows == 0:
            yield (), rb
            return
        starts = [0, *partition_starts([rb.column(c) for c in cols]), rb.num_rows]
        for s, e in pairwise(starts):
            key = tuple(rb.column(c)[s].as_py() for c in cols)
            yield canonical_key(key) or key, rb.slice(s, e - s)

    def terminate(self) -> Iterator[pa.RecordBatch]:
        """The input ended: output the matches that waited for time to pass (a trailing NOT
        makes a match final only once its window has passed, or at the end)."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        try:
            yield from runner.close(self._limits or BatchLimits.of_task())
        except ceql.CeqlError as e:
            raise _reported(e) from None

