"""Constructs users bring from other languages (regex quantifiers, SQL, MATCH_RECOGNIZE, SASE,
Esper), explained as "X is not supported in CEQL; write …" instead of a list of tokens.

:func:`explain_token` looks at the token the parser refused, the tokens it accepted before and
a few after; :func:`explain_char` at a character the lexer refused. Each returns a
:class:`Hint` (message and the offsets the caret covers) or ``None`` to fall back on the plain
syntax error. Every rewrite offered is CEQL built from the user's own text, or a plain
statement that CEQL has no equivalent.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from lark import Token
from lark.exceptions import UnexpectedCharacters

from .lalr import lalr

__all__ = ["FUNCTIONS", "Hint", "Tok", "explain_char", "explain_token", "lex_after", "mode_of",
           "tok"]


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


_CLAUSES = {"SELECT", "FROM", "WHERE", "PARTITION", "WITHIN", "CONSUME", "LIMIT"}
_NAMES = {"NAME", "QUOTED_NAME"}
_SEPS = {"SEMICOLON", "COLON"}
_LITERALS = {"NUMBER", "STRING", "TRUE", "FALSE"}
_ARITH = {"PLUS", "MINUS", "STAR", "SLASH", "PERCENT"}
_SEQ_BOUNDARY = {"OR", "AND", "FILTER", "PARTITION", "WITHIN", "CONSUME", "LIMIT"}
_FORMULA_TOKENS = _NAMES | _SEPS | {"PLUS", "COLONPLUS", "AS", "GT", "LPAR", "RPAR", "OR", "AND",
                                    "NOT"}
_NOT_SUPPORTED = "is not supported in CEQL"
_SEMI_NOTE = "';' lets other events come between, ':' does not"


def mode_of(tokens: Sequence[Tok]) -> str:
    """Where the parser stands after ``tokens``: the clause, FILTER, or BRACKET (inside x[…])."""
    mode = "START"
    stack: list[str] = []
    for i, t in enumerate(tokens):
        kind = t.type
        if kind in _CLAUSES and not (kind == "PARTITION" and i and tokens[i - 1].type == "BY"):
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


# ---------------------------------------------------------------- writing tokens back as text

_NO_SPACE_AFTER = {"LPAR", "LSQB", "LBRACE", "DOT"}
_NO_SPACE_BEFORE = {"RPAR", "RSQB", "RBRACE", "COMMA", "LSQB", "DOT"}
#: The functions of predicates (``PREV(attr)`` and the aggregates), as written upper case.
FUNCTIONS = ("PREV", "COUNT", "SUM", "AVG", "MIN", "MAX", "FIRST", "LAST")


_OPERATORS = {"PLUS", "MINUS", "STAR", "SLASH", "PERCENT", "EQ", "EQEQ", "NE", "LTGT", "LT",
              "LE", "GT", "GE", "COMMA", "LPAR", "LSQB", "LBRACE", "AND", "OR", "NOT", "IN",
              "LIKE"}


def _join(tokens: Sequence[Tok], in_pred: bool = False) -> str:
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
            or (t.type == "LPAR" and _is_function(prev)))
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


def _is_function(t: Tok) -> bool:
    """True for a token that names a function of predicates (``PREV``, ``COUNT``, ``MAX``…)."""
    return t.type in ("NAME", "MAX", "LAST") and t.text.upper() in FUNCTIONS


def _match_back(tokens: Sequence[Tok], close: int, open_: str = "LPAR",
                shut: str = "RPAR") -> int | None:
    """Index of the bracket that ``tokens[close]`` closes."""
    depth = 0
    for i in range(close, -1, -1):
        if tokens[i].type == shut:
            depth += 1
        elif tokens[i].type == open_:
            depth -= 1
            if depth == 0:
                return i
    return None


def _match_forward(tokens: Sequence[Tok], open_at: int, open_: str = "LPAR",
                   shut: str = "RPAR") -> int | None:
    """Index of the bracket that closes ``tokens[open_at]``."""
    depth = 0
    for i in range(open_at, len(tokens)):
        if tokens[i].type == open_:
            depth += 1
        elif tokens[i].type == shut:
            depth -= 1
            if depth == 0:
                return i
    return None


def _operand_start(before: Sequence[Tok]) -> int | None:
    """Where the formula operand ending ``before`` starts: a primary and its postfix ops."""
    i = len(before) - 1
    while i >= 0:
        if before[i].type in ("PLUS", "COLONPLUS"):
            i -= 1
        elif before[i].type in _NAMES and i >= 1 and before[i - 1].type == "AS":
            i -= 2
        else:
            break
    if i < 0:
        return None
    if before[i].type in _NAMES:
        if i >= 2 and before[i - 1].type == "GT" and before[i - 2].type in _NAMES:
            return i - 2
        return i
    if before[i].type == "RPAR":
        return _match_back(before, i)
    return None


def _operand_end(after: Sequence[Tok], k: int) -> int | None:
    """One past the formula operand starting at ``after[k]`` (a primary and postfix ops)."""
    if k >= len(after):
        return None
    if after[k].type in _NAMES:
        k += 3 if (k + 2 < len(after) and after[k + 1].type == "GT"
                   and after[k + 2].type in _NAMES) else 1
    elif after[k].type == "LPAR":
        close = _match_forward(after, k)
        if close is None:
            return None
        k = close + 1
    else:
        return None
    while k < len(after):
        if after[k].type in ("PLUS", "COLONPLUS"):
            k += 1
        elif after[k].type == "AS" and k + 1 < len(after) and after[k + 1].type in _NAMES:
            k += 2
        else:
            break
    return k


def _sequence_before(before: Sequence[Tok], start: int) -> list[Tok] | None:
    """The tokens of the ``;``/``:`` sequence before ``before[start]`` (empty if none)."""
    i = start - 1
    depth = 0
    while i >= 0:
        kind = before[i].type
        if kind == "RPAR":
            depth += 1
        elif kind == "LPAR":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and kind in ("OR", "AND", "WHERE"):
            break
        i -= 1
    seq = list(before[i + 1:start])
    if seq and seq[-1].type not in _SEPS:
        return None
    return seq


def _sequence_after(after: Sequence[Tok], k: int, complete: bool) -> list[Tok] | None:
    """The tokens of the ``;``/``:`` sequence from ``after[k]`` (empty if none), when they
    are plain formula tokens."""
    depth = 0
    i = k
    while i < len(after):
        kind = after[i].type
        if kind == "LPAR":
            depth += 1
        elif kind == "RPAR":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and kind in _SEQ_BOUNDARY:
            break
        if kind not in _FORMULA_TOKENS:
            return None
        i += 1
    else:
        if not complete:
            return None
    seq = list(after[k:i])
    if seq and seq[0].type not in _SEPS:
        return None
    return seq


def _last_element(seq: Sequence[Tok]) -> Tok | None:
    """The first token of the last element of ``seq`` (a sequence ending with its separator)."""
    depth = 0
    for i in range(len(seq) - 2, -1, -1):
        kind = seq[i].type
        if kind == "RPAR":
            depth += 1
        elif kind == "LPAR":
            depth -= 1
        elif depth == 0 and kind in _SEPS:
            return seq[i + 1]
    return seq[0] if len(seq) >= 2 else None


def _not_next_to_not(left: Sequence[Tok], right: Sequence[Tok]) -> bool:
    """True when leaving out the element between ``left`` and ``right`` would put two NOTs in
    a row."""
    last = _last_element(left)
    return (last is not None and last.type == "NOT" and len(right) >= 2
            and right[1].type == "NOT")


def _merged_without(left: list[Tok], right: list[Tok]) -> str | None:
    """The sequence ``left … right`` without the element between them, whose two NOTs then
    in a row become one: ``A ; NOT B ; [C ;] NOT D ; E`` → ``A ; NOT (B OR D) ; E`` (None
    when a NOT is named or the rest is not plain)."""
    last = _last_element(left)
    if last is None:
        return None
    at = left.index(last)
    first_end = _operand_end(right, 2)
    if first_end is None or (first_end < len(right) and right[first_end].type not in _SEPS):
        return None
    b, d = left[at + 1:-1], right[2:first_end]
    if any(t.type == "AS" for t in (*b, *d)):
        return None
    merged = f"NOT ({_join(b)} OR {_join(d)})"
    parts = [_join(left[:at])] if at else []
    parts.append(merged)
    if first_end < len(right):
        parts.append(_join(right[first_end:]))
    return " ".join(parts)


def _without(left: list[Tok], right: list[Tok]) -> str:
    """The sequence ``left … right`` with the element between them left out."""
    core_left, core_right = left[:-1], right[1:]
    if core_left and core_right:
        both_colon = left[-1].type == right[0].type == "COLON"
        return f"{_join(core_left)} {':' if both_colon else ';'} {_join(core_right)}"
    return _join(core_left or core_right)


def _with(left: list[Tok], element: str, right: list[Tok]) -> str:
    parts = [_join(left)] if left else []
    parts.append(element)
    if right:
        parts.append(_join(right))
    return " ".join(parts)


# ---------------------------------------------------------------- quantifiers: * ? {n} {m,n}

_MAX_COPIES = 6


@dataclass(frozen=True)
class _Quantifier:
    text: str  # as written: '*', '?', '{2,4}'
    meaning: str
    end: int  # offset one past the quantifier
    resume: int  # index in ``after`` of the first token after it
    low: int
    high: int | None  # None: no upper bound


def _repeat(op: str, q: _Quantifier) -> str | None:
    """``op`` repeated as ``q`` says, at least once (None when too long to write out)."""
    low = max(q.low, 1)
    if q.high is None:
        if low - 1 > _MAX_COPIES:
            return None
        return " ; ".join([op] * (low - 1) + [f"{op}+"])
    if q.high > _MAX_COPIES:
        return None
    options = [" ; ".join([op] * n) for n in range(low, q.high + 1)]
    return options[0] if len(options) == 1 else f"({' OR '.join(options)})"


def _quantifier_hint(before: Sequence[Tok], q: _Quantifier, after: Sequence[Tok],
                     complete: bool) -> Hint | None:
    start = _operand_start(before)
    if start is None:
        return None
    op = _join(before[start:])
    span_start = before[start].start
    head = f"'{op}{q.text}' ({q.meaning}) {_NOT_SUPPORTED}"
    if start > 0 and before[start - 1].type == "NOT":
        before_not = _sequence_before(before, start - 1)
        after_op = _sequence_after(after, q.resume, complete)
        negated = f"NOT {op}"
        if before_not is not None and after_op is not None:
            negated = _with(before_not, negated, after_op)
        return Hint(f"{head} after NOT; NOT {op} already forbids every {op} event in its gap: "
                    f"write {negated}", span_start, q.end)
    if q.high is not None and (q.high == 0 or q.high < q.low):
        return Hint(f"{head}; it matches no event: leave it out", span_start, q.end)
    element = _repeat(op, q)
    if element is None:
        if q.high is None:
            how = f"{op} {q.low - 1} times joined by ';', then ; {op}+"
        elif q.low == q.high:
            how = f"{op} {q.low} times joined by ';'"
        else:
            how = f"an OR of {op} {q.low} to {q.high} times joined by ';'"
        return Hint(f"{head}; write {how} ({_SEMI_NOTE})", span_start, q.end)
    left = _sequence_before(before, start)
    right = _sequence_after(after, q.resume, complete)
    if left is not None and right is not None and q.low == 0 \
            and _not_next_to_not(left, right):
        merged = _merged_without(left, right)
        if merged is not None:
            return Hint(f"{head}; write {_with(left, element, right)} OR {merged} (the OR "
                        f"adds the matches without {op}, where the NOTs around it make one)",
                        span_start, q.end)
        left = right = None
    if left is None or right is None:
        left, right = [], []
        context = False
    else:
        context = True
    if q.low > 0:
        rewrite = _with(left, element, right) if context else element
        note = f" ({_SEMI_NOTE})" if ";" in element else ""
        return Hint(f"{head}; write {rewrite}{note}", span_start, q.end)
    if context and (left or right):
        rewrite = f"{_with(left, element, right)} OR {_without(left, right)}"
        return Hint(f"{head}; write {rewrite} (the OR adds the matches without {op})",
                    span_start, q.end)
    return Hint(f"{head}; a pattern needs at least one event: write {element}, and for "
                f"the matches without {op} join the sequence without it by OR",
                span_start, q.end)


def _braces(after: Sequence[Tok], k: int) -> tuple[int, int | None, int] | None:
    """``{n}``, ``{m,n}``, ``{m,}`` or ``{,n}`` from ``after[k]`` (the ``{``): low, high and
    the index past ``}``."""
    kinds = [t.type for t in after[k:k + 6]]
    texts = [t.text for t in after[k:k + 6]]

    def whole(s: str) -> int | None:
        return int(s) if s.isdigit() and len(s) < 6 else None

    if kinds[:3] == ["LBRACE", "NUMBER", "RBRACE"] and (n := whole(texts[1])) is not None:
        return n, n, k + 3
    if kinds[:4] == ["LBRACE", "NUMBER", "COMMA", "RBRACE"] and (
            m := whole(texts[1])) is not None:
        return m, None, k + 4
    if kinds[:4] == ["LBRACE", "COMMA", "NUMBER", "RBRACE"] and (
            n := whole(texts[2])) is not None:
        return 0, n, k + 4
    if kinds[:5] == ["LBRACE", "NUMBER", "COMMA", "NUMBER", "RBRACE"]:
        m, n = whole(texts[1]), whole(texts[3])
        if m is not None and n is not None:
            return m, n, k + 5
    return None


def _brace_meaning(low: int, high: int | None) -> str:
    if high is None:
        return f"{low} or more times"
    if low == high:
        return f"exactly {low} times"
    return f"{low} to {high} times"


# ---------------------------------------------------------------- expressions inside x[...]

_EXPR_TOKENS = _NAMES | _LITERALS | _ARITH | {"LPAR", "RPAR"} | {
    "ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT", "NONE", "EVENTS", "EVENT", "INTERVAL", "RANGE",
    "HOURS", "HOUR", "MINUTES", "MINUTE", "SECONDS", "SECOND", "MILLISECONDS", "MILLISECOND"}


def _expr_back(before: Sequence[Tok]) -> int | None:
    """Where the predicate expression ending ``before`` starts."""
    i = len(before) - 1
    depth = 0
    while i >= 0:
        kind = before[i].type
        if kind == "RPAR":
            depth += 1
        elif kind == "LPAR":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and kind not in _EXPR_TOKENS:
            break
        i -= 1
    return i + 1 if i + 1 < len(before) else None


def _expr_forward(after: Sequence[Tok], k: int, stops: set[str]) -> int:
    """One past the predicate expression starting at ``after[k]``."""
    depth = 0
    i = k
    while i < len(after):
        kind = after[i].type
        if kind == "LPAR":
            depth += 1
        elif kind == "RPAR":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and (kind in stops or kind not in _EXPR_TOKENS):
            break
        i += 1
    return i


def _bracket_var(before: Sequence[Tok]) -> Tok | None:
    """The variable of the ``x[`` that ``before`` is inside."""
    depth = 0
    for i in range(len(before) - 1, 0, -1):
        if before[i].type == "RSQB":
            depth += 1
        elif before[i].type == "LSQB":
            if depth == 0:
                return before[i - 1] if before[i - 1].type in _NAMES else None
            depth -= 1
    return None


# ---------------------------------------------------------------- the token the parser refused

_UNITS: dict[str, tuple[str, Fraction]] = {}
for _names, _unit, _factor in (
        (("s", "sec", "secs"), "SECONDS", Fraction(1)),
        (("ms", "msec", "msecs", "millis"), "MILLISECONDS", Fraction(1)),
        (("m", "min", "mins"), "MINUTES", Fraction(1)),
        (("h", "hr", "hrs"), "HOURS", Fraction(1)),
        (("d", "day", "days"), "HOURS", Fraction(24)),
        (("w", "wk", "week", "weeks"), "HOURS", Fraction(168)),
        (("us", "µs", "micros", "microsecond", "microseconds"), "MILLISECONDS",
         Fraction(1, 1000))):
    for _n in _names:
        _UNITS[_n] = (_unit, _factor)


def _number_text(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return format(float(value), "g")


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


def _r_quantifier(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok],
                  complete: bool, mode: str, word: str, prev_word: str) -> Hint | None:
    if mode != "WHERE" or _operand_start(before) is None:
        return None
    if bad.type == "STAR":
        return _quantifier_hint(before, _Quantifier("*", "zero or more", bad.end, 0, 0, None),
                                after, complete)
    if bad.type == "LBRACE":
        found = _braces([bad, *after], 0)
        if found is None:
            return Hint(f"Repetition counts in braces {_NOT_SUPPORTED}; write the formula "
                        f"as many times as needed, joined by ';' ({_SEMI_NOTE})",
                        bad.start, bad.end)
        low, high, past = found
        end = after[past - 2].end
        q = _Quantifier(text[bad.start:end].replace(" ", ""), _brace_meaning(low, high), end,
                        past - 1, low, high)
        return _quantifier_hint(before, q, after, complete)
    return None


def _r_followed_by(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok],
                   complete: bool, mode: str, word: str, prev_word: str) -> Hint | None:
    if mode != "WHERE":
        return None
    if word == "FOLLOWED" and after and after[0].type == "BY":
        what, end, k = "FOLLOWED BY", after[0].end, 1
    elif word == "THEN":
        what, end, k = "THEN", bad.end, 0
    elif bad.type == "MINUS" and after and after[0].type == "GT" and after[0].start == bad.end:
        what, end, k = "'->'", after[0].end, 1
    else:
        return None
    start = _operand_start(before)
    stop = _operand_end(after, k)
    if start is None or stop is None:
        return Hint(f"{what} {_NOT_SUPPORTED}; write ';' between the two formulas "
                    f"({_SEMI_NOTE})", bad.start, end)
    left, right = _join(before[start:]), _join(after[k:stop])
    return Hint(f"{what} {_NOT_SUPPORTED}; write {left} ; {right} ({_SEMI_NOTE})",
                bad.start, end)


def _sase_items(after: Sequence[Tok], k: int) -> tuple[str, int] | None:
    """``SEQ(A a, B+ b[], C)`` from ``after[k]`` (the ``(``) as a CEQL sequence."""
    close = _match_forward(after, k)
    if close is None:
        return None
    items: list[list[Tok]] = [[]]
    for t in after[k + 1:close]:
        if t.type == "COMMA":
            items.append([])
        else:
            items[-1].append(t)
    out = []
    for item in items:
        kinds = [t.type for t in item]
        if kinds == ["NAME"]:
            out.append(item[0].text)
        elif kinds == ["NAME", "NAME"]:
            out.append(f"{item[0].text} AS {item[1].text}")
        elif kinds in (["NAME", "PLUS", "NAME"], ["NAME", "PLUS", "NAME", "LSQB", "RSQB"]):
            out.append(f"{item[0].text}+ AS {item[2].text}")
        else:
            return None
    return " ; ".join(out), close


def _mr_items(after: Sequence[Tok], k: int) -> tuple[str, int] | None:
    """MATCH_RECOGNIZE's ``PATTERN (A B+ C)`` from ``after[k]`` as a contiguous sequence."""
    close = _match_forward(after, k)
    if close is None or close == k + 1:
        return None
    out: list[str] = []
    for t in after[k + 1:close]:
        if t.type in _NAMES:
            out.append(t.text)
        elif t.type == "PLUS" and out and not out[-1].endswith(":+"):
            out[-1] += ":+"
        else:
            return None
    return " : ".join(out), close


def _r_pattern(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok],
               complete: bool, mode: str, word: str, prev_word: str) -> Hint | None:
    # PATTERN refused itself (after FROM s), or accepted as an event type and '(' refused.
    rest: list[Tok]
    if word == "PATTERN":
        at, rest = bad, list(after)
    elif prev_word == "PATTERN" and (bad.type == "LPAR" or word == "SEQ"):
        at, rest = before[-1], [bad, *after]
    elif prev_word == "SEQ" and bad.type == "LPAR":
        at, rest = before[-1], [before[-1], bad, *after]
    else:
        return None
    if rest and rest[0].type == "NAME" and rest[0].text.upper() == "SEQ":
        found = _sase_items(rest, 1) if len(rest) > 1 and rest[1].type == "LPAR" else None
        what = "SEQ(…)" if at.text.upper() == "SEQ" else "PATTERN SEQ(…)"
        if found is None:
            return Hint(f"{what} (SASE) {_NOT_SUPPORTED}; write the pattern after WHERE with "
                        "';' between the events, e.g. WHERE A AS a ; B AS b", at.start,
                        rest[0].end)
        seq, close = found
        return Hint(f"{what} (SASE) {_NOT_SUPPORTED}; write the pattern after WHERE with ';' "
                    f"between the events: WHERE {seq}", at.start, rest[close].end)
    if at.text.upper() != "PATTERN" or not rest or rest[0].type != "LPAR":
        return None
    found = _mr_items(rest, 0)
    example = found[0] if found is not None else "A : B:+ : C"
    end = rest[found[1]].end if found is not None else rest[0].end
    return Hint(f"PATTERN (…) (MATCH_RECOGNIZE) {_NOT_SUPPORTED}; write the pattern after "
                f"WHERE, ':' for the next event and ';' for any later one: WHERE {example}; "
                "conditions from DEFINE go in FILTER, e.g. FILTER A[price > 10]", at.start, end)


_SQL_WORDS = {
    "MATCH_RECOGNIZE": "MATCH_RECOGNIZE {ns}; a CEQL query is the pattern itself: "
                       "SELECT * FROM S WHERE A : B:+ : C FILTER A[price > 10] (':' for the "
                       "next event, ';' for any later one)",
    "DEFINE": "DEFINE {ns}; a condition on a variable goes in FILTER: "
              "WHERE A AS a ; B AS b FILTER a[price > 10]",
    # HAVING's conditions are on the whole match (SQL's groups)
    "MEASURES": "MEASURES {ns}; every match reports its events (SELECT * or SELECT a, b)",
    "HAVING": "HAVING {ns}; a condition on the whole match goes in FILTER as a match "
              "condition, in brackets with no variable before them: FILTER [COUNT(b) >= 3 "
              "AND AVG(b.price) > 100]",
    "ORDER": "ORDER BY {ns}; matches come out in the order of the events that complete "
             "them: leave it out",
    "EVERY": "EVERY {ns}; CEQL reports every match by default (SELECT ALL): leave it out",
}


def _r_sql_words(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok],
                 complete: bool, mode: str, word: str, prev_word: str) -> Hint | None:
    if word == "GROUP" and after and after[0].type == "BY":
        names = []
        for t in after[1:]:
            if t.type in _NAMES:
                names.append(t.text)
            elif t.type != "COMMA":
                break
        example = f"PARTITION BY [{', '.join(names)}]" if names else "PARTITION BY [key]"
        return Hint(f"GROUP BY {_NOT_SUPPORTED}; to match within each key write {example}",
                    bad.start, after[0].end)
    if prev_word == "EVERY" and mode == "WHERE":
        return Hint(_SQL_WORDS["EVERY"].format(ns=_NOT_SUPPORTED), before[-1].start,
                    before[-1].end)
    if word == "DEFINE":
        found = _define(after, complete)
        if found is not None:
            rewrite, prev = found
            note = (" (PREV there is the previous event of the same variable in the match, "
                    "not the previous row)" if prev else "")
            return Hint(f"DEFINE {_NOT_SUPPORTED}; a condition on a variable goes in FILTER, "
                        f"in that variable's brackets: {rewrite}{note}", bad.start, bad.end)
    message = _SQL_WORDS.get(word)
    if message is None:
        return None
    end = after[0].end if word == "ORDER" and after and after[0].type == "BY" else bad.end
    return Hint(message.format(ns=_NOT_SUPPORTED), bad.start, end)


