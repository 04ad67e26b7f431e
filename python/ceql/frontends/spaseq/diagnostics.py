"""SPAseq syntax errors in plain words: what was found, what the grammar expected there, where
(line, column, caret), through :mod:`ceql.frontends.syntax`."""

from __future__ import annotations

from collections.abc import Iterable

from lark import Token
from lark.exceptions import LarkError, UnexpectedCharacters

from ...errors import CeqlSyntaxError
from ..syntax import (
    expected_in_words,
    or_list,
    read_until_refused,
    show_token,
    syntax_error,
    token_width,
)
from .lalr import lalr

__all__ = ["diagnose"]

_WORDS = {
    "VAR": "a variable (?x)",
    "IRIREF": "an IRI (<…> or prefix:name)",
    "PNAME_LN": "an IRI (<…> or prefix:name)",
    "PNAME_NS": "an IRI (<…> or prefix:name)",
    "INTEGER": "a number",
    "DECIMAL": "a number",
    "DOUBLE": "a number",
    "STRING1": "a string",
    "STRING2": "a string",
    "STRING_LONG1": "a string",
    "STRING_LONG2": "a string",
    "BLANK_NODE_LABEL": "a blank node",
    "ANON": "a blank node",
    "LANGTAG": "a language tag (@en)",
    "UNIT": "a time unit (HOURS, MINUTES, SECONDS, MILLISECONDS)",
    "FUNC_NAME": "a function",
    "CMP": "a comparison (=, !=, <, <=, >, >=)",
}
_PUNCT = {
    "OROR": "||", "ANDAND": "&&", "BANG": "!", "PIPE": "|", "AMP": "&", "PLUS": "+",
    "MINUS": "-", "STAR": "*", "SLASH": "/", "COMMA": ",", "SEMICOLON": ";", "COLON": ":",
    "DOT": ".", "LPAR": "(", "RPAR": ")", "LBRACE": "{", "RBRACE": "}", "LSQB": "[",
    "RSQB": "]", "DTYPE": "^^", "A": "a",
}
_KEYWORDS = frozenset({
    "PREFIX", "BASE", "SELECT", "WITHIN", "FROM", "STREAM", "WHERE", "SEQ", "DEFINE", "GPM",
    "ON", "FILTER", "OPTIONAL", "GRAPH", "UNION", "NOT", "IN"})
_SEQ_OPERATORS = frozenset({"COMMA", "SEMICOLON", "COLON", "PIPE", "AMP"})


def _name_role(prev: Token | None) -> str:
    """What a NAME is where the grammar wants one, from the token before it."""
    kind = prev.type if prev is not None else ""
    if kind in ("STREAM", "ON"):
        return "a stream name"
    return "a GPM name"


def _expected(terms: Iterable[str], prev: Token | None) -> list[str]:
    words = {**_WORDS, "NAME": _name_role(prev)}
    return expected_in_words(terms, words, _PUNCT,
                             lambda t: t.lower() if t in ("TRUE", "FALSE") else t)


def _found(tok: Token | None) -> str:
    if tok is None or tok.type == "$END":
        return "end of query"
    if tok.type == "NAME":
        return f"name {show_token(tok)}"
    if tok.type == "VAR":
        return f"variable {show_token(tok)}"
    if tok.type in ("INTEGER", "DECIMAL", "DOUBLE"):
        return f"number {tok}"
    if tok.type.startswith("STRING"):
        return f"string {show_token(tok)}"
    if tok.type in _KEYWORDS:
        return tok.type
    return show_token(tok)


def diagnose(text: str, exc: LarkError) -> CeqlSyntaxError:
    """Explain the first syntax error of ``text`` (``exc`` is lark's) in plain words."""
    accepted, bad, terms = read_until_refused(lalr(), text)
    prev = accepted[-1] if accepted else None
    expected = _expected(terms, prev)
    if isinstance(exc, UnexpectedCharacters) and bad is None:
        pos = exc.pos_in_stream or 0
        char = text[pos] if pos < len(text) else ""
        after = f" after {show_token(prev)}" if prev is not None else ""
        message = f"Unexpected character {char!r}{after}"
        if char in "'\"":
            message = "Unterminated string: the quote opened here is never closed on its line"
        elif expected:
            message += f": expected {or_list(expected)}"
        return syntax_error(text, message, exc.line, exc.column, expected=tuple(expected))
    at_end = bad is None or bad.type == "$END"
    if at_end:
        if prev is None:
            return syntax_error(text, "Empty query: expected PREFIX, BASE or SELECT", 1, 1,
                                expected=tuple(expected))
        line, column, width = prev.end_line or 1, prev.end_column or 1, 1
    else:
        assert bad is not None
        line, column, width = bad.line or 1, bad.column or 1, token_width(bad)
    after = f" after {show_token(prev)}" if prev is not None else " at the start"
    message = f"Expected {or_list(expected)}{after}, found {_found(None if at_end else bad)}"
    kind = "$END" if bad is None else bad.type
    if kind == "RPAR" and prev is not None and prev.type in _SEQ_OPERATORS and "NAME" in terms:
        message += f": SEQ cannot end with '{prev}'"
    elif kind in ("COMMA", "SEMICOLON", "COLON", "PLUS") and {"AMP", "PIPE", "RPAR"} <= terms:
        message += (": a parenthesised group in SEQ holds only & and |; write the sequence at "
                    "the top level of SEQ, and '+' after the group, e.g. (B & C)+")
    return syntax_error(text, message, line, column, width, tuple(expected))
