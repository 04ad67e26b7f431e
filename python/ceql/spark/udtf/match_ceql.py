"""The Python table function behind MATCH_CEQL (Arrow eval type, with an ``analyze`` step).

Spark calls :meth:`MatchCeql.analyze` once on the driver while analysing the SQL: it compiles
the query, derives the output schema and requests the partitioning and ordering. Each task then
builds a :class:`MatchCeql` from that result and gets its partition's rows as Arrow batches. The
JVM shim references this class by name (its entry in ``ceql.constants.TABLE_FUNCTIONS``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql.types import StructField, StructType
from pyspark.sql.udtf import AnalyzeArgument, AnalyzeResult, OrderingColumn, PartitioningColumn

import ceql
from ceql.constants import (
    CALL_ARGUMENT,
    INTERNAL_PREFIX,
    MATCH_CEQL,
    PREFILTER_ARGUMENT,
    PREFILTER_KEY,
    PREFILTER_ON,
)
from ceql.spark.notices import key_of, say
from ceql.spark.udtf.base import ArrowTableFunction, call_options, refused_in_analyze
from ceql.spark.udtf.call import CallInfo
from ceql.spark.udtf.ceql_plan import WARNED_ARGUMENT, MatchSpec, output_schema, plan_match
from ceql.spark.udtf.pushdown import prefilter
from ceql.spark.udtf.runner import MatchRunner

__all__ = ["MatchAnalysis", "MatchCeql"]

_USAGE = "MATCH_CEQL(TABLE(t), query => 'SELECT * FROM t WHERE …')"


@dataclass
class MatchAnalysis(AnalyzeResult):
    """``analyze``'s result, handed to every task: the plan of the call."""

    spec: MatchSpec | None = None


def _table_and_options(args: tuple[AnalyzeArgument, ...],
                       kwargs: Mapping[str, AnalyzeArgument]
                       ) -> tuple[StructType, dict[str, Any], CallInfo, bool]:
    schema, options = call_options(MATCH_CEQL, _USAGE, args, kwargs)
    call = CallInfo.from_json(options.pop(CALL_ARGUMENT, None))
    if options.pop(PREFILTER_ARGUMENT, None) == PREFILTER_ON:
        call = replace(call, prefilter=True)
    warned = options.pop(WARNED_ARGUMENT, None) is not None
    return schema, options, call, warned


def _planned(schema: StructType, options: dict[str, Any], call: CallInfo,
             warned: bool) -> MatchSpec:
    """:func:`plan_match`, its warnings said once per query to the session's console
    (:mod:`ceql.spark.notices`) rather than printed by this worker — or not at all when the
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


class MatchCeql(ArrowTableFunction):
    """MATCH_CEQL: complex events of a CEQL query over a table, one Spark partition at a time."""

    NAME = MATCH_CEQL

    @staticmethod
    def analyze(*args: AnalyzeArgument, **kwargs: AnalyzeArgument) -> AnalyzeResult:
        """Compile the query, derive the output schema, request partitioning and ordering."""
        try:
            schema, options, call, warned = _table_and_options(args, kwargs)
            spec = _planned(schema, options, call, warned)
        except ceql.CeqlError as e:
            refused_in_analyze(MATCH_CEQL, e)
        return MatchAnalysis(
            schema=_with_prefilter(output_schema(spec, schema), spec, schema)
            if call.prefilter else output_schema(spec, schema),
            withSinglePartition=not spec.spark_partitioned,
            partitionBy=[PartitioningColumn(c) for c in spec.request_partition_by],
            orderBy=[OrderingColumn(c) for c in spec.request_order_by],
            spec=spec,
        )

    def __init__(self, analysis: MatchAnalysis) -> None:
        super().__init__()
        assert analysis.spec is not None
        self._spec = analysis.spec

    def partition_columns(self) -> tuple[str, ...]:
        """The PARTITION BY columns when Spark partitions the input by them."""
        return self._spec.partition if self._spec.spark_partitioned else ()

    def runner(self, key: tuple[Any, ...]) -> MatchRunner:
        """The engine of one partition."""
        return MatchRunner(self._spec)