def _r_formula_joins(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok],
                     complete: bool, mode: str, word: str, prev_word: str) -> Hint | None:
    if mode != "WHERE":
        return None
    start = _operand_start(before)
    stop = _operand_end(after, 0)
    pair = None
    if start is not None and stop is not None:
        pair = (_join(before[start:]), _join(after[:stop]))
    if bad.type == "NOT" and start is not None:
        a = _join(before[start:])
        after_not = _operand_end(after, 0)
        b = _join(after[:after_not]) if after_not is not None else "B"
        end = after[after_not - 1].end if after_not is not None else bad.end
        used = {t.text for t in (*before[start:], *after[:after_not or 0])}
        c = next(x for x in ("C", "D", "E", "X", "Y", "Z", "next") if x not in used)
        return Hint(f"'{a} NOT {b}' {_NOT_SUPPORTED}; a NOT is an element of a ';' sequence: "
                    f"{a} ; NOT {b} ; {c} matches {a} then {c} with no {b} between them (a NOT "
                    "at the end of the pattern also needs WITHIN)", before[start].start, end)
    if bad.type == "COMMA" and start is not None:
        a, b = pair if pair else ("A", "B")
        return Hint(f"',' between formulas {_NOT_SUPPORTED}; write {a} ; {b} for one after "
                    f"the other, or {a} OR {b} for either", bad.start, bad.end)
    if bad.type in _NAMES and start is not None and not _keyword_typo(bad.text):
        a = _join(before[start:])
        b = bad.text
        return Hint(f"'{a} {b}' {_NOT_SUPPORTED}; write {a} ; {b} for {b} after {a}, or "
                    f"{a} AS {b} to name the event {b}", before[start].start, bad.end)
    return None


