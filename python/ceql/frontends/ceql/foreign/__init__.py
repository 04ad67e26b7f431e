"""Constructs users bring from other languages (regex quantifiers, SQL, MATCH_RECOGNIZE, SASE,
Esper), explained as "X is not supported in CEQL; write …" instead of a list of tokens.

:func:`explain_token` looks at the token the parser refused, the tokens it accepted before and
a few after; :func:`explain_char` at a character the lexer refused. Each returns a
:class:`Hint` (message and the offsets the caret covers) or ``None`` to fall back on the plain
syntax error. Every rewrite offered is CEQL built from the user's own text, or a plain
statement that CEQL has no equivalent.

The rules are grouped by the language they recognise (:mod:`.regex`, :mod:`.sql`, :mod:`.cep`,
:mod:`.misc`); they read the tokens through :mod:`.tokens` and :mod:`.scan`.
"""

from __future__ import annotations

from collections.abc import Sequence

from .cep import absence_hint, rule_correlation, rule_followed_by, rule_pattern
from .misc import rule_formula_joins, rule_units
from .regex import Quantifier, quantifier_hint, rule_quantifier
from .scan import operand_start
from .sql import rule_after_match, rule_predicates, rule_select_attrs, rule_sql_words
from .tokens import (
    FUNCTIONS,
    NOT_SUPPORTED,
    Hint,
    Tok,
    join,
    lex_after,
    mode_of,
    tok,
)

__all__ = ["FUNCTIONS", "Hint", "Tok", "explain_char", "explain_token", "lex_after", "mode_of",
           "tok"]


def explain_token(text: str, before: Sequence[Tok], bad: Tok | None, after: Sequence[Tok],
                  complete: bool) -> Hint | None:
    """Explain the token ``bad`` (None: end of query) the parser refused after ``before``.

    ``after`` holds the tokens that follow ``bad`` (``complete`` when they reach the end).
    """
    if bad is None:
        return None
    mode = mode_of(before)
    prev = before[-1] if before else None
    word = bad.text.upper() if bad.type == "NAME" else ""
    prev_word = prev.text.upper() if prev is not None and prev.type == "NAME" else ""
    for rule in _TOKEN_RULES:
        hint = rule(text, before, bad, after, complete, mode, word, prev_word)
        if hint is not None:
            return hint
    return None


#: The rules, in the order they are tried (the first hint wins).
_TOKEN_RULES = (rule_correlation, rule_quantifier, rule_followed_by, rule_pattern,
                rule_select_attrs, rule_after_match, rule_sql_words, rule_predicates, rule_units,
                rule_formula_joins)


def explain_char(text: str, pos: int, before: Sequence[Tok]) -> Hint | None:
    """Explain the character at ``pos``, which no CEQL token starts with, after ``before``."""
    char = text[pos]
    mode = mode_of(before)
    prev = before[-1] if before else None
    pair = text[pos:pos + 2]
    if char == "?" and mode == "WHERE" and prev is not None:
        start = operand_start(before)
        if prev.type == "PLUS" and start is not None:
            op = join(before[start:])
            return Hint(f"'{op}?' (a lazy quantifier) {NOT_SUPPORTED}; write {op}: CEQL "
                        "reports every match, and SELECT NEXT * or SELECT LAST * keeps one "
                        "per end event", before[start].start, pos + 1)
        after, complete = lex_after(text, pos + 1)
        return quantifier_hint(before, Quantifier("?", "optional", pos + 1, 0, 0, 1),
                               after, complete)
    if pair in ("&&", "||") or char in "&|":
        width = 2 if pair in ("&&", "||") else 1
        word = "AND" if char == "&" else "OR"
        shown = text[pos:pos + width]
        return Hint(f"'{shown}' {NOT_SUPPORTED}; write {word}", pos, pos + width)
    if char == "!" and pair != "!=":
        if mode == "WHERE":
            return absence_hint(text, pos, before)
        return Hint(f"'!' {NOT_SUPPORTED}; write NOT, or != for 'not equal'", pos, pos + 1)
    return None
