"""Plan one MATCH_RECOGNIZE_TABLE call (the driver-side half, run by ``analyze``): parse the
body, resolve its columns against the input, split its expressions between Spark and the engine
(:mod:`.mr_split`), say how Spark must partition and order the rows, and derive the output
schema the standard gives (docs/match_recognize.md, "Output"). Every MATCH_RECOGNIZE meaning
stays in :mod:`ceql.mr`.

Options (named arguments, constant strings): ``body`` (the clause's body; also the one unnamed
value), ``tie_break`` (columns, comma-separated, ordering rows the body's ORDER BY leaves equal).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.types import DataType, StructField, StructType

from ceql.constants import (
    CALL_ARGUMENT,
    INTERNAL_PREFIX,
    MATCH_RECOGNIZE_TABLE,
    OPTION_BODY,
    OPTION_QUERY,
    OPTION_TIE_BREAK,
    PREFILTER_ARGUMENT,
)
from ceql.errors import caret_snippet
from ceql.frontends.mr import ast as A
from ceql.frontends.mr import parse
from ceql.frontends.mr.errors import ClauseError, UnsupportedFunctionError
from ceql.mr import MatchRecognizeQuery, UnknownColumnError
from ceql.spark.errors import MatchCeqlError
from ceql.spark.udtf.call import CallInfo, quote_identifier, resolve_column, string_option
from ceql.spark.udtf.mr_split import Split, split_body
from ceql.spark.udtf.mr_types import expr_type

__all__ = ["OPTIONS", "USAGE", "MrSpec", "plan_recognize"]

#: The options MATCH_RECOGNIZE_TABLE takes, in the order messages list them.
OPTIONS = (OPTION_BODY, OPTION_TIE_BREAK)
USAGE = f"{MATCH_RECOGNIZE_TABLE}(TABLE(t), {OPTION_BODY} => 'PARTITION BY … PATTERN (…) …')"
_PYTHON_SUBSET = ("ABS, ROUND, UPPER, LOWER, COALESCE, CASE, CAST, arithmetic, comparisons "
                  "and time differences")


@dataclass(frozen=True)
class MrSpec:
    """What a task needs to run the body over its partition; built once by ``analyze``."""

    text: str                         # the body as given
    split: Split                      # the body the engine runs, and the hidden columns
    input_columns: tuple[str, ...]    # the input's columns, in order
    partition: tuple[str, ...]        # PARTITION BY, as the input spells them
    order: tuple[str, ...]            # ORDER BY columns, as the input spells them
    tie_columns: tuple[str, ...]      # tie_break columns
    schema: StructType                # the output's columns

    @property
    def select(self) -> tuple[tuple[str, str], ...]:
        """What Spark computes for the task: every input column, then the hidden ones, as
        (Spark SQL, alias) pairs (alias empty for an input column)."""
        return (*((quote_identifier(c), "") for c in self.input_columns), *self.split.select)


def _unknown_column(body: A.MatchRecognize, schema: StructType, name: str,
                    span: Any) -> UnknownColumnError:
    names = ", ".join(f.name for f in schema.fields if not f.name.startswith(INTERNAL_PREFIX))
    message = (f"No column {name!r} in the input table (its columns: "
               f"{names}); name one of these")
    if span is not None and span.line:
        width = max(1, span.end_column - span.column) if span.end_line == span.line else 1
        snippet = caret_snippet(body.text, span.line, span.column, width)
        message += f" (line {span.line}, column {span.column})\n{snippet}"
    return UnknownColumnError(message)


class _Columns:
    """The input's columns as MATCH_RECOGNIZE names them (any case; an exact spelling
    first), with the spans of the body's references for messages."""

    def __init__(self, body: A.MatchRecognize, schema: StructType) -> None:
        self.body = body
        self.schema = schema
        self.types = {f.name: f.dataType for f in schema.fields}
        self.spans: dict[str, Any] = {}
        for e in _expressions(body):
            for node in A.walk(e):
                if isinstance(node, A.Column):
                    self.spans.setdefault(node.name, node.span)

    def resolve(self, name: str) -> str:
        if name in self.types:
            return name
        folded = [n for n in self.types if n.lower() == name.lower()]
        if len(folded) == 1:
            return folded[0]
        raise _unknown_column(self.body, self.schema, name, self.spans.get(name))

    def type_of(self, name: str) -> DataType:
        return self.types[self.resolve(name)]

    def sql_type(self, name: str) -> str:
        return self.types[name].simpleString()


def _expressions(body: A.MatchRecognize) -> list[A.Expr]:
    return [*(d.condition for d in body.defines), *(m.expr for m in body.measures)]


def _engine_check(split: Split, text: str) -> None:
    """What the split leaves to the engine must be in the Python subset: compiled once here,
    so that an unsupported function between rows is refused with what to write instead."""
    try:
        MatchRecognizeQuery(split.body)
    except UnsupportedFunctionError as e:
        raise UnsupportedFunctionError(
            f"{e.message.rstrip('.')}: here it is applied to values of different rows "
            "(navigation, aggregates, CLASSIFIER(), columns of two variables), which ceql's "
            f"engine evaluates, with {_PYTHON_SUBSET} only, while Spark evaluates any function "
            "whose arguments read one row. Apply it to one row's columns (inside the "
            "navigation or aggregate: PREV(f(x)) rather than f(PREV(x))), or compute it in a "
            f"subquery of the input. Body: {text.strip()[:200]}") from None