_FORMULA_FOLLOWERS = ("AS", "AND", "OR", "FILTER", "PARTITION", "WITHIN", "CONSUME", "LIMIT")


def _keyword_typo(word: str) -> bool:
    """True when ``word`` looks like a misspelt keyword that may follow a formula."""
    return bool(difflib.get_close_matches(word.upper(), _FORMULA_FOLLOWERS, n=1, cutoff=0.75))


def _r_predicates(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok],
                  complete: bool, mode: str, word: str, prev_word: str) -> Hint | None:
    if mode != "BRACKET" or not before:
        return None
    prev = before[-1]
    negated = prev.type == "NOT"
    subject = before[:-1] if negated else before
    if bad.type in ("LPAR", "LSQB") and prev.type == "IN":
        negated = len(before) >= 2 and before[-2].type == "NOT"
        subject = before[:-2] if negated else before[:-1]
        first = before[-2] if negated else prev
        close = _match_forward([bad, *after], 0, bad.type, "RPAR" if bad.type == "LPAR"
                               else "RSQB")
        what = "IN (…)" if bad.type == "LPAR" else "IN […]"
        at = _expr_back(subject)
        items = [bad, *after][1:close] if close is not None else []
        ok = bool(items) and all(t.type in _LITERALS | {"COMMA", "MINUS"} for t in items)
        if at is None or close is None or not ok:
            return Hint(f"{what} {_NOT_SUPPORTED}; a set of values is written in braces: "
                        "x IN {1, 2}", first.start, bad.end)
        rewrite = (f"{_join(subject[at:], True)} {'NOT IN' if negated else 'IN'} "
                   f"{{{_join(items, True)}}}")
        end = [bad, *after][close].end
        return Hint(f"{what} {_NOT_SUPPORTED}; write {rewrite} (a set is written in braces)",
                    first.start, end)
    if word == "BETWEEN":
        first = prev if negated else bad
        at = _expr_back(subject)
        lo_end = _expr_forward(after, 0, {"AND"})
        if at is None or lo_end == 0 or lo_end >= len(after) or after[lo_end].type != "AND":
            return Hint(f"BETWEEN {_NOT_SUPPORTED}; write x IN RANGE(lo, hi) (inclusive at "
                        "both ends)", first.start, bad.end)
        hi_end = _expr_forward(after, lo_end + 1, {"AND", "OR", "RSQB"})
        if hi_end == lo_end + 1:
            return None
        rewrite = (f"{_join(subject[at:], True)} {'NOT IN' if negated else 'IN'} RANGE("
                   f"{_join(after[:lo_end], True)}, {_join(after[lo_end + 1:hi_end], True)})")
        return Hint(f"BETWEEN {_NOT_SUPPORTED}; write {rewrite} (inclusive at both ends)",
                    first.start, after[hi_end - 1].end)
    if word == "IS":
        is_not = bool(after) and after[0].type == "NOT"
        nul = after[1 if is_not else 0] if len(after) > (1 if is_not else 0) else None
        end = nul.end if nul is not None and nul.text.upper() == "NULL" else bad.end
        if is_not:
            return Hint(f"IS NOT NULL {_NOT_SUPPORTED}, and not needed: a comparison is false "
                        "when its attribute is missing or NULL (x[price > 0] keeps only events "
                        "that have a price)", bad.start, end)
        return Hint(f"IS NULL {_NOT_SUPPORTED}, and CEQL has no test for a missing value: a "
                    "missing or NULL attribute makes every comparison on it false, and NOT of "
                    "such a comparison false too", bad.start, end)
    if word in ("RLIKE", "REGEXP"):
        return Hint(f"{word} {_NOT_SUPPORTED}; LIKE takes a regular expression here: "
                    "x LIKE '^ab+'", bad.start, bad.end)
    if word == "ILIKE":
        return Hint(f"ILIKE {_NOT_SUPPORTED}; LIKE takes a regular expression here, and (?i) "
                    "at its start ignores case: x LIKE '(?i)^abc'", bad.start, bad.end)
    return None


