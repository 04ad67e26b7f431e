"""The Python table function behind MATCH_RECOGNIZE in Spark (Arrow eval type, with an
``analyze`` step): ``MATCH_RECOGNIZE_TABLE(TABLE(t), body => '<the clause's body>')``, which the
shim's parser also writes for ``FROM t MATCH_RECOGNIZE ( … )``.

``analyze`` (:mod:`.mr_plan`) parses the body on the driver, asks Spark to partition the rows by
its PARTITION BY, to order them by its ORDER BY (then ``tie_break``), and to compute the body's
row-local parts as hidden columns (:mod:`.mr_split`, ``AnalyzeResult.select``); each task runs
an :class:`~ceql.spark.udtf.mr_runner.MrRunner` per partition. The JVM shim references
:class:`MatchRecognizeTable` by name (its entry in ``ceql.constants.TABLE_FUNCTIONS``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.udtf import (
    AnalyzeArgument,
    AnalyzeResult,
    OrderingColumn,
    PartitioningColumn,
    SelectedColumn,
)

import ceql
from ceql.constants import CALL_ARGUMENT, MATCH_RECOGNIZE_TABLE, OPTION_TIE_BREAK
from ceql.mr import MatchRecognizeQuery
from ceql.spark.errors import MatchCeqlError, TieOrderWarning
from ceql.spark.notices import key_of, say
from ceql.spark.udtf.base import ArrowTableFunction, call_options, refused_in_analyze
from ceql.spark.udtf.call import CallInfo, quote_identifier
from ceql.spark.udtf.mr_plan import USAGE, MrSpec, plan_recognize
from ceql.spark.udtf.mr_runner import MrRunner
from ceql.spark.udtf.mr_split import bind

__all__ = ["MatchRecognizeTable", "RecognizeAnalysis", "analyze_call", "result_of"]

#: The named argument ``ceql.spark.match_recognize`` adds: its caller's process has said the
#: analysis warnings already.
WARNED_ARGUMENT = "_warned"


@dataclass
class RecognizeAnalysis(AnalyzeResult):
    """``analyze``'s result, handed to every task: the plan of the call."""

    spec: MrSpec | None = None


def analyze_call(args: tuple[AnalyzeArgument, ...], kwargs: Mapping[str, AnalyzeArgument]
                 ) -> MrSpec:
    """The plan of one call (what ``analyze`` decides)."""
    schema, options = call_options(MATCH_RECOGNIZE_TABLE, USAGE, args, kwargs)
    call = CallInfo.from_json(options.get(CALL_ARGUMENT))
    options.pop(WARNED_ARGUMENT, None)
    return plan_recognize(schema, options, call)


def unordered_words(spec: MrSpec) -> str | None:
    """The warning for a body without ORDER BY and without ``tie_break`` (None otherwise)."""
    if spec.order or spec.tie_columns:
        return None
    return (f"{MATCH_RECOGNIZE_TABLE}: the body has no ORDER BY, so each partition's rows come "
            "in the order Spark reads them, which can change from run to run, and so can the "
            f"matches; add ORDER BY to the body, or name columns that order the rows: "
            f"{OPTION_TIE_BREAK} => 'seq'.")


def result_of(spec: MrSpec) -> RecognizeAnalysis:
    """What ``analyze`` returns for ``spec``: the schema, the partitioning, the ordering and
    the columns Spark computes (the input's, then the hidden ones)."""
    body = spec.split.body
    order = [OrderingColumn(quote_identifier(c), ascending=not k.descending,
                            overrideNullsFirst=k.nulls_first)
             for c, k in zip(spec.order, body.order_by, strict=True)]
    order += [OrderingColumn(quote_identifier(c)) for c in spec.tie_columns]
    return RecognizeAnalysis(
        schema=spec.schema,
        withSinglePartition=not spec.partition,
        partitionBy=[PartitioningColumn(quote_identifier(c)) for c in spec.partition],
        orderBy=order,
        select=[SelectedColumn(name=sql, alias=alias) for sql, alias in spec.select],
        spec=spec)


class MatchRecognizeTable(ArrowTableFunction):
    """MATCH_RECOGNIZE_TABLE: SQL's row pattern recognition over a table, one Spark partition
    at a time."""

    NAME = MATCH_RECOGNIZE_TABLE

    @staticmethod
    def analyze(*args: AnalyzeArgument, **kwargs: AnalyzeArgument) -> AnalyzeResult:
        """Parse the body, derive the output schema, request partitioning, ordering and the
        row-local columns Spark computes."""
        warned = kwargs.get(WARNED_ARGUMENT) is not None
        try:
            spec = analyze_call(args, kwargs)
        except MatchCeqlError as e:
            refused_in_analyze(MATCH_RECOGNIZE_TABLE, e)
        except ceql.CeqlError as e:  # the body's: its kind named, as a task names the engine's
            refused_in_analyze(MATCH_RECOGNIZE_TABLE, MatchCeqlError(
                f"{MATCH_RECOGNIZE_TABLE}: {type(e).__name__}: {e}"))
        words = unordered_words(spec)
        if words is not None and not warned:
            say(key_of(spec.text, TieOrderWarning.__name__), TieOrderWarning, words)
        return result_of(spec)

    def __init__(self, analysis: RecognizeAnalysis) -> None:
        super().__init__()
        assert analysis.spec is not None
        self._spec = analysis.spec
        self._query: MatchRecognizeQuery | None = None

    def partition_columns(self) -> tuple[str, ...]:
        """The PARTITION BY columns of the body."""
        return self._spec.partition

    def _compiled(self, first: dict[str, Any]) -> MatchRecognizeQuery:
        """The engine's query, its Spark constants read from a row (once per instance)."""
        if self._query is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ceql.CeqlWarning)
                self._query = MatchRecognizeQuery(bind(self._spec.split, first))
        return self._query

    def runner(self, key: tuple[Any, ...]) -> MrRunner:
        """The evaluation of one partition."""
        return MrRunner(self._spec, self._compiled, key)
