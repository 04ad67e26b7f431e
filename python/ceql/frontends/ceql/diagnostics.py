"""Syntax errors in plain words: what was found, what the grammar expected, where (caret).

Constructs of other languages (``A*``, ``FOLLOWED BY``, SQL's ``IN (…)``, ``BETWEEN``, …) are
explained by :mod:`.foreign` as "not supported in CEQL; write …"; a misspelt keyword gets a
"did you mean"."""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Iterable, Sequence

from lark import Token
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.parsers.lalr_interactive_parser import InteractiveParser

from ...constants import STRATEGIES, WITHIN_UNITS
from ...errors import CeqlSyntaxError
from ..syntax import or_list, show_token, syntax_error, token_width
from .foreign import FUNCTIONS, Hint, Tok, explain_char, explain_token, lex_after, mode_of
from .foreign import tok as as_tok
from .lalr import lalr

__all__ = ["SOFT_KEYWORDS", "diagnose"]


def _hint_error(text: str, hint: Hint, expected: tuple[str, ...]) -> CeqlSyntaxError:
    """The error for a construct of another language, the caret under it (its first line)."""
    line = text.count("\n", 0, hint.start) + 1
    line_start = text.rfind("\n", 0, hint.start) + 1
    line_end = text.find("\n", hint.start)
    end = hint.end if line_end < 0 else min(hint.end, line_end)
    return syntax_error(text, hint.message, line, hint.start - line_start + 1,
                        max(1, end - hint.start), expected)


_PUNCT = {
    "COLONPLUS": ":+", "SEMICOLON": ";", "COLON": ":", "PLUS": "+", "MINUS": "-", "STAR": "*",
    "SLASH": "/", "PERCENT": "%", "LPAR": "(", "RPAR": ")", "LSQB": "[", "RSQB": "]",
    "LBRACE": "{", "RBRACE": "}", "COMMA": ",", "EQEQ": "==", "EQ": "=", "NE": "!=",
    "LTGT": "<>", "LE": "<=", "GE": ">=", "LT": "<", "GT": ">", "DOT": ".",
}
_COMPARISONS = frozenset({"EQ", "EQEQ", "NE", "LTGT", "LT", "LE", "GT", "GE"})


#: Keywords the grammar also accepts as attribute names (``attr_name``); kept in step by a test.
SOFT_KEYWORDS = frozenset(STRATEGIES + WITHIN_UNITS + ("NONE", "EVENTS", "EVENT", "INTERVAL",
                                                  "RANGE", "DISTINCT"))
_CLAUSE_RANK = {"SELECT": 0, "FROM": 1, "WHERE": 2, "PARTITION": 3, "WITHIN": 3, "CONSUME": 4,
                "LIMIT": 5}
_CLAUSE_NAME = {"PARTITION": "PARTITION BY", "CONSUME": "CONSUME BY"}
_CLAUSE_ORDER = "SELECT, FROM, WHERE, PARTITION BY and WITHIN (either order), CONSUME BY, LIMIT"


def _is_keyword(tok_type: str) -> bool:
    return (tok_type.isalpha() and tok_type.isupper() and tok_type not in _PUNCT
            and tok_type not in ("NAME", "NUMBER", "STRING"))


def _show_token(tok: Token) -> str:
    """A token as it appears in a message: ``'WHERE'``, ``';'``, ``'MSFT'``."""
    return show_token(tok, ("STRING", "QUOTED_NAME"))


def _describe_found(tok: Token | None) -> str:
    if tok is None or tok.type == "$END":
        return "end of query"
    if tok.type == "NAME":
        return f"name {_show_token(tok)}"
    if tok.type == "QUOTED_NAME":
        return f"name {_show_token(tok)}"
    if tok.type == "NUMBER":
        return f"number {tok}"
    if tok.type == "STRING":
        return f"string {_show_token(tok)}"
    if _is_keyword(tok.type):
        return tok.type
    return _show_token(tok)


