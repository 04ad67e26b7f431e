"""Regular-expression quantifiers after a formula: ``A*``, ``A?``, ``A{n}``, ``A{m,n}``,
written out as CEQL's ``+``, ``;`` and OR.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .scan import (
    operand_start,
    sequence_after,
    sequence_before,
)
from .sequences import merged_without, not_next_to_not, with_element, without_element
from .tokens import (
    NOT_SUPPORTED,
    SEMI_NOTE,
    Hint,
    Tok,
    join,
)

__all__ = ["Quantifier", "quantifier_hint", "rule_quantifier"]


_MAX_COPIES = 6


@dataclass(frozen=True)
class Quantifier:
    text: str  # as written: '*', '?', '{2,4}'
    meaning: str
    end: int  # offset one past the quantifier
    resume: int  # index in ``after`` of the first token after it
    low: int
    high: int | None  # None: no upper bound


def _repeat(op: str, q: Quantifier) -> str | None:
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


def quantifier_hint(before: Sequence[Tok], q: Quantifier, after: Sequence[Tok],
                    complete: bool) -> Hint | None:
    start = operand_start(before)
    if start is None:
        return None
    op = join(before[start:])
    span_start = before[start].start
    head = f"'{op}{q.text}' ({q.meaning}) {NOT_SUPPORTED}"
    if start > 0 and before[start - 1].type == "NOT":
        before_not = sequence_before(before, start - 1)
        after_op = sequence_after(after, q.resume, complete)
        negated = f"NOT {op}"
        if before_not is not None and after_op is not None:
            negated = with_element(before_not, negated, after_op)
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
        return Hint(f"{head}; write {how} ({SEMI_NOTE})", span_start, q.end)
    left = sequence_before(before, start)
    right = sequence_after(after, q.resume, complete)
    if left is not None and right is not None and q.low == 0 \
            and not_next_to_not(left, right):
        merged = merged_without(left, right)
        if merged is not None:
            return Hint(f"{head}; write {with_element(left, element, right)} OR {merged} (the OR "
                        f"adds the matches without {op}, where the NOTs around it make one)",
                        span_start, q.end)
        left = right = None
    if left is None or right is None:
        left, right = [], []
        context = False
    else:
        context = True
    if q.low > 0:
        rewrite = with_element(left, element, right) if context else element
        note = f" ({SEMI_NOTE})" if ";" in element else ""
        return Hint(f"{head}; write {rewrite}{note}", span_start, q.end)
    if context and (left or right):
        rewrite = f"{with_element(left, element, right)} OR {without_element(left, right)}"
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


def rule_quantifier(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok],
                    complete: bool, mode: str, word: str, prev_word: str) -> Hint | None:
    if mode != "WHERE" or operand_start(before) is None:
        return None
    if bad.type == "STAR":
        return quantifier_hint(before, Quantifier("*", "zero or more", bad.end, 0, 0, None),
                               after, complete)
    if bad.type == "LBRACE":
        found = _braces([bad, *after], 0)
        if found is None:
            return Hint(f"Repetition counts in braces {NOT_SUPPORTED}; write the formula "
                        f"as many times as needed, joined by ';' ({SEMI_NOTE})",
                        bad.start, bad.end)
        low, high, past = found
        end = after[past - 2].end
        q = Quantifier(text[bad.start:end].replace(" ", ""), _brace_meaning(low, high), end,
                       past - 1, low, high)
        return quantifier_hint(before, q, after, complete)
    return None
