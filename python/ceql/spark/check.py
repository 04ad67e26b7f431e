"""Names a query expects that a DataFrame never carries: the event types (and streams) of the
query missing from its type (and stream) column, found on the driver by one aggregation.

MATCH_CEQL's tasks cannot tell the user (what a task logs, nobody reads): a misspelt type
gives an empty answer and no word. :func:`check` says it before or after the run, at the
cost of one pass over the input (two when a name is missing: the values seen are listed).
"""

from __future__ import annotations

import warnings
from typing import Any

import ceql
from ceql.constants import DEFAULT_STREAM_COLUMN, DEFAULT_TIME_COLUMN, DEFAULT_TYPE_COLUMN
from ceql.runtime import NameSet, unseen_names_message
from ceql.spark.errors import MatchCeqlError
from ceql.spark.udtf.call import quote_identifier

__all__ = ["SEEN_LISTED", "check", "unseen_message"]

#: Distinct values of a column read to list what was seen, at most.
SEEN_LISTED = 1000


def unseen_message(df: Any, query: ceql.Query, *, type_col: str = DEFAULT_TYPE_COLUMN,
                   stream_col: str = DEFAULT_STREAM_COLUMN) -> str | None:
    """What :func:`check` warns, or None when every name of the query occurs in ``df``."""
    from pyspark.sql import functions as F

    columns = df.columns
    if type_col not in columns:
        raise MatchCeqlError(
            f"ceql.spark.check: the input has no column {type_col!r} for the event type; its "
            f"columns are {', '.join(columns) or '(none)'} (name one with type_col=...).")
    # the query's names: what an evaluator that has read nothing has not seen
    wanted = query.evaluator(time=DEFAULT_TIME_COLUMN).unseen()
    kinds = [("t", type_col, wanted.types)]
    if stream_col in columns and wanted.streams:
        kinds.append(("s", stream_col, wanted.streams))
    aggs = [F.count(F.lit(1)).alias("n")]
    for key, col, names in kinds:
        c = F.col(quote_identifier(col))
        aggs.append(F.collect_set(F.when(c.isin(list(names)), c)).alias(key))
    row = df.agg(*aggs).collect()[0]
    missing = {key: tuple(n for n in names if n not in set(row[key]))
               for key, _, names in kinds}
    if not any(missing.values()):
        return None
    seen = {key: tuple(r[0] for r in df.select(quote_identifier(col)).where(
                F.col(quote_identifier(col)).isNotNull()).distinct().limit(SEEN_LISTED)
                .collect()) if missing[key] else ()
            for key, col, _ in kinds}
    message: str | None = unseen_names_message(
        NameSet(missing["t"], missing.get("s", ())), NameSet(seen["t"], seen.get("s", ())),
        int(row["n"]))
    return message


def check(df: Any, query: str | ceql.Query, *, type_col: str = DEFAULT_TYPE_COLUMN,
          stream_col: str = DEFAULT_STREAM_COLUMN) -> str | None:
    """Warn (:class:`ceql.UnseenNameWarning`) when an event type or stream of ``query`` never
    occurs in DataFrame ``df`` — a misspelling that MATCH_CEQL would answer with no match and
    no word; return the warning's text, or None when every name occurs.

    ``type_col`` is the event-type column, ``stream_col`` the stream column (checked when
    ``df`` has it). Runs one Spark job over ``df`` (a second one when a name is missing).
    """
    q = query if isinstance(query, ceql.Query) else ceql.compile(query)
    message = unseen_message(df, q, type_col=type_col, stream_col=stream_col)
    if message is not None:
        warnings.warn(message, ceql.UnseenNameWarning, stacklevel=2)
    return message