def _name_role(tokens: Sequence[Token]) -> str:
    """What a NAME would be at the end of ``tokens``: event type, variable, attribute, ..."""
    mode = mode_of([as_tok(t) for t in tokens])
    last = tokens[-1].type if tokens else ""
    if mode == "WHERE":
        return "a variable name" if last == "AS" else "an event type"
    return {
        "SELECT": "a variable",
        "FROM": "a stream name",
        "FILTER": "a variable",
        "BRACKET": "an attribute",
        "PARTITION": "an attribute",
        "WITHIN": "an attribute",
    }.get(mode, "a name")


def _describe_expected(expected: Iterable[str], tokens: Sequence[Token]) -> tuple[str, ...]:
    """Readable names for a set of lark terminal names, sorted: words, keywords, symbols, end."""
    terms = set(expected)
    words: set[str] = set()
    if "NAME" in terms or "QUOTED_NAME" in terms:
        terms -= {"NAME", "QUOTED_NAME"}
        if SOFT_KEYWORDS <= terms:  # an attribute name: keywords allowed there go unmentioned
            terms -= SOFT_KEYWORDS
        words.add(_name_role(tokens))
    if _COMPARISONS <= terms:
        terms -= _COMPARISONS
        words.add("a comparison (=, !=, <, <=, >, >=)")
    if set(WITHIN_UNITS) <= terms:
        terms -= set(WITHIN_UNITS)
        words.add("a time unit (HOURS, MINUTES, SECONDS, MILLISECONDS)")
    if set(STRATEGIES) <= terms:
        terms -= set(STRATEGIES)
        words.add("a selection strategy (ALL, ANY, NEXT, LAST, MAX, STRICT)")
    if "NUMBER" in terms:
        terms.discard("NUMBER")
        words.add("a number")
    if "STRING" in terms:
        terms.discard("STRING")
        words.add("a string")
    end = "$END" in terms
    terms.discard("$END")
    keywords = sorted(t for t in terms if t not in _PUNCT)
    symbols = sorted(f"'{_PUNCT[t]}'" for t in terms if t in _PUNCT)
    return (*sorted(words), *keywords, *symbols, *(("end of query",) if end else ()))


def _plausible(terms: set[str], tokens: Sequence[Token]) -> set[str]:
    """``terms`` without what the grammar accepts but would not help: ``(`` after a name that
    is no function (``x(`` is refused as an unknown function), ``.`` after an attribute inside
    ``x[…]`` (``a.price`` qualifies a variable, which a name there rarely is)."""
    if not tokens or tokens[-1].type not in ("NAME", "QUOTED_NAME", "MAX", "LAST"):
        return terms
    last = tokens[-1]
    out = set(terms)
    if str(last).upper() not in FUNCTIONS or last.type == "QUOTED_NAME":
        out.discard("LPAR")
    if "DOT" in out and mode_of([as_tok(t) for t in tokens]) == "BRACKET" and not (
            len(tokens) >= 3 and tokens[-2].type == "LPAR"
            and str(tokens[-3]).upper() in FUNCTIONS):
        out.discard("DOT")
    return out


def _bare_parser() -> InteractiveParser:
    """A step-by-step parser that builds no tree (faster; used only to explain errors)."""
    ip = lalr().parse_interactive("")
    conf = copy.copy(ip.parser_state.parse_conf)
    conf.callbacks = {}
    ip.parser_state.parse_conf = conf
    return ip


def diagnose(text: str, original: LarkError) -> CeqlSyntaxError:
    """Re-read ``text`` token by token to explain the first error in plain words."""
    tokens: list[Token] = []
    bad: Token | None = None
    lex_error: UnexpectedCharacters | None = None
    ip = _bare_parser()
    try:
        for tok in lalr().lex(text):
            try:
                ip.feed_token(tok)
            except UnexpectedToken:
                bad = tok
                break
            tokens.append(tok)
    except UnexpectedCharacters as exc:
        lex_error = exc
    if bad is None and lex_error is None:
        try:
            ip.feed_eof()  # type: ignore[no-untyped-call]
        except UnexpectedToken:
            pass
        else:  # pragma: no cover - lark rejected what the step-by-step parse accepts
            line = getattr(original, "line", 1) or 1
            column = getattr(original, "column", 1) or 1
            return syntax_error(text, f"Invalid query: {original}", line, column)
    state = _bare_parser()
    for tok in tokens:
        state.feed_token(tok)
    expected_terms = _plausible({str(t) for t in state.accepts()},  # type: ignore[no-untyped-call]
                                tokens)
    expected = _describe_expected(expected_terms, tokens)
    prev = tokens[-1] if tokens else None
    if lex_error is not None:
        return _lexer_error(text, lex_error, prev, tokens, expected)
    if bad is not None:
        after, complete = lex_after(text, bad.end_pos or 0)
        hint = explain_token(text, [as_tok(t) for t in tokens], as_tok(bad), after, complete)
        if hint is not None:
            return _hint_error(text, hint, expected)
    return _token_error(text, bad, prev, tokens, expected_terms, expected,
                        state.parser_state.value_stack)


