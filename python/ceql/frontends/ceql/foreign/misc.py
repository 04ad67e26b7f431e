"""Slips of no one language: formulas side by side (``A B``, ``A, B``, ``A NOT B``) and time
units CEQL does not spell (``10 s``, ``INTERVAL '1' day``).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from fractions import Fraction

from .scan import (
    operand_end,
    operand_start,
)
from .tokens import (
    NAMES,
    NOT_SUPPORTED,
    Hint,
    Tok,
    join,
)

__all__ = ["rule_formula_joins", "rule_units"]


def rule_formula_joins(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok],
                       complete: bool, mode: str, word: str, prev_word: str) -> Hint | None:
    if mode != "WHERE":
        return None
    start = operand_start(before)
    stop = operand_end(after, 0)
    pair = None
    if start is not None and stop is not None:
        pair = (join(before[start:]), join(after[:stop]))
    if bad.type == "NOT" and start is not None:
        a = join(before[start:])
        after_not = operand_end(after, 0)
        b = join(after[:after_not]) if after_not is not None else "B"
        end = after[after_not - 1].end if after_not is not None else bad.end
        used = {t.text for t in (*before[start:], *after[:after_not or 0])}
        c = next(x for x in ("C", "D", "E", "X", "Y", "Z", "next") if x not in used)
        return Hint(f"'{a} NOT {b}' {NOT_SUPPORTED}; a NOT is an element of a ';' sequence: "
                    f"{a} ; NOT {b} ; {c} matches {a} then {c} with no {b} between them (a NOT "
                    "at the end of the pattern also needs WITHIN)", before[start].start, end)
    if bad.type == "COMMA" and start is not None:
        a, b = pair if pair else ("A", "B")
        return Hint(f"',' between formulas {NOT_SUPPORTED}; write {a} ; {b} for one after "
                    f"the other, or {a} OR {b} for either", bad.start, bad.end)
    if bad.type in NAMES and start is not None and not _keyword_typo(bad.text):
        a = join(before[start:])
        b = bad.text
        return Hint(f"'{a} {b}' {NOT_SUPPORTED}; write {a} ; {b} for {b} after {a}, or "
                    f"{a} AS {b} to name the event {b}", before[start].start, bad.end)
    return None


_FORMULA_FOLLOWERS = ("AS", "AND", "OR", "FILTER", "PARTITION", "WITHIN", "CONSUME", "LIMIT")


def _keyword_typo(word: str) -> bool:
    """True when ``word`` looks like a misspelt keyword that may follow a formula."""
    return bool(difflib.get_close_matches(word.upper(), _FORMULA_FOLLOWERS, n=1, cutoff=0.75))


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


def rule_units(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok],
               complete: bool, mode: str, word: str, prev_word: str) -> Hint | None:
    if mode != "WITHIN" or bad.type not in NAMES or not before:
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
        return Hint(f"{bad.text} {NOT_SUPPORTED} as a unit; write INTERVAL '{value}' {name}",
                    start, bad.end)
    return Hint(f"'{text[prev.start:bad.end]}' {NOT_SUPPORTED}; write {value} {name}",
                prev.start, bad.end)
