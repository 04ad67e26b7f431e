"""Where a formula operand, a ``;`` sequence, an expression or a condition starts or ends among
the tokens of a failed parse, and which bracket matches which.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .tokens import (
    CLAUSES,
    EXPR_TOKENS,
    FORMULA_TOKENS,
    NAMES,
    SEPS,
    SEQ_BOUNDARY,
    Tok,
    is_function,
)

__all__ = ["bracket_var", "cond_span", "expr_back", "expr_forward", "last_alias", "last_element",
           "match_back", "match_forward", "open_call", "operand_end", "operand_start",
           "scan_back", "scan_forward", "sequence_after", "sequence_before"]


_OPEN = frozenset({"LPAR"})
_SHUT = frozenset({"RPAR"})


def _scan(tokens: Sequence[Tok], indices: range, deeper: frozenset[str],
          shallower: frozenset[str], stop: Callable[[str], bool] | None) -> int | None:
    """The first of ``indices`` whose token leaves the bracket level the walk starts at
    (``shallower`` at depth 0) or, at that level, is a ``stop``; None when there is none."""
    depth = 0
    for i in indices:
        kind = tokens[i].type
        if kind in deeper:
            depth += 1
        elif kind in shallower:
            if depth == 0:
                return i
            depth -= 1
        elif depth == 0 and stop is not None and stop(kind):
            return i
    return None


def scan_forward(tokens: Sequence[Tok], k: int, stop: Callable[[str], bool] | None = None,
                 opens: frozenset[str] = _OPEN, shuts: frozenset[str] = _SHUT) -> int:
    """The index of the first token from ``tokens[k]`` on that closes a bracket opened before
    ``k`` or, outside the brackets opened from ``k``, is a ``stop`` (by its type);
    ``len(tokens)`` when there is none."""
    found = _scan(tokens, range(k, len(tokens)), opens, shuts, stop)
    return len(tokens) if found is None else found


def scan_back(tokens: Sequence[Tok], end: int, stop: Callable[[str], bool] | None = None,
              opens: frozenset[str] = _OPEN, shuts: frozenset[str] = _SHUT,
              first: int = 0) -> int:
    """Going back from ``tokens[end - 1]`` to ``tokens[first]``: the index of the first token
    that opens a bracket not closed before ``end`` or, outside the brackets closed before
    ``end``, is a ``stop`` (by its type); ``first - 1`` when there is none."""
    found = _scan(tokens, range(end - 1, first - 1, -1), shuts, opens, stop)
    return first - 1 if found is None else found


def match_back(tokens: Sequence[Tok], close: int, open_: str = "LPAR",
               shut: str = "RPAR") -> int | None:
    """Index of the bracket that ``tokens[close]`` closes."""
    i = scan_back(tokens, close, opens=frozenset({open_}), shuts=frozenset({shut}))
    return i if i >= 0 else None


def match_forward(tokens: Sequence[Tok], open_at: int, open_: str = "LPAR",
                  shut: str = "RPAR") -> int | None:
    """Index of the bracket that closes ``tokens[open_at]``."""
    i = scan_forward(tokens, open_at + 1, opens=frozenset({open_}), shuts=frozenset({shut}))
    return i if i < len(tokens) else None


def operand_start(before: Sequence[Tok]) -> int | None:
    """Where the formula operand ending ``before`` starts: a primary and its postfix ops."""
    i = len(before) - 1
    while i >= 0:
        if before[i].type in ("PLUS", "COLONPLUS"):
            i -= 1
        elif before[i].type in NAMES and i >= 1 and before[i - 1].type == "AS":
            i -= 2
        else:
            break
    if i < 0:
        return None
    if before[i].type in NAMES:
        if i >= 2 and before[i - 1].type == "GT" and before[i - 2].type in NAMES:
            return i - 2
        return i
    if before[i].type == "RPAR":
        return match_back(before, i)
    return None


def operand_end(after: Sequence[Tok], k: int) -> int | None:
    """One past the formula operand starting at ``after[k]`` (a primary and postfix ops)."""
    if k >= len(after):
        return None
    if after[k].type in NAMES:
        k += 3 if (k + 2 < len(after) and after[k + 1].type == "GT"
                   and after[k + 2].type in NAMES) else 1
    elif after[k].type == "LPAR":
        close = match_forward(after, k)
        if close is None:
            return None
        k = close + 1
    else:
        return None
    while k < len(after):
        if after[k].type in ("PLUS", "COLONPLUS"):
            k += 1
        elif after[k].type == "AS" and k + 1 < len(after) and after[k + 1].type in NAMES:
            k += 2
        else:
            break
    return k


def sequence_before(before: Sequence[Tok], start: int) -> list[Tok] | None:
    """The tokens of the ``;``/``:`` sequence before ``before[start]`` (empty if none)."""
    i = scan_back(before, start, lambda kind: kind in ("OR", "AND", "WHERE"))
    seq = list(before[i + 1:start])
    if seq and seq[-1].type not in SEPS:
        return None
    return seq


def sequence_after(after: Sequence[Tok], k: int, complete: bool) -> list[Tok] | None:
    """The tokens of the ``;``/``:`` sequence from ``after[k]`` (empty if none), when they
    are plain formula tokens."""
    i = scan_forward(after, k, SEQ_BOUNDARY.__contains__)
    if any(t.type not in FORMULA_TOKENS for t in after[k:i]):
        return None
    if i == len(after) and not complete:
        return None
    seq = list(after[k:i])
    if seq and seq[0].type not in SEPS:
        return None
    return seq


def last_element(seq: Sequence[Tok]) -> Tok | None:
    """The first token of the last element of ``seq`` (a sequence ending with its separator)."""
    depth = 0
    for i in range(len(seq) - 2, -1, -1):
        kind = seq[i].type
        if kind == "RPAR":
            depth += 1
        elif kind == "LPAR":
            depth -= 1
        elif depth == 0 and kind in SEPS:
            return seq[i + 1]
    return seq[0] if len(seq) >= 2 else None


def expr_back(before: Sequence[Tok]) -> int | None:
    """Where the predicate expression ending ``before`` starts."""
    i = scan_back(before, len(before), lambda kind: kind not in EXPR_TOKENS)
    return i + 1 if i + 1 < len(before) else None


def expr_forward(after: Sequence[Tok], k: int, stops: set[str]) -> int:
    """One past the predicate expression starting at ``after[k]``."""
    return scan_forward(after, k, lambda kind: kind in stops or kind not in EXPR_TOKENS)


def bracket_var(before: Sequence[Tok]) -> Tok | None:
    """The variable of the ``x[`` that ``before`` is inside."""
    i = scan_back(before, len(before), opens=frozenset({"LSQB"}), shuts=frozenset({"RSQB"}),
                  first=1)
    if i < 1:
        return None
    return before[i - 1] if before[i - 1].type in NAMES else None


def open_call(before: Sequence[Tok]) -> int | None:
    """Index in ``before`` of the function name whose ``(`` is still open at its end (None
    when a square bracket stands after that ``(``)."""
    i = scan_back(before, len(before), first=1)
    if i < 1 or any(t.type in ("LSQB", "RSQB") for t in before[i + 1:]):
        return None
    return i - 1 if is_function(before[i - 1]) else None


def cond_span(tokens: Sequence[Tok], k: int) -> int:
    """One past the condition starting at ``tokens[k]`` (up to AND, OR, a clause, ``]`` or an
    unmatched ``)`` at its level)."""
    return scan_forward(tokens, k, lambda kind: kind in ("AND", "OR") or kind in CLAUSES,
                        frozenset({"LPAR", "LBRACE", "LSQB"}),
                        frozenset({"RPAR", "RBRACE", "RSQB"}))


def last_alias(before: Sequence[Tok]) -> str | None:
    """The last ``AS`` name in ``before``."""
    for i in range(len(before) - 1, 0, -1):
        if before[i].type in NAMES and before[i - 1].type == "AS":
            return before[i].text
    return None