def _lexer_error(text: str, exc: UnexpectedInput, prev: Token | None, tokens: Sequence[Token],
                 expected: tuple[str, ...]) -> CeqlSyntaxError:
    pos = exc.pos_in_stream or 0
    line, column = exc.line, exc.column
    char = text[pos] if pos < len(text) else ""
    if char == "'":
        return syntax_error(text, "Unterminated string: the quote opened here is never closed "
                             "(inside a string, write '' for a quote)", line, column)
    if char == "`":
        return syntax_error(text, "Unterminated name: the backquote opened here is never "
                             "closed", line, column)
    if char == '"':
        return syntax_error(text, "Unexpected '\"': write strings in single quotes ('MSFT') "
                             "and odd names in backquotes (`my name`)", line, column,
                             expected=expected)
    if char.isdigit() or (char == "." and text[pos + 1:pos + 2].isdigit()):
        match = re.compile(r"(?:[\w.]|(?<=[eE])[+-])+").match(text, pos)
        bad = match.group(0) if match else char
        return syntax_error(text, f"Malformed number '{bad}'", line, column, len(bad),
                             expected=expected)
    if pos < len(text):
        before: list[Tok] = [as_tok(t) for t in tokens]
        hint = explain_char(text, pos, before)
        if hint is not None:
            return _hint_error(text, hint, expected)
    hints = {"\\": "; backslashes have no meaning outside strings"}
    after = f" after {_show_token(prev)}" if prev is not None else ""
    message = f"Unexpected character {char!r}{after}{hints.get(char, '')}"
    if char not in hints and expected:
        message += f": expected {or_list(expected)}"
    return syntax_error(text, message, line, column, expected=expected)