def _r_units(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok],
             complete: bool, mode: str, word: str, prev_word: str) -> Hint | None:
    if mode != "WITHIN" or bad.type not in _NAMES or not before:
        return None
    unit = _UNITS.get(bad.text.lower())
    prev = before[-1]
    if unit is None or prev.type not in ("NUMBER", "STRING"):
        return None
    raw = prev.text.strip("'").strip()
    try:
        amount = Fraction(raw)
    except ValueError:
        return None
    name, factor = unit
    value = _number_text(amount * factor)
    if prev.type == "STRING":
        start = before[-2].start if len(before) >= 2 and before[-2].type == "INTERVAL" \
            else prev.start
        return Hint(f"{bad.text} {_NOT_SUPPORTED} as a unit; write INTERVAL '{value}' {name}",
                    start, bad.end)
    return Hint(f"'{text[prev.start:bad.end]}' {_NOT_SUPPORTED}; write {value} {name}",
                prev.start, bad.end)



# ---------------------------------------------------------------- conditions between events

_COMPARE = {"EQ", "EQEQ", "NE", "LTGT", "LT", "LE", "GT", "GE"}
_CONDITION_TOKENS = _EXPR_TOKENS | _COMPARE | {"AND", "OR", "NOT", "IN", "LIKE", "LBRACE",
                                               "RBRACE", "COMMA", "DOT"}