def _check_names(body: A.MatchRecognize, output: list[str], inputs: list[str]) -> None:
    if body.rows_per_match != "ONE":
        lowered = {c.lower(): c for c in inputs}
        for m in body.measures:
            if m.name.lower() in lowered:
                raise ClauseError(
                    f"Measure {m.name!r} has the name of an input column "
                    f"({lowered[m.name.lower()]!r}): ALL ROWS PER MATCH outputs both; rename "
                    "the measure")
    seen: dict[str, str] = {}
    for n in output:
        if n.lower() in seen:
            raise MatchCeqlError(
                f"{MATCH_RECOGNIZE_TABLE}: output columns {seen[n.lower()]!r} and {n!r} clash "
                "(Spark does not tell apart names that differ only in case); rename one.")
        seen[n.lower()] = n


def plan_recognize(schema: StructType, options: Mapping[str, Any], call: CallInfo) -> MrSpec:
    """The plan of one call over input ``schema`` (raises :class:`MatchCeqlError`, or the
    body's :class:`ceql.CeqlError` with its caret)."""
    options = {k: v for k, v in options.items() if k not in (CALL_ARGUMENT, PREFILTER_ARGUMENT)}
    if OPTION_QUERY in options and OPTION_BODY not in options:  # the unnamed value
        options[OPTION_BODY] = options.pop(OPTION_QUERY)
    unknown = [k for k in options if k not in OPTIONS]
    if unknown:
        raise MatchCeqlError(f"{MATCH_RECOGNIZE_TABLE} has no option {unknown[0]}; its options "
                             f"are {', '.join(OPTIONS)}.")
    def option(name: str) -> str | None:
        return string_option(options, name, MATCH_RECOGNIZE_TABLE)

    text = option(OPTION_BODY)
    if text is None or not text.strip():
        raise MatchCeqlError(f"{MATCH_RECOGNIZE_TABLE} needs the MATCH_RECOGNIZE body: {USAGE}.")
    if call.partition_by or call.bad_partition_by or call.order_by or call.single_partition:
        raise MatchCeqlError(
            f"{MATCH_RECOGNIZE_TABLE}: write PARTITION BY and ORDER BY inside the body "
            f"({OPTION_BODY} => 'PARTITION BY k ORDER BY ts …'), not on the table argument.")
    tree = parse(text)  # CeqlSyntaxError / CeqlValidationError with their carets
    if isinstance(tree, A.Query):
        if tree.select:
            raise MatchCeqlError(
                f"{MATCH_RECOGNIZE_TABLE} gives MATCH_RECOGNIZE's own output columns: pass the "
                "body (or SELECT * FROM t MATCH_RECOGNIZE (…)) and pick columns outside.")
        tree = tree.body
    columns = _Columns(tree, schema)
    for e in _expressions(tree):  # every column the body names, in text order
        for node in A.walk(e):
            if isinstance(node, A.Column):
                columns.resolve(node.name)
    partition = tuple(columns.resolve(c) for c in tree.partition_by)
    order = tuple(columns.resolve(k.column) for k in tree.order_by)
    ties = tuple(dict.fromkeys(
        resolve_column(c.strip(), schema, "tie_break", function=MATCH_RECOGNIZE_TABLE)
        for c in (option(OPTION_TIE_BREAK) or "").split(",") if c.strip()))
    split = split_body(tree, columns.resolve, columns.sql_type)
    _engine_check(split, text)
    measures = [m.name for m in tree.measures]
    inputs = [f.name for f in schema.fields]
    if tree.rows_per_match == "ONE":
        output = [*tree.partition_by, *measures]
    else:
        lead = list(dict.fromkeys([*partition, *order]))
        output = [*lead, *measures, *(c for c in inputs if c not in lead)]
    if not output:
        raise ClauseError(
            "ONE ROW PER MATCH without PARTITION BY or MEASURES has no output column, and a "
            "Spark table has at least one: add a measure (MEASURES MATCH_NUMBER() AS m), or "
            "write ALL ROWS PER MATCH")
    _check_names(tree, output, inputs)
    return MrSpec(text=text, split=split, input_columns=tuple(inputs), partition=partition,
                  order=order, tie_columns=ties, schema=_schema(tree, output, columns))


def _schema(tree: A.MatchRecognize, output: list[str], columns: _Columns) -> StructType:
    """ONE ROW PER MATCH: the PARTITION BY columns then the measures; ALL ROWS PER MATCH: the
    PARTITION BY and ORDER BY columns, the measures, the other input columns. Every column
    nullable (Spark's Arrow writer needs one schema for every batch; unmatched rows have NULL
    measures)."""
    measures: dict[str, DataType] = {}
    for m in tree.measures:
        try:
            measures[m.name] = expr_type(m.expr, columns.type_of)
        except MatchCeqlError as e:
            raise MatchCeqlError(f"{MATCH_RECOGNIZE_TABLE}: measure {m.name}: {e}") from None
    return StructType([StructField(n, measures[n] if n in measures else columns.type_of(n), True)
                       for n in output])
