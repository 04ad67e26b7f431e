"""MATCH_RECOGNIZE syntax errors in plain words: what was found, what the grammar expected
there, where (line, column, caret), through
:mod:`ceql.frontends.syntax`."""

from __future__ import annotations

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
    "NAME": "a name",
    "QUOTED_NAME": "a name",
    "NUMBER": "a number",
    "STRING": "a string",
    "CMP": "a comparison (=, <>, <, <=, >, >=)",
}
_PUNCT = {
    "EXCL_OPEN": "{-", "EXCL_CLOSE": "-}", "EQ": "=", "CONCAT": "||", "PIPE": "|",
    "CARET": "^", "DOLLAR": "$", "QMARK": "?", "PLUS": "+", "MINUS": "-", "STAR": "*",
    "SLASH": "/", "PERCENT": "%", "LPAR": "(", "RPAR": ")", "LBRACE": "{", "RBRACE": "}",
    "COMMA": ",", "DOT": ".",
}
_CLAUSES = ("PARTITION BY", "ORDER BY", "MEASURES", "ONE ROW PER MATCH / ALL ROWS PER MATCH",
            "AFTER MATCH SKIP", "PATTERN", "WITHIN", "SUBSET", "DEFINE")
#: Keywords that can begin an expression, so a column of that name needs backquotes there.
_LEADING_KEYWORDS = frozenset({"CASE", "CAST", "INTERVAL", "TIMESTAMP", "RUNNING", "FINAL"})
_CLAUSE_WORDS: dict[str, int] = {
    "PARTITION": 0, "ORDER": 1, "MEASURES": 2, "ONE": 3, "ALL": 3, "AFTER": 4, "PATTERN": 5,
    "WITHIN": 6, "SUBSET": 7, "DEFINE": 8}


def _keyword(term: str) -> str:
    return term.replace("_", " ") if term != "MATCH_RECOGNIZE" else term


def _found(tok: Token | None) -> str:
    if tok is None or tok.type == "$END":
        return "end of query"
    if tok.type in ("NAME", "QUOTED_NAME"):
        return f"name {show_token(tok)}"
    if tok.type == "NUMBER":
        return f"number {tok}"
    if tok.type == "STRING":
        return f"string {show_token(tok)}"
    if tok.type.isalpha() and tok.type.isupper() and tok.type not in {*_PUNCT, "CMP"}:
        return tok.type
    return show_token(tok)


def _misplaced_clause(bad: Token, accepted: list[Token]) -> str | None:
    """A clause keyword out of the standard's order, or given twice."""
    word = str(bad).upper()
    rank = _CLAUSE_WORDS.get(word)
    if rank is None:
        return None
    seen = [_CLAUSE_WORDS[str(t).upper()] for t in accepted
            if t.type == str(t).upper() and str(t).upper() in _CLAUSE_WORDS]
    name = _CLAUSES[rank]
    if rank in seen:
        return f"{name} appears twice: each clause may be given at most once"
    if seen and max(seen) > rank:
        return (f"{name} must come before {_CLAUSES[max(seen)]}: the clauses go in the order "
                f"{', '.join(_CLAUSES)}")
    return None


def diagnose(text: str, exc: LarkError) -> CeqlSyntaxError:
    """Explain the first syntax error of ``text`` (``exc`` is lark's) in plain words."""
    accepted, bad, terms = read_until_refused(lalr(), text)
    prev = accepted[-1] if accepted else None
    expected = expected_in_words(terms, _WORDS, _PUNCT, _keyword)
    if isinstance(exc, UnexpectedCharacters) and bad is None:
        pos = exc.pos_in_stream or 0
        char = text[pos] if pos < len(text) else ""
        after = f" after {show_token(prev)}" if prev is not None else ""
        message = f"Unexpected character {char!r}{after}"
        if char == "'":
            message = ("Unterminated string: the quote opened here is never closed (inside a "
                       "string, write '' for a quote)")
        elif char == '"':
            message += (": write strings in single quotes ('x') and names that need quoting "
                        "in backquotes (`my column`)")
        elif expected:
            message += f": expected {or_list(expected)}"
        return syntax_error(text, message, exc.line, exc.column, expected=tuple(expected))
    at_end = bad is None or bad.type == "$END"
    if at_end:
        if prev is None:
            return syntax_error(text, "Empty query: expected SELECT, MATCH_RECOGNIZE or the "
                                "clauses of MATCH_RECOGNIZE (… PATTERN (…) …)", 1, 1,
                                expected=tuple(expected))
        line, column, width = prev.end_line or 1, prev.end_column or 1, 1
    else:
        assert bad is not None
        line, column, width = bad.line or 1, bad.column or 1, token_width(bad)
    after = f" after {show_token(prev)}" if prev is not None else " at the start"
    message = f"Expected {or_list(expected)}{after}, found {_found(None if at_end else bad)}"
    if bad is not None and not at_end:
        clause = _misplaced_clause(bad, accepted)
        keyword = (bad.type not in _PUNCT and bad.type != "CMP" and bad.type.isalpha()
                   and bad.type.isupper())
        if clause is not None:
            message = clause
        elif (bad.type == "PIPE" and prev is not None
              and prev.type in ("PIPE", "LPAR", "COMMA", "EXCL_OPEN")):
            message += ": an alternative cannot be empty; write () for the empty pattern"
        elif keyword and "RPAR" in terms and str(bad).upper() in {*_CLAUSE_WORDS, "AS"}:
            message += ": a parenthesis opened before it is not closed"
        elif keyword and "NAME" in terms:
            message += (f": {bad!s} is a keyword here; write it in backquotes "
                        f"(`{bad!s}`) to use it as a name")
        elif prev is not None and prev.type in _LEADING_KEYWORDS:
            message += (f": {prev.type} is a keyword here; write `{prev!s}` in backquotes to "
                        "use it as a column name")
    return syntax_error(text, message, line, column, width, tuple(expected))