def _define(after: Sequence[Tok], complete: bool) -> tuple[str, bool] | None:
    """MATCH_RECOGNIZE's ``DEFINE A AS cond, B AS cond`` (``after``: the tokens after DEFINE)
    as ``FILTER A[cond] AND B[cond]``, and whether a PREV was translated; None when some part
    has no plain CEQL form."""
    defs: list[tuple[Tok, list[Tok]]] = []
    i, depth = 0, 0
    while i < len(after):
        if i + 1 >= len(after) or after[i].type not in _NAMES or after[i + 1].type != "AS":
            return None
        var, body = after[i], []
        i += 2
        while i < len(after):
            t = after[i]
            if t.type in ("LPAR", "LBRACE"):
                depth += 1
            elif t.type in ("RPAR", "RBRACE"):
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and (t.type == "COMMA" or t.type in _CLAUSES):
                break
            body.append(t)
            i += 1
        if not body:
            return None
        defs.append((var, body))
        if i < len(after) and after[i].type == "COMMA":
            i += 1
            continue
        break
    if not defs or (i >= len(after) and not complete):
        return None
    parts, prev = [], False
    for var, body in defs:
        cond = _own_attributes(body, var.text)
        if cond is None:
            return None
        prev = prev or any(_is_function(t) and t.text.upper() == "PREV" for t in body)
        parts.append(f"{var.text}[{cond}]")
    return f"FILTER {' AND '.join(parts)}", prev


