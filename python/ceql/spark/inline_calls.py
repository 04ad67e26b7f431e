"""Where inline ``MATCH_CEQL( <CEQL> )`` calls lie in SQL text, as ceql's Spark shim finds them.

The shim (``CeqlSyntax`` in jvm-shim/) reads SQL with Spark's own lexer; this is the same
reading in Python, from Spark's lexer grammar, for what runs without the shim (see
:mod:`._inline`): outside a call, Spark's rules — string literals ``'…'`` and ``"…"`` with
backslash escapes, raw strings ``R'…'`` and ``r"…"``, back-quoted names, ``--`` comments (a
backslash at a line's end continues them), ``/* … */`` comments (nested) but not hints ``/*+``,
which are code; nothing after a quote that has no end. A call is a ``MATCH_CEQL`` word (not after
a ``.``), ``(``, then the word SELECT. Inside it, CEQL's rules (strings ``'…'`` with ``''``,
back-quoted names, ``--`` and non-nesting ``/* … */`` comments) up to its ``)`` at depth 0, or up
to a ``, name =>`` that starts the options (SQL again) and the ``)`` closing them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ceql.constants import MR_CLAUSE, TABLE_FUNCTIONS

__all__ = ["InlineCall", "inline_calls", "inside_mr_clause"]

_FUNCTIONS = frozenset(f.name.upper() for f in TABLE_FUNCTIONS if f.inline_ceql)
#: Spark's WS token
_SPACE = frozenset(" \t\n\f\r\u000b\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
                   "\u2007\u2008\u2009\u200a\u2028\u202f\u205f\u3000")
#: Spark's IDENTIFIER token: letters, digits, '_'; or letters, '://' and a path
_WORD = re.compile(r"[^\W\d_]+://[\w/\-.?=&#%]+|(?:[^\W\d_]|[0-9_])+")
_QUOTES = "'\""


@dataclass(frozen=True)
class InlineCall:
    """One inline call: the function's name at ``start``, its CEQL text from ``body``, and
    ``end`` just after its closing ``)`` (None when the text ends first)."""

    start: int
    body: int
    end: int | None


def inline_calls(sql: str) -> list[InlineCall]:
    """The inline calls of ``sql`` in text order (after an unclosed one, none)."""
    out: list[InlineCall] = []
    pos = 0
    while True:
        toks = list(_tokens(sql, pos))
        for k, (kind, start, end) in enumerate(toks):
            if kind == "stop":
                return out
            if (kind == "word" and sql[start:end].upper() in _FUNCTIONS
                    and (k == 0 or toks[k - 1][0] != ".") and toks[k + 1][0] == "("
                    and toks[k + 2][0] == "word"
                    and sql[toks[k + 2][1]:toks[k + 2][2]].upper() == "SELECT"):
                call = InlineCall(start, toks[k + 2][1], _ceql_end(sql, toks[k + 2][1]))
                out.append(call)
                if call.end is None:
                    return out
                pos = call.end
                break
        else:
            return out


def inside_mr_clause(sql: str) -> bool:
    """Whether the end of ``sql`` lies just after the word of an inline ``MATCH_RECOGNIZE (``
    clause (a word among Spark's tokens, not after a ``.``) or inside its parentheses (read by
    MATCH_RECOGNIZE's rules: strings, quoted names, comments)."""
    toks = list(_tokens(sql, 0))
    for k, (kind, start, end) in enumerate(toks):
        if kind == "stop":
            return False
        if (kind == "word" and sql[start:end].upper() == MR_CLAUSE
                and (k == 0 or toks[k - 1][0] != ".")):
            after = toks[k + 1]
            if after[0] == "end" or (after[0] == "(" and _ceql_end(sql, after[2], False) is None):
                return True
    return False


def _tokens(sql: str, i: int) -> Iterator[tuple[str, int, int]]:
    """Spark's tokens of ``sql`` from ``i`` without spaces and comments, as (kind, start,
    end): kind ``word``, ``string``, ``name``, ``=>``, a character, ``stop`` (a quote with no
    end), then ``end``."""
    n = len(sql)
    while i < n:
        c = sql[i]
        if c in _SPACE:
            i += 1
        elif sql.startswith("--", i):
            i = _line_comment_end(sql, i)
        elif sql.startswith("/*", i) and not sql.startswith("/*+", i):
            i = _comment_end(sql, i)
        elif c in _QUOTES or c == "`":
            e = _string_end(sql, i) if c != "`" else _name_end(sql, i)
            if e is None:
                yield "stop", i, n
                return
            yield ("string" if c != "`" else "name"), i, e
            i = e
        elif (m := _WORD.match(sql, i)) is not None:
            e = m.end()
            raw = m.group() in ("R", "r") and e < n and sql[e] in _QUOTES
            close = sql.find(sql[e], e + 1) if raw else -1
            if close >= 0:
                yield "string", i, close + 1
                i = close + 1
            else:
                yield "word", i, e
                i = e
        elif sql.startswith("=>", i):
            yield "=>", i, i + 2
            i += 2
        else:
            yield c, i, i + 1
            i += 1
    yield "end", n, n


def _line_comment_end(sql: str, i: int) -> int:
    n, j = len(sql), i + 2
    while j < n and sql[j] not in "\r\n":
        j += 2 if sql.startswith("\\\n", j) else 1
    if sql.startswith("\r", j):
        j += 1
    return j + 1 if sql.startswith("\n", j) else j


def _comment_end(sql: str, i: int) -> int:
    depth, j, n = 1, i + 2, len(sql)
    while j < n:
        if sql.startswith("/*", j) and not sql.startswith("/*+", j):
            depth, j = depth + 1, j + 2
        elif sql.startswith("*/", j):
            depth, j = depth - 1, j + 2
            if depth == 0:
                return j
        else:
            j += 1
    return n


def _string_end(sql: str, i: int) -> int | None:
    q, j, n = sql[i], i + 1, len(sql)
    while j < n:
        if sql[j] == "\\":
            j += 2
        elif sql[j] == q:
            return j + 1
        else:
            j += 1
    return None


def _name_end(sql: str, i: int) -> int | None:
    j = i + 1
    while (e := sql.find("`", j)) >= 0:
        if not sql.startswith("``", e):
            return e + 1
        j = e + 2
    return None


def _ceql_end(sql: str, i: int, options: bool = True) -> int | None:
    """Just after the ``)`` ending the call whose CEQL text starts at ``i`` (``options``: a
    ``, name =>`` ends the text; MATCH_RECOGNIZE's body, read by the same rules, has none)."""
    depth, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c == "'":
            i = _ceql_string_end(sql, i)
        elif c == "`":
            i = _name_end(sql, i) or n
        elif sql.startswith("--", i):
            e = sql.find("\n", i)
            i = n if e < 0 else e + 1
        elif sql.startswith("/*", i):
            e = sql.find("*/", i + 2)
            i = n if e < 0 else e + 2
        elif c == "(":
            depth, i = depth + 1, i + 1
        elif c == ")" and depth > 0:
            depth, i = depth - 1, i + 1
        elif c == ")":
            return i + 1
        elif c == "," and options and depth == 0 and _starts_option(sql, i + 1):
            return _options_end(sql, i + 1)
        else:
            i += 1
    return None


def _ceql_string_end(sql: str, i: int) -> int:
    j, n = i + 1, len(sql)
    while (e := sql.find("'", j)) >= 0:
        if not sql.startswith("''", e):
            return e + 1
        j = e + 2
    return n


def _starts_option(sql: str, i: int) -> bool:
    toks = _tokens(sql, i)
    first, second = next(toks), next(toks, ("end", 0, 0))
    return (first[0] == "word" and re.fullmatch(r"\w+", sql[first[1]:first[2]]) is not None
            and second[0] == "=>")


def _options_end(sql: str, i: int) -> int | None:
    depth = 0
    for kind, _, end in _tokens(sql, i):
        if kind in ("stop", "end"):
            return None
        if kind == "(":
            depth += 1
        elif kind == ")":
            if depth == 0:
                return end
            depth -= 1
    return None
