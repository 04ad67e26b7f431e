"""SPAseq syntax errors in plain words: what was found, what the grammar expected there, where
(line, column, caret), through CEQL's :func:`~ceql.frontends.ceql.diagnostics.syntax_error`."""

from __future__ import annotations

from collections.abc import Iterable

from lark import Token
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from ...errors import CeqlSyntaxError
from ..ceql.diagnostics import syntax_error, token_width
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
_SEQ_OPERATORS = frozenset({"COMMA", "SEMICOLON", "COLON", "PIPE", "AMP"})


def _name_role(prev: Token | None) -> str:
    """What a NAME is where the grammar wants one, from the token before it."""
    kind = prev.type if prev is not None else ""
    if kind in ("STREAM", "ON"):
        return "a stream name"
    return "a GPM name"


def _or_list(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} or {items[-1]}"


def _expected(terms: Iterable[str], prev: Token | None) -> list[str]:
    words: set[str] = set()
    keywords: set[str] = set()
    symbols: set[str] = set()
    end = False
    for term in terms:
        if term == "$END":
            end = True
        elif term == "NAME":
            words.add(_name_role(prev))
        elif term in _WORDS:
            words.add(_WORDS[term])
        elif term in _PUNCT:
            symbols.add(f"'{_PUNCT[term]}'")
        elif term in ("TRUE", "FALSE"):
            keywords.add(term.lower())
        else:
            keywords.add(term)
    return [*sorted(words), *sorted(keywords), *sorted(symbols), *(["end of query"] * end)]


def _show(tok: Token) -> str:
    text = str(tok).split("\n", 1)[0]
    if len(text) > 30:
        text = text[:27] + "..."
    return f"'{text}'"


def _found(tok: Token | None) -> str:
    if tok is None or tok.type == "$END":
        return "end of query"
    if tok.type == "NAME":
        return f"name {_show(tok)}"
    if tok.type == "VAR":
        return f"variable {_show(tok)}"
    if tok.type in ("INTEGER", "DECIMAL", "DOUBLE"):
        return f"number {tok}"
    if tok.type in _WORDS and tok.type.startswith("STRING"):
        return f"string {_show(tok)}"
    return _show(tok)


def _tokens_before(text: str) -> tuple[Token | None, Token | None]:
    """The last token the parser accepted and the one it refused (None at the end)."""
    prev: Token | None = None
    bad: Token | None = None
    ip = lalr().parse_interactive(text)
    try:
        for tok in ip.iter_parse():
            prev, bad = bad, tok
    except LarkError:
        return prev, bad
    return bad, None  # pragma: no cover - the text parses after all


def diagnose(text: str, exc: LarkError) -> CeqlSyntaxError:
    """Explain the first syntax error of ``text`` (``exc`` is lark's) in plain words."""
    if isinstance(exc, UnexpectedCharacters):
        prev, _ = _tokens_before(text)
        pos = exc.pos_in_stream or 0
        char = text[pos] if pos < len(text) else ""
        expected = _expected(exc.allowed or (), prev)
        after = f" after {_show(prev)}" if prev is not None else ""
        message = f"Unexpected character {char!r}{after}"
        if char in "'\"":
            message = "Unterminated string: the quote opened here is never closed on its line"
        elif expected:
            message += f": expected {_or_list(expected)}"
        return syntax_error(text, message, exc.line, exc.column, expected=tuple(expected))
    if not isinstance(exc, UnexpectedToken):  # pragma: no cover - lark's other errors
        line = exc.line if isinstance(exc, UnexpectedInput) else 1
        column = exc.column if isinstance(exc, UnexpectedInput) else 1
        return syntax_error(text, f"Invalid query: {exc}", line or 1, column or 1)
    tok = exc.token
    prev, _ = _tokens_before(text)
    expected = _expected(exc.expected or (), prev)
    at_end = tok.type == "$END"
    if at_end:
        if prev is None:
            return syntax_error(text, "Empty query: expected PREFIX, BASE or SELECT", 1, 1,
                                expected=tuple(expected))
        line, column, width = prev.end_line or 1, prev.end_column or 1, 1
    else:
        line, column, width = tok.line or 1, tok.column or 1, token_width(tok)
    after = f" after {_show(prev)}" if prev is not None else " at the start"
    message = f"Expected {_or_list(expected)}{after}, found {_found(None if at_end else tok)}"
    if tok.type == "RPAR" and prev is not None and prev.type in _SEQ_OPERATORS and (
            "NAME" in (exc.expected or ())):
        message += f": SEQ cannot end with '{prev}'"
    return syntax_error(text, message, line, column, width, tuple(expected))