def _own_attributes(body: Sequence[Tok], var: str) -> str | None:
    """A condition of ``var`` written with qualified names (``B.price > PREV(B.price)``) as
    the inside of ``var[…]`` (``price > PREV(price)``); None when it is not plain CEQL."""
    out: list[Tok] = []
    i = 0
    while i < len(body):
        t = body[i]
        if t.type not in _CONDITION_TOKENS:
            return None
        if _is_function(t) and i + 1 < len(body) and body[i + 1].type == "LPAR":
            close = _match_forward(body, i + 1)
            if close is None:
                return None
            arg = body[i + 2:close]
            name = t.text.upper()
            kinds = [a.type for a in arg]
            if name == "PREV":
                if kinds == ["NAME"] or (kinds[1:] == ["DOT", "NAME"] and arg[0].text == var
                                         and arg[0].type in _NAMES):
                    out += [Tok("NAME", "PREV", t.start, t.end), body[i + 1], arg[-1],
                            body[close]]
                    i = close + 1
                    continue
                return None
            if kinds not in (["NAME"], ["NAME", "DOT", "NAME"], ["QUOTED_NAME", "DOT", "NAME"]):
                return None
            out += body[i:close + 1]
            i = close + 1
            continue
        if (t.type in _NAMES and t.text == var and i + 2 < len(body)
                and body[i + 1].type == "DOT"):
            out.append(body[i + 2])
            i += 3
            continue
        out.append(t)
        i += 1
    return _join(out, True)


def _cond_span(tokens: Sequence[Tok], k: int) -> int:
    """One past the condition starting at ``tokens[k]`` (up to AND, OR, a clause, ``]`` or an
    unmatched ``)`` at its level)."""
    depth = 0
    for i in range(k, len(tokens)):
        t = tokens[i]
        if t.type in ("LPAR", "LBRACE", "LSQB"):
            depth += 1
        elif t.type in ("RPAR", "RBRACE", "RSQB"):
            if depth == 0:
                return i
            depth -= 1
        elif depth == 0 and (t.type in ("AND", "OR") or t.type in _CLAUSES):
            return i
    return len(tokens)


def _sase_index(tokens: Sequence[Tok], k: int) -> tuple[str, int] | None:
    """SASE's ``[i]``, ``[i-1]`` or ``[1]`` from ``tokens[k]`` (the ``[``) followed by
    ``.attr``: ``cur``, ``prev`` or ``first``, and the index of the attribute's token."""
    kinds = [t.type for t in tokens[k:k + 8]]
    texts = [t.text for t in tokens[k:k + 8]]
    if kinds[:3] == ["LSQB", "NAME", "RSQB"] and texts[1] == "i":
        which, at = "cur", k + 3
    elif kinds[:5] == ["LSQB", "NAME", "MINUS", "NUMBER", "RSQB"] and texts[1] == "i" \
            and texts[3] == "1":
        which, at = "prev", k + 5
    elif kinds[:3] == ["LSQB", "NUMBER", "RSQB"] and texts[1] == "1":
        which, at = "first", k + 3
    else:
        return None
    if at + 1 < len(tokens) and tokens[at].type == "DOT" and tokens[at + 1].type in _NAMES:
        return which, at + 1
    return None


def _sase_condition(tokens: Sequence[Tok]) -> tuple[str, str] | None:
    """A SASE condition over ``b[i].x``, ``b[i-1].x``, ``b[1].x`` (one variable ``b``) as
    ``b[…]`` in CEQL: the variable and the rewrite."""
    var: str | None = None
    out: list[Tok] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        found = _sase_index(tokens, i + 1) if t.type in _NAMES and i + 1 < len(tokens) \
            else None
        if found is not None:
            if var is not None and var != t.text:
                return None
            var = t.text
            which, at = found
            attr = tokens[at].text
            word = {"cur": attr, "prev": f"PREV({attr})", "first": f"FIRST({t.text}.{attr})"}
            out.append(Tok("NAME", word[which], t.start, tokens[at].end))
            i = at + 1
            continue
        if t.type not in _CONDITION_TOKENS:
            return None
        out.append(t)
        i += 1
    if var is None:
        return None
    return var, f"{var}[{_join(out, True)}]"


def _r_correlation(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok],
                   complete: bool, mode: str, word: str, prev_word: str) -> Hint | None:
    prev = before[-1] if before else None
    if prev is None:
        return None
    # FILTER b.price > a.price: a condition outside brackets
    if mode == "FILTER" and bad.type == "DOT" and prev.type in _NAMES and after \
            and after[0].type in _NAMES | _SOFT_ATTRS:
        var, attr = prev.text, after[0].text
        shown = f"'{var}.{attr}'"
        stop = _cond_span(after, 1)
        if 1 < stop and after[1].type in _COMPARE | {"LIKE", "IN", "NOT"}:
            rest = _join(after[1:stop], True)
            return Hint(f"{shown} {_NOT_SUPPORTED} outside brackets; a condition on "
                        f"{var}'s events is written {var}[…]: {var}[{attr} {rest}]",
                        prev.start, after[stop - 1].end)
        return Hint(f"{shown} {_NOT_SUPPORTED} outside brackets; a condition on {var}'s "
                    f"events is written {var}[…], e.g. {var}[{attr} > 0]", prev.start,
                    after[0].end)
    # SASE's b[i].price > b[i-1].price as a FILTER condition: refused at the first ']'
    if mode == "BRACKET" and bad.type == "RSQB":
        open_at = _match_back([*before, bad], len(before), "LSQB", "RSQB")
        if open_at is not None and open_at >= 1 and before[open_at - 1].type in _NAMES:
            tokens = [*before[open_at - 1:], bad, *after]
            if _sase_index(tokens, 1) is not None:
                stop = _cond_span(tokens, 0)
                rewrite = _sase_condition(tokens[:stop])
                if rewrite is not None:
                    return Hint(f"SASE's indexed events "
                                f"('{_source(text, tokens[0], tokens[stop - 1])}') are not "
                                f"supported in CEQL; inside {rewrite[0]}[…] a name is the "
                                f"current {rewrite[0]} event's attribute and PREV(attr) the "
                                f"previous one's: {rewrite[1]}", tokens[0].start,
                                tokens[stop - 1].end)
                return Hint(f"SASE's indexed events ('{_source(text, tokens[0], bad)}') are "
                            "not supported in CEQL; inside b[…] a name is the current b "
                            "event's attribute and PREV(attr) the previous one's, e.g. "
                            "b[price > PREV(price)]", tokens[0].start, bad.end)
    # b[price > a[price]] or b[price > b[i-1].price]: brackets inside a condition
    if mode == "BRACKET" and bad.type == "LSQB" and prev.type in _NAMES:
        tokens = [prev, bad, *after]
        owner = _bracket_var(before[:-1])
        index = _sase_index(tokens, 1)
        if index is not None:
            which, at = index
            attr = tokens[at].text
            shown = _source(text, prev, tokens[at])
            what = {"cur": attr, "prev": f"PREV({attr})", "first": f"FIRST({prev.text}.{attr})"}
            if which != "first" and owner is not None and owner.text != prev.text:
                return Hint(f"'{shown}' (SASE) {_NOT_SUPPORTED}; PREV and plain names read "
                            f"the events of the variable whose brackets they are in: write "
                            f"{prev.text}[… {what[which]} …]", prev.start, tokens[at].end)
            return Hint(f"'{shown}' (SASE) {_NOT_SUPPORTED}; write {what[which]}",
                        prev.start, tokens[at].end)
        if len(tokens) >= 4 and tokens[2].type in _NAMES | _SOFT_ATTRS \
                and tokens[3].type == "RSQB":
            shown = _source(text, prev, tokens[3])
            return Hint(f"'{shown}' {_NOT_SUPPORTED} inside a condition; an attribute of "
                        f"{prev.text}'s events is written {prev.text}.{tokens[2].text}",
                        prev.start, tokens[3].end)
    # calls: COUNT(*), PREV(), PREV(price, 1), LAST(b.price, 1)
    if mode == "BRACKET":
        return _call_hint(text, before, bad, after)
    return None


