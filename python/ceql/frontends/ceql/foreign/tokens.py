"""The tokens of a failed parse (:class:`Tok`, lexed on from the refused one), where the parser
stood among them (:func:`mode_of`), the token classes the rules of the other modules test, and
the tokens written back as tidy CEQL text (:func:`join`), which every rewrite uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lark import Token
from lark.exceptions import UnexpectedCharacters

from ..lalr import lalr

__all__ = ["ARITH", "CLAUSES", "COMPARE", "CONDITION_TOKENS", "EXPR_TOKENS", "FORMULA_TOKENS",
           "FUNCTIONS", "LITERALS", "LOOKAHEAD", "NAMES", "NOT_SUPPORTED", "SEMI_NOTE", "SEPS",
           "SEQ_BOUNDARY", "SOFT_ATTRS", "Hint", "Tok", "is_function", "join", "lex_after",
           "mode_of", "source", "tok"]


@dataclass(frozen=True)
class Tok:
    """A token: its terminal name, text and offsets in the query."""

    type: str
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Hint:
    """A message and the span ``[start, end)`` of the query the caret covers."""

    message: str
    start: int
    end: int


def tok(t: Token) -> Tok:
    """A lark token as a :class:`Tok`."""
    return Tok(t.type, str(t), t.start_pos or 0, t.end_pos or 0)


#: How many tokens after the refused one are read to build a rewrite.
LOOKAHEAD = 400


def lex_after(text: str, pos: int, limit: int = LOOKAHEAD) -> tuple[list[Tok], bool]:
    """Up to ``limit`` tokens of ``text`` from offset ``pos``; True if they reach the end."""
    out: list[Tok] = []
    try:
        for t in lalr().lex(text[pos:]):
            if len(out) == limit:
                return out, False
            out.append(Tok(t.type, str(t), pos + (t.start_pos or 0), pos + (t.end_pos or 0)))
    except UnexpectedCharacters:
        return out, False
    return out, True


CLAUSES = {"SELECT", "FROM", "WHERE", "PARTITION", "WITHIN", "CONSUME", "LIMIT"}


NAMES = {"NAME", "QUOTED_NAME"}


SEPS = {"SEMICOLON", "COLON"}


LITERALS = {"NUMBER", "STRING", "TRUE", "FALSE"}


ARITH = {"PLUS", "MINUS", "STAR", "SLASH", "PERCENT"}


SEQ_BOUNDARY = {"OR", "AND", "FILTER", "PARTITION", "WITHIN", "CONSUME", "LIMIT"}


FORMULA_TOKENS = NAMES | SEPS | {"PLUS", "COLONPLUS", "AS", "GT", "LPAR", "RPAR", "OR", "AND",
                                 "NOT"}


NOT_SUPPORTED = "is not supported in CEQL"


SEMI_NOTE = "';' lets other events come between, ':' does not"


def mode_of(tokens: Sequence[Tok]) -> str:
    """Where the parser stands after ``tokens``: the clause, FILTER, or BRACKET (inside x[…])."""
    mode = "START"
    stack: list[str] = []
    for i, t in enumerate(tokens):
        kind = t.type
        if kind in CLAUSES and not (kind == "PARTITION" and i and tokens[i - 1].type == "BY"):
            mode = kind
        elif kind == "FILTER":
            mode = "FILTER"
        elif kind in ("LPAR", "LBRACE"):
            stack.append(mode)
        elif kind == "LSQB":
            stack.append(mode)
            mode = "BRACKET"
        elif kind in ("RPAR", "RSQB", "RBRACE") and stack:
            mode = stack.pop()
    return mode


_NO_SPACE_AFTER = {"LPAR", "LSQB", "LBRACE", "DOT"}


_NO_SPACE_BEFORE = {"RPAR", "RSQB", "RBRACE", "COMMA", "LSQB", "DOT"}


#: The functions of predicates (``PREV(attr)`` and the aggregates), as written upper case.
FUNCTIONS = ("PREV", "COUNT", "SUM", "AVG", "MIN", "MAX", "FIRST", "LAST")


_OPERATORS = {"PLUS", "MINUS", "STAR", "SLASH", "PERCENT", "EQ", "EQEQ", "NE", "LTGT", "LT",
              "LE", "GT", "GE", "COMMA", "LPAR", "LSQB", "LBRACE", "AND", "OR", "NOT", "IN",
              "LIKE"}


def join(tokens: Sequence[Tok], in_pred: bool = False) -> str:
    """``tokens`` as tidy CEQL text (comments dropped, one space between words); ``in_pred``
    when they start inside ``x[…]``."""
    out: list[str] = []
    depth = 1 if in_pred else 0  # inside x[...]
    prev: Tok | None = None
    unary = False  # prev is a unary minus
    for t in tokens:
        postfix = depth == 0 and t.type in ("PLUS", "COLONPLUS", "GT")
        glued = prev is not None and (
            (depth == 0 and prev.type == "GT")
            or (prev.type == "MINUS" and t.type == "NUMBER" and unary)
            or (t.type == "LPAR" and is_function(prev)))
        if prev is not None and not (postfix or glued or t.type in _NO_SPACE_BEFORE
                                     or prev.type in _NO_SPACE_AFTER):
            out.append(" ")
        out.append(t.text)
        unary = t.type == "MINUS" and (prev is None or prev.type in _OPERATORS)
        if t.type == "LSQB":
            depth += 1
        elif t.type == "RSQB":
            depth = max(0, depth - 1)
        prev = t
    return "".join(out)


def is_function(t: Tok) -> bool:
    """True for a token that names a function of predicates (``PREV``, ``COUNT``, ``MAX``…)."""
    return t.type in ("NAME", "MAX", "LAST") and t.text.upper() in FUNCTIONS


def source(text: str, first: Tok, last: Tok) -> str:
    """The query's text from ``first`` to ``last``, on one line."""
    return " ".join(text[first.start:last.end].split())


EXPR_TOKENS = NAMES | LITERALS | ARITH | {"LPAR", "RPAR"} | {
    "ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT", "NONE", "EVENTS", "EVENT", "INTERVAL", "RANGE",
    "HOURS", "HOUR", "MINUTES", "MINUTE", "SECONDS", "SECOND", "MILLISECONDS", "MILLISECOND"}


COMPARE = {"EQ", "EQEQ", "NE", "LTGT", "LT", "LE", "GT", "GE"}


CONDITION_TOKENS = EXPR_TOKENS | COMPARE | {"AND", "OR", "NOT", "IN", "LIKE", "LBRACE",
                                            "RBRACE", "COMMA", "DOT"}


#: Keywords the grammar accepts as attribute names (``attr_name``).
SOFT_ATTRS = frozenset({"ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT", "NONE", "EVENTS",
                        "EVENT", "INTERVAL", "RANGE", "HOURS", "HOUR", "MINUTES", "MINUTE",
                        "SECONDS", "SECOND", "MILLISECONDS", "MILLISECOND", "DISTINCT"})
