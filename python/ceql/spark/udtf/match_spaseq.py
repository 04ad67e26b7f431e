"""The Python table function behind MATCH_SPASEQ (Arrow eval type, with an ``analyze`` step):
a SPAseq query (docs/SPASEQ.md) over a table whose rows are events — a stream, a time and an
RDF graph each —, one output row per match.

``analyze`` (:mod:`.spaseq_plan`) compiles the query on the driver and asks Spark for the
partitioning and for the order (time, then stream); each task gets its partitions' rows as
Arrow batches, one partition after another, and runs a
:class:`~ceql.spark.udtf.spaseq_runner.SpaseqRunner` per partition. The JVM shim references
:class:`MatchSpaseq` by name (its entry in ``ceql.constants.TABLE_FUNCTIONS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.types import StructType
from pyspark.sql.udtf import AnalyzeArgument, AnalyzeResult, OrderingColumn, PartitioningColumn

import ceql
from ceql.constants import CALL_ARGUMENT, MATCH_SPASEQ
from ceql.spark.udtf.base import ArrowTableFunction, call_options, refused_in_analyze
from ceql.spark.udtf.call import CallInfo
from ceql.spark.udtf.spaseq_plan import SpaseqSpec, plan_spaseq, spaseq_schema
from ceql.spark.udtf.spaseq_runner import SpaseqRunner

__all__ = ["MatchSpaseq", "SpaseqAnalysis", "analyze_call"]

_USAGE = "MATCH_SPASEQ(TABLE(t) PARTITION BY k ORDER BY (time), query => '<SPAseq>')"


@dataclass
class SpaseqAnalysis(AnalyzeResult):
    """``analyze``'s result, handed to every task: the plan of the call and its schema."""

    spec: SpaseqSpec | None = None
    out: StructType | None = None


def analyze_call(args: tuple[AnalyzeArgument, ...], kwargs: Mapping[str, AnalyzeArgument]
                 ) -> tuple[SpaseqSpec, StructType]:
    """The plan and output schema of one call (what ``analyze`` decides)."""
    schema, options = call_options(MATCH_SPASEQ, _USAGE, args, kwargs)
    call = CallInfo.from_json(options.get(CALL_ARGUMENT))
    spec = plan_spaseq(schema, options, call)
    return spec, spaseq_schema(spec, schema)


class MatchSpaseq(ArrowTableFunction):
    """MATCH_SPASEQ: the matches of a SPAseq query over a table of events, one Spark partition
    at a time."""

    NAME = MATCH_SPASEQ
    NULL_KEYS_DROPPED = True  # a NULL key belongs to no partition, as in MATCH_CEQL

    @staticmethod
    def analyze(*args: AnalyzeArgument, **kwargs: AnalyzeArgument) -> AnalyzeResult:
        """Compile the query, derive the output schema, request partitioning and ordering."""
        try:
            spec, out = analyze_call(args, kwargs)
        except ceql.CeqlError as e:
            refused_in_analyze(MATCH_SPASEQ, e)
        return SpaseqAnalysis(
            schema=out,
            withSinglePartition=not spec.partition,
            partitionBy=[PartitioningColumn(c) for c in spec.request_partition_by],
            orderBy=[OrderingColumn(c) for c in spec.request_order_by],
            spec=spec, out=out)

    def __init__(self, analysis: SpaseqAnalysis) -> None:
        super().__init__()
        assert analysis.spec is not None and analysis.out is not None
        self._spec = analysis.spec
        self._out = analysis.out

    def partition_columns(self) -> tuple[str, ...]:
        """The partition columns of the call."""
        return self._spec.partition

    def runner(self, key: tuple[Any, ...]) -> SpaseqRunner:
        """The evaluation of one partition."""
        return SpaseqRunner(self._spec, self._out, key)