#: Keywords the grammar accepts as attribute names (``attr_name``).
_SOFT_ATTRS = frozenset({"ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT", "NONE", "EVENTS",
                         "EVENT", "INTERVAL", "RANGE", "HOURS", "HOUR", "MINUTES", "MINUTE",
                         "SECONDS", "SECOND", "MILLISECONDS", "MILLISECOND", "DISTINCT"})


def _source(text: str, first: Tok, last: Tok) -> str:
    """The query's text from ``first`` to ``last``, on one line."""
    return " ".join(text[first.start:last.end].split())


def _open_call(before: Sequence[Tok]) -> int | None:
    """Index in ``before`` of the function name whose ``(`` is still open at its end."""
    depth = 0
    for i in range(len(before) - 1, 0, -1):
        kind = before[i].type
        if kind == "RPAR":
            depth += 1
        elif kind == "LPAR":
            if depth == 0:
                return i - 1 if _is_function(before[i - 1]) else None
            depth -= 1
        elif kind in ("LSQB", "RSQB"):
            return None
    return None


def _call_hint(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok]
               ) -> Hint | None:
    at = _open_call(before)
    if at is None:
        return None
    func = before[at]
    name = func.text.upper()
    arg = list(before[at + 2:])
    owner = _bracket_var(before[:at])
    var = owner.text if owner is not None else _last_alias(before) or "b"
    close = _match_forward([*before[at + 1:], bad, *after], 0)
    end = ([*before[at + 1:], bad, *after][close].end if close is not None else bad.end)
    if bad.type == "STAR" and not arg and name == "COUNT":
        return Hint(f"COUNT(*) {_NOT_SUPPORTED}; COUNT takes a variable and counts its events "
                    f"in the match: COUNT({var})", func.start, end)
    if bad.type == "RPAR" and [t.type for t in arg][:1] == ["DISTINCT"] and len(arg) == 2 \
            and arg[1].type in _NAMES:
        aliases = {t.text for k, t in enumerate(before) if k and before[k - 1].type == "AS"}
        if arg[1].text in aliases:
            x = arg[1].text
            return Hint(f"{_source(text, func, bad)} needs an attribute of {x}: COUNT({x}) "
                        f"counts {x}'s events (each one is distinct), and "
                        f"{name}(DISTINCT {x}.attr) is over the distinct values of attr among "
                        "them", func.start, bad.end)
        return Hint(f"{_source(text, func, bad)} needs a variable's attribute: "
                    f"{name}(DISTINCT {var}.{arg[1].text}) is over the distinct values of "
                    f"{arg[1].text} among the {var} events of the match", func.start, bad.end)
    if bad.type == "RPAR" and not arg:
        example = {"PREV": "an attribute of the filtered event: PREV(price)",
                   "COUNT": f"a variable: COUNT({var})"}.get(
                       name, f"a variable's attribute: {name}({var}.price)")
        return Hint(f"{func.text}() needs an argument, {example}", func.start, bad.end)
    if bad.type == "COMMA" and arg:
        shown = _source(text, func, [*before[at + 1:], bad, *after][close]) \
            if close is not None else f"{func.text}(…, …)"
        kinds = [t.type for t in arg]
        qualified = len(arg) == 3 and kinds[1] == "DOT"
        if name == "PREV":
            attr = arg[-1].text if qualified or len(arg) == 1 else "attr"
            where = f" inside {arg[0].text}[…]" if qualified else ""
            return Hint(f"{shown} (MATCH_RECOGNIZE's PREV with an offset) {_NOT_SUPPORTED}; "
                        "CEQL's PREV(attr) is attr of the previous event of the variable whose "
                        f"brackets it is in (not of the previous row), with no offset: write "
                        f"PREV({attr}){where}", func.start, end)
        if name in ("FIRST", "LAST"):
            which = name.lower()
            if qualified:
                v, a = arg[0].text, arg[2].text
                what = f"{name}({v}.{a}) is the {which} {v} event's {a}"
                before_each = f"for the {v} event before each {v}, write PREV({a}) inside {v}[…]"
            else:
                what = f"{name}(b.attr) is attr of the {which} b event"
                before_each = "for the b event before each b, write PREV(attr) inside b[…]"
            return Hint(f"{shown} (MATCH_RECOGNIZE's {name} with an offset) {_NOT_SUPPORTED}; "
                        f"{what}, with no offset; {before_each}", func.start, end)
        one = f"{name}({var})" if name == "COUNT" else f"{name}({var}.price)"
        return Hint(f"{shown} {_NOT_SUPPORTED}; {name} takes one argument: {one}",
                    func.start, end)
    return None


def _last_alias(before: Sequence[Tok]) -> str | None:
    """The last ``AS`` name in ``before``."""
    for i in range(len(before) - 1, 0, -1):
        if before[i].type in _NAMES and before[i - 1].type == "AS":
            return before[i].text
    return None


# ---------------------------------------------------------------- SELECT a.attr, AFTER MATCH SKIP

_STRATEGY_WORDS = {"ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT"}


