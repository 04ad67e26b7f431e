"""Spark's errors for a MATCH_CEQL that its session cannot run, told in ceql's words.

Without ceql's extension — a session started without it, or a Spark Connect server started
without it — Spark's own parser reads ``MATCH_CEQL( <CEQL> )`` and stops inside the CEQL with a
``PARSE_SYNTAX_ERROR`` about some word of the query (and at the ``(`` of ``FROM t
MATCH_RECOGNIZE ( … )``); a session where MATCH_CEQL was never
registered says it cannot resolve the function; and ceql's Python UDTF (what
:func:`ceql.spark.enable` registers in a Connect session without the extension), which asks
Spark for the query's partitioning itself, is refused a ``TABLE(t) PARTITION BY``.
:func:`refused` finds these in the text of Spark's exception (:func:`ceql.spark.unwrap` calls
it), so the user reads what to do instead.
"""

from __future__ import annotations

import re

from ceql.spark.inline_calls import inline_calls, inside_mr_clause

__all__ = ["INLINE_NEEDS_EXTENSION", "MR_NEEDS_EXTENSION", "NOT_REGISTERED",
           "PARTITION_IN_QUERY", "inside_inline_call", "refused"]

INLINE_NEEDS_EXTENSION = (
    "MATCH_CEQL( <CEQL> ) with the query written inline needs ceql's extension where Spark "
    "parses the statement (for Spark Connect: in the server), and this session's parser read "
    "the query as SQL. Start Spark with ceql.spark.configure(builder) (a Spark Connect server "
    "with the settings of ceql.spark.server_conf()), keeping spark.ceql.parser.enabled true; "
    "or write MATCH_CEQL(TABLE(t), query => '<CEQL>') after ceql.spark.enable(spark).")
MR_NEEDS_EXTENSION = (
    "FROM t MATCH_RECOGNIZE ( ... ) needs ceql's extension where Spark parses the statement "
    "(for Spark Connect: in the server), and this session's parser read the clause as SQL. "
    "Start Spark with ceql.spark.configure(builder) (a Spark Connect server with the settings "
    "of ceql.spark.server_conf()), keeping spark.ceql.parser.enabled true.")
NOT_REGISTERED = (
    "MATCH_CEQL is not a function of this session: call ceql.spark.enable(spark) to register "
    "MATCH_CEQL(TABLE(t), query => '<CEQL>'), or start Spark with ceql's jar and extension "
    "(ceql.spark.configure(builder); a Spark Connect server with the settings of "
    "ceql.spark.server_conf()). ceql.spark.match(df, query) needs neither.")
PARTITION_IN_QUERY = (
    "MATCH_CEQL without ceql's extension (the Python table function ceql.spark.enable "
    "registers in a Spark Connect session) partitions and orders its input as the query says: "
    "drop the table argument's PARTITION BY and ORDER BY, and write PARTITION BY [column] in "
    "the CEQL query (the time column: time => 'column'), e.g. MATCH_CEQL(TABLE(t), query => "
    "'SELECT * FROM t WHERE … PARTITION BY [user]', time => 'ts').")

_PARSE_ERROR = "[PARSE_SYNTAX_ERROR]"
_TABLE_PARTITIONED = re.compile(
    r"\[TABLE_VALUED_FUNCTION_REQUIRED_METADATA_INCOMPATIBLE_WITH_CALL\][^\n]*"
    r"table function MATCH_CEQL\b", re.I)
_UNRESOLVED = re.compile(r"\[UNRESOLVABLE_TABLE_VALUED_FUNCTION\][^\n]*`MATCH_CEQL`", re.I)
_POSITION = re.compile(r"\(line (\d+), pos (\d+)\)")
_SQL_HEADER = re.compile(r"== SQL[^\n]*==\n")
_CARET = re.compile(r"-*\^+")
_QUOTES = "'\"`"


def refused(text: str) -> str | None:
    """ceql's error message for Spark's exception text when it says MATCH_CEQL is not registered,
    that the Python UDTF was given a partitioned table argument, or that the parser failed
    inside an inline ``MATCH_CEQL( SELECT … )`` or at an inline ``MATCH_RECOGNIZE (``; else
    None."""
    if _UNRESOLVED.search(text):
        return NOT_REGISTERED
    if _TABLE_PARTITIONED.search(text):
        return PARTITION_IN_QUERY
    if _PARSE_ERROR not in text:
        return None
    at, header = _POSITION.search(text), _SQL_HEADER.search(text)
    if at is None or header is None:
        return None
    line, pos = int(at.group(1)), int(at.group(2))
    # Spark prints the statement's lines up to the error's, then a caret line under it
    lines: list[str] = []
    for row in text[header.end():].split("\n"):
        if _CARET.fullmatch(row):
            break
        lines.append(row)
    if not 1 <= line <= len(lines):
        return None
    before = "\n".join([*lines[:line - 1], lines[line - 1][:pos]])
    if inside_inline_call(before):
        return INLINE_NEEDS_EXTENSION
    return MR_NEEDS_EXTENSION if inside_mr_clause(before) else None


def inside_inline_call(before: str) -> bool:
    """Whether the end of SQL text ``before`` lies inside the parentheses of a
    ``MATCH_CEQL( SELECT …`` call, found as the shim finds calls (:mod:`._inline_calls`)."""
    return any(call.end is None for call in inline_calls(before))


def closing_paren(text: str, start: int) -> int | None:
    """The index of the parenthesis closing the one just before ``start`` in ``text``
    (nested ones counted; quoted text, with backslash escapes, skipped), or None when the
    text ends first."""
    depth, quote, escaped = 1, "", False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in _QUOTES:
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
    return None