def _token_error(text: str, bad: Token | None, prev: Token | None, before: Sequence[Token],
                 expected_terms: set[str], expected: tuple[str, ...],
                 stack: Sequence[object]) -> CeqlSyntaxError:
    if bad is None:  # end of input
        if prev is None:
            return syntax_error(text, "Empty query: expected SELECT", 1, 1, expected=expected)
        line, column, width = prev.end_line or 1, prev.end_column or 1, 1
    else:
        line, column, width = bad.line or 1, bad.column or 1, token_width(bad)

    def err(message: str, line: int = line, column: int = column,
            width: int = width) -> CeqlSyntaxError:
        return syntax_error(text, message, line, column, width, expected)

    found = _describe_found(bad)
    after = f" after {_show_token(prev)}" if prev is not None else " at the start"
    generic = f"Expected {or_list(expected)}{after}, found {found}"
    kind = bad.type if bad is not None else "$END"

    # An unterminated /* comment lexes as '/' '*'.
    start = bad.start_pos if bad is not None else None
    if bad is not None and text.startswith("/*", start or 0):
        return err("Unterminated comment: '/*' is never closed by '*/'", width=2)
    if (bad is not None and kind == "STAR" and prev is not None and prev.type == "SLASH"
            and prev.end_pos == bad.start_pos):
        return err("Unterminated comment: '/*' is never closed by '*/'",
                   prev.line or 1, prev.column or 1, 2)

    filter_open = any(isinstance(v, Token) and v.type == "FILTER" for v in stack)
    mode = mode_of([as_tok(t) for t in before])
    if (filter_open and mode == "FILTER" and bad is not None and len(before) >= 2
            and prev is not None and prev.type == "GT"
            and before[-2].type in ("NAME", "QUOTED_NAME")
            and kind in ("NUMBER", "STRING", "MINUS", "LPAR", "TRUE", "FALSE")):
        # FILTER price > 10: '>' read as the start of a stream-qualified name S>T
        return syntax_error(text, f"Expected '[' after {_show_token(before[-2])}, found "
                            "'>': a FILTER condition is written variable[predicate], e.g. "
                            "SELL[price > 100]", prev.line or 1, prev.column or 1, 1, ("'['",))
    if (filter_open and bad is not None and kind == "RSQB" and prev is not None
            and prev.type == "LSQB"):
        owner = before[-2] if len(before) >= 2 and before[-2].type in (
            "NAME", "QUOTED_NAME") else None
        example = f"{owner}[price > 100]" if owner is not None else "[COUNT(b) >= 3]"
        glued = prev.end_pos == bad.start_pos
        return err(f"Empty brackets: write a condition between them, e.g. {example}",
                   prev.line or 1, prev.column or 1, 2 if glued else 1)
    if prev is not None and prev.type == "DOT" and len(before) >= 2:
        return err(f"{generic}: a qualified attribute is written variable.attribute, e.g. "
                   f"{before[-2]}.price")
    if filter_open and "FILTER" in expected_terms:
        purpose = {"SEMICOLON": "to continue the sequence", "COLON": "to continue the sequence",
                   "PLUS": "to iterate it", "COLONPLUS": "to iterate it",
                   "AS": "to name it with AS"}.get(kind)
        if purpose is not None and bad is not None:
            return err(f"Unexpected {_show_token(bad)} after FILTER condition: wrap the "
                       f"filtered formula in parentheses {purpose}")
    if (filter_open and kind != "LSQB" and "LSQB" in expected_terms and len(before) >= 2
            and before[-1].type in ("NAME", "QUOTED_NAME") and before[-2].type in ("OR", "AND")):
        word = before[-2].type
        return err(f"{generic}: after FILTER, {word} joins conditions such as "
                   f"{before[-1]}[...]; to join formulas with {word}, wrap the filtered formula "
                   "in parentheses")
    if filter_open and "LSQB" in expected_terms and kind in _COMPARISONS | {"LIKE", "IN", "NOT"}:
        return err(f"{generic}: a FILTER condition is written variable[predicate], "
                   f"e.g. SELL[price > 100]")
    if (prev is not None and prev.type in STRATEGIES and kind in ("FROM", "COMMA")
            and len(before) == 2):
        return err(f"{generic}: {prev} was read as the selection strategy {prev.type}; write "
                   f"`{prev}` in backquotes to select a variable of that name")
    wants_name = "NAME" in expected_terms and _is_keyword(kind) and bad is not None
    if wants_name and (kind not in _CLAUSE_RANK or (prev is not None and prev.type == "AS")):
        return err(f"{generic}: {bad} is a keyword; write it in backquotes (`{bad}`) to use it "
                   f"as a name")
    if bad is not None and kind in _CLAUSE_RANK and kind not in expected_terms:
        message = _clause_misplaced(bad, before)
        if message:
            return err(message)
    if bad is not None and kind == "NAME":
        keywords = sorted(t for t in expected_terms if _is_keyword(t))
        close = difflib.get_close_matches(str(bad).upper(), keywords, n=1, cutoff=0.75)
        if close:
            return err(f"{generic} (did you mean {_CLAUSE_NAME.get(close[0], close[0])}?)")
    return err(generic)


def _clause_misplaced(bad: Token, before: Sequence[Token]) -> str | None:
    """Explain a clause keyword that repeats a clause or comes after a later clause."""
    seen: list[str] = []
    for i, tok in enumerate(before):
        if tok.type in _CLAUSE_RANK:
            is_policy = tok.type == "PARTITION" and i > 0 and before[i - 1].type == "BY"
            if not is_policy:
                seen.append(tok.type)
    name = _CLAUSE_NAME.get(bad.type, bad.type)
    if bad.type in seen:
        return f"{name} appears twice: each clause may be given at most once"
    later = [s for s in seen if _CLAUSE_RANK[s] > _CLAUSE_RANK[bad.type]]
    if later:
        other = _CLAUSE_NAME.get(later[-1], later[-1])
        return (f"{name} must come before {other}: clauses go in the order {_CLAUSE_ORDER}")
    return None