def _r_select_attrs(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok],
                    complete: bool, mode: str, word: str, prev_word: str) -> Hint | None:
    """``SELECT a.amount``: CEQL selects variables, whose events carry every attribute."""
    if mode != "SELECT" or bad.type != "DOT" or not before or before[-1].type not in _NAMES:
        return None
    head = max((i for i, t in enumerate(before) if t.type == "SELECT"), default=None)
    if head is None:
        return None
    first = head + 1 + (head + 1 < len(before) and before[head + 1].type in _STRATEGY_WORDS)
    tokens = [*before[first:], bad, *after]
    stop = next((i for i, t in enumerate(tokens) if t.type in _CLAUSES), len(tokens))
    items: list[list[Tok]] = [[]]
    for t in tokens[:stop]:
        if t.type == "COMMA":
            items.append([])
        else:
            items[-1].append(t)
    if not all(items) or any(it[0].type not in _NAMES for it in items):
        return None
    variables = list(dict.fromkeys(it[0].text for it in items))
    attrs = [(it[0].text, it[2].text) for it in items
             if len(it) == 3 and it[1].type == "DOT" and it[2].type in _NAMES | {"NAME"}]
    if not attrs:
        return None
    var, attr = attrs[0]
    shown = _source(text, tokens[0], tokens[stop - 1])
    return Hint(f"SELECT {shown} {_NOT_SUPPORTED}: SELECT lists variables, and a match reports "
                f"their events with every attribute. Write SELECT {', '.join(variables)} and "
                f"read {attr} from {var}'s events in each match (in Python: match.events, "
                f"with match.variables['{var}'] the positions of {var}'s events; in Spark: "
                f"MATCH_CEQL's output column {var}, an array of {var}'s events, so "
                f"{var}[0].{attr})", tokens[0].start, tokens[stop - 1].end)


def _r_after_match(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok],
                   complete: bool, mode: str, word: str, prev_word: str) -> Hint | None:
    """MATCH_RECOGNIZE's ``AFTER MATCH SKIP …``: CONSUME BY, or the default."""
    words = [t.text.upper() for t in after[:5]]
    if word != "AFTER" or words[:2] != ["MATCH", "SKIP"]:
        return None
    rest = words[2:]
    partitioned = any(t.type == "PARTITION" for t in before)
    consume = "CONSUME BY PARTITION" if partitioned else "CONSUME BY ANY"
    within = (" (a match's events are used up in its partition, as MATCH_RECOGNIZE skips "
              "within one)" if partitioned else "")
    if rest[:3] == ["PAST", "LAST", "ROW"]:
        end = after[4]
        advice = (f"write {consume}{within}: once a match is output, later matches start after "
                  "its last event (CONSUME BY comes after PARTITION BY and WITHIN, before "
                  "LIMIT)")
    elif rest[:3] == ["TO", "NEXT", "ROW"]:
        end = after[4]
        advice = ("leave it out: CEQL reports every match, overlapping ones included (SELECT "
                  "ALL, the default); for one match per end event write SELECT NEXT * or "
                  "SELECT LAST * (docs/strategies.md)")
    elif rest[:1] == ["TO"] and len(after) > 3 and after[3].type in _NAMES | {"LAST"}:
        k = 4 if rest[1:2] in (["FIRST"], ["LAST"]) and len(after) > 4 else 3
        end = after[k]
        advice = (f"CEQL cannot resume from an event of the match; the nearest are {consume} "
                  "(later matches start after the whole match) and the default, every match")
    else:
        end = after[1]
        advice = (f"write {consume} for SKIP PAST LAST ROW (later matches start after the "
                  "match), or leave it out for SKIP TO NEXT ROW (every match)")
    return Hint(f"{_source(text, bad, end)} (MATCH_RECOGNIZE) {_NOT_SUPPORTED}; {advice}",
                bad.start, end.end)


_TOKEN_RULES = (_r_correlation, _r_quantifier, _r_followed_by, _r_pattern, _r_select_attrs,
                _r_after_match, _r_sql_words, _r_predicates, _r_units, _r_formula_joins)


# ---------------------------------------------------------------- a character the lexer refused


def explain_char(text: str, pos: int, before: Sequence[Tok]) -> Hint | None:
    """Explain the character at ``pos``, which no CEQL token starts with, after ``before``."""
    char = text[pos]
    mode = mode_of(before)
    prev = before[-1] if before else None
    pair = text[pos:pos + 2]
    if char == "?" and mode == "WHERE" and prev is not None:
        start = _operand_start(before)
        if prev.type == "PLUS" and start is not None:
            op = _join(before[start:])
            return Hint(f"'{op}?' (a lazy quantifier) {_NOT_SUPPORTED}; write {op}: CEQL "
                        "reports every match, and SELECT NEXT * or SELECT LAST * keeps one "
                        "per end event", before[start].start, pos + 1)
        after, complete = lex_after(text, pos + 1)
        return _quantifier_hint(before, _Quantifier("?", "optional", pos + 1, 0, 0, 1),
                                after, complete)
    if pair in ("&&", "||") or char in "&|":
        width = 2 if pair in ("&&", "||") else 1
        word = "AND" if char == "&" else "OR"
        shown = text[pos:pos + width]
        return Hint(f"'{shown}' {_NOT_SUPPORTED}; write {word}", pos, pos + width)
    if char == "!" and pair != "!=":
        if mode == "WHERE":
            return _absence_hint(text, pos, before)
        return Hint(f"'!' {_NOT_SUPPORTED}; write NOT, or != for 'not equal'", pos, pos + 1)
    return None


def _absence_hint(text: str, pos: int, before: Sequence[Tok]) -> Hint:
    """``A ; !B ; C`` (SASE's negation): CEQL's ``A ; NOT B ; C``."""
    head = f"'!' {_NOT_SUPPORTED}; the absence of an event is written NOT"
    after, complete = lex_after(text, pos + 1)
    stop = _operand_end(after, 0)
    if stop is None:
        return Hint(f"{head}: A ; NOT B ; C (no B between A and C)", pos, pos + 1)
    element = f"NOT {_join(after[:stop])}"
    left = _sequence_before(before, len(before))
    right = _sequence_after(after, stop, complete)
    rewrite = element if left is None or right is None else _with(left, element, right)
    return Hint(f"{head}: {rewrite}", pos, pos + 1)


def _cond_end(after: Sequence[Tok]) -> int:
    """One past a condition's tail (operator and operand) in FILTER, before AND/OR/clauses."""
    depth = 0
    for i, t in enumerate(after):
        if t.type in ("LPAR", "LBRACE"):
            depth += 1
        elif t.type in ("RPAR", "RBRACE"):
            if depth == 0:
                return i
            depth -= 1
        elif depth == 0 and (t.type in ("AND", "OR") or t.type in _CLAUSES):
            return i
    return len(after)
