"""What both table functions' plans share: the description of a call that the shim (or
``ceql.spark.match``) writes into the named argument ``_table_call`` (:class:`CallInfo`), SQL
identifiers and strings quoted as Spark reads them, and a column named in a call resolved
against the input's schema."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.types import StructType

from ceql.constants import (
    CALL_BAD_PARTITION_BY,
    CALL_DESCENDING,
    CALL_NO_INPUT,
    CALL_ORDER_BY,
    CALL_ORDER_BY_COLUMN,
    CALL_PARTITION_BY,
    CALL_SINGLE_PARTITION,
    CALL_STREAMS,
    CALL_TABLE_NAME,
    INTERNAL_PREFIX,
)
from ceql.spark.errors import MatchCeqlError

__all__ = ["CallInfo", "quote_identifier", "resolve_column", "sql_string", "string_option"]


def quote_identifier(name: str) -> str:
    """``name`` as a Spark SQL identifier in backquotes."""
    return "`" + name.replace("`", "``") + "`"


def string_option(options: Mapping[str, Any], name: str, function: str) -> str | None:
    """The named argument ``name`` of a call of ``function`` (None when not given); refused
    unless a string literal."""
    v = options.get(name)
    if v is None:
        return None
    if not isinstance(v, str):
        raise MatchCeqlError(f"{function}: option {name} must be a string literal, got {v!r}; "
                             f"write {name} => '...'.")
    return v


def sql_string(text: str) -> str:
    """``text`` as a Spark SQL string expression that reads the same under either
    ``spark.sql.parser.escapedStringLiterals``: a literal, or, when ``text`` holds a quote or a
    backslash (which that setting reads differently), the cast of its UTF-8 bytes."""
    if "'" in text or "\\" in text:
        return f"CAST(X'{text.encode('utf-8', 'surrogatepass').hex().upper()}' AS STRING)"
    return f"'{text}'"


@dataclass(frozen=True)
class CallInfo:
    """What the SQL call said about its table argument (filled by the JVM shim or ``match``)."""

    partition_by: tuple[str, ...] = ()      # column names
    bad_partition_by: tuple[str, ...] = ()  # PARTITION BY expressions that are not columns
    order_by: tuple[str, ...] = ()          # SQL of each ORDER BY expression, in order
    order_by_column: str | None = None      # the first ORDER BY expression, if a column
    descending: bool = False                # some ORDER BY expression is DESC
    single_partition: bool = False          # WITH SINGLE PARTITION
    table_name: str | None = None           # TABLE(name): the events' type if no type column
    streams: tuple[str, ...] = ()           # FROM names merged by the shim
    no_input: bool = False                  # no table argument and no FROM name to read
    prefilter: bool = False                 # the shim applies a prefilter analyze writes

    @classmethod
    def from_json(cls, text: str | None) -> CallInfo:
        """Read the call description the JVM shim (or :func:`ceql.spark.match`) passes."""
        if not text:
            return cls()
        d: dict[str, Any] = json.loads(text)
        return cls(
            partition_by=tuple(d.get(CALL_PARTITION_BY, ())),
            bad_partition_by=tuple(d.get(CALL_BAD_PARTITION_BY, ())),
            order_by=tuple(d.get(CALL_ORDER_BY, ())),
            order_by_column=d.get(CALL_ORDER_BY_COLUMN),
            descending=bool(d.get(CALL_DESCENDING, False)),
            single_partition=bool(d.get(CALL_SINGLE_PARTITION, False)),
            table_name=d.get(CALL_TABLE_NAME),
            streams=tuple(d.get(CALL_STREAMS, ())),
            no_input=bool(d.get(CALL_NO_INPUT, False)),
        )

    def to_json(self) -> str:
        """The inverse of :meth:`from_json`."""
        return json.dumps({
            CALL_PARTITION_BY: list(self.partition_by),
            CALL_BAD_PARTITION_BY: list(self.bad_partition_by),
            CALL_ORDER_BY: list(self.order_by),
            CALL_ORDER_BY_COLUMN: self.order_by_column,
            CALL_DESCENDING: self.descending,
            CALL_SINGLE_PARTITION: self.single_partition,
            CALL_TABLE_NAME: self.table_name,
            CALL_STREAMS: list(self.streams),
            CALL_NO_INPUT: self.no_input,
        })


def resolve_column(name: str, schema: StructType, what: str, *, function: str = "MATCH_CEQL",
                   hint: str = "Name one of them.") -> str:
    """The schema's spelling of column ``name`` (Spark compares names case-insensitively);
    ``function`` and ``hint`` word the error for a column that is not there."""
    names = [f.name for f in schema.fields if not f.name.startswith(INTERNAL_PREFIX)]
    if name in names:
        return name
    folded = [n for n in names if n.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    raise MatchCeqlError(
        f"{function}: the {what} column {name!r} is not in the input table; its columns are "
        f"{', '.join(names) or '(none)'}.{' ' + hint if hint else ''}"
    )
