"""Other CEP languages: Esper's and Flink's ``->``, ``FOLLOWED BY`` and ``THEN``, SASE's
``PATTERN SEQ(…)``, indexed events ``b[i].x`` and ``!B`` negation, MATCH_RECOGNIZE's
``PATTERN (…)``, and a variable's attribute written outside its brackets.
"""

from __future__ import annotations

from collections.abc import Sequence

from .scan import (
    bracket_var,
    cond_span,
    match_back,
    match_forward,
    operand_end,
    operand_start,
    sequence_after,
    sequence_before,
)
from .sequences import with_element
from .sql import call_hint, mr_items
from .tokens import (
    COMPARE,
    CONDITION_TOKENS,
    NAMES,
    NOT_SUPPORTED,
    SEMI_NOTE,
    SOFT_ATTRS,
    Hint,
    Tok,
    join,
    lex_after,
    source,
)

__all__ = ["absence_hint", "rule_correlation", "rule_followed_by", "rule_pattern"]


def rule_followed_by(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok],
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
    start = operand_start(before)
    stop = operand_end(after, k)
    if start is None or stop is None:
        return Hint(f"{what} {NOT_SUPPORTED}; write ';' between the two formulas "
                    f"({SEMI_NOTE})", bad.start, end)
    left, right = join(before[start:]), join(after[k:stop])
    return Hint(f"{what} {NOT_SUPPORTED}; write {left} ; {right} ({SEMI_NOTE})",
                bad.start, end)


def _sase_items(after: Sequence[Tok], k: int) -> tuple[str, int] | None:
    """``SEQ(A a, B+ b[], C)`` from ``after[k]`` (the ``(``) as a CEQL sequence."""
    close = match_forward(after, k)
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


def rule_pattern(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok],
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
            return Hint(f"{what} (SASE) {NOT_SUPPORTED}; write the pattern after WHERE with "
                        "';' between the events, e.g. WHERE A AS a ; B AS b", at.start,
                        rest[0].end)
        seq, close = found
        return Hint(f"{what} (SASE) {NOT_SUPPORTED}; write the pattern after WHERE with ';' "
                    f"between the events: WHERE {seq}", at.start, rest[close].end)
    if at.text.upper() != "PATTERN" or not rest or rest[0].type != "LPAR":
        return None
    found = mr_items(rest, 0)
    example = found[0] if found is not None else "A : B:+ : C"
    end = rest[found[1]].end if found is not None else rest[0].end
    return Hint(f"PATTERN (…) (MATCH_RECOGNIZE) {NOT_SUPPORTED}; write the pattern after "
                f"WHERE, ':' for the next event and ';' for any later one: WHERE {example}; "
                "conditions from DEFINE go in FILTER, e.g. FILTER A[price > 10]", at.start, end)


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
    if at + 1 < len(tokens) and tokens[at].type == "DOT" and tokens[at + 1].type in NAMES:
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
        found = _sase_index(tokens, i + 1) if t.type in NAMES and i + 1 < len(tokens) \
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
        if t.type not in CONDITION_TOKENS:
            return None
        out.append(t)
        i += 1
    if var is None:
        return None
    return var, f"{var}[{join(out, True)}]"


def rule_correlation(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok],
                     complete: bool, mode: str, word: str, prev_word: str) -> Hint | None:
    prev = before[-1] if before else None
    if prev is None:
        return None
    # FILTER b.price > a.price: a condition outside brackets
    if mode == "FILTER" and bad.type == "DOT" and prev.type in NAMES and after \
            and after[0].type in NAMES | SOFT_ATTRS:
        var, attr = prev.text, after[0].text
        shown = f"'{var}.{attr}'"
        stop = cond_span(after, 1)
        if 1 < stop and after[1].type in COMPARE | {"LIKE", "IN", "NOT"}:
            rest = join(after[1:stop], True)
            return Hint(f"{shown} {NOT_SUPPORTED} outside brackets; a condition on "
                        f"{var}'s events is written {var}[…]: {var}[{attr} {rest}]",
                        prev.start, after[stop - 1].end)
        return Hint(f"{shown} {NOT_SUPPORTED} outside brackets; a condition on {var}'s "
                    f"events is written {var}[…], e.g. {var}[{attr} > 0]", prev.start,
                    after[0].end)
    # SASE's b[i].price > b[i-1].price as a FILTER condition: refused at the first ']'
    if mode == "BRACKET" and bad.type == "RSQB":
        open_at = match_back([*before, bad], len(before), "LSQB", "RSQB")
        if open_at is not None and open_at >= 1 and before[open_at - 1].type in NAMES:
            tokens = [*before[open_at - 1:], bad, *after]
            if _sase_index(tokens, 1) is not None:
                stop = cond_span(tokens, 0)
                rewrite = _sase_condition(tokens[:stop])
                if rewrite is not None:
                    return Hint(f"SASE's indexed events "
                                f"('{source(text, tokens[0], tokens[stop - 1])}') are not "
                                f"supported in CEQL; inside {rewrite[0]}[…] a name is the "
                                f"current {rewrite[0]} event's attribute and PREV(attr) the "
                                f"previous one's: {rewrite[1]}", tokens[0].start,
                                tokens[stop - 1].end)
                return Hint(f"SASE's indexed events ('{source(text, tokens[0], bad)}') are "
                            "not supported in CEQL; inside b[…] a name is the current b "
                            "event's attribute and PREV(attr) the previous one's, e.g. "
                            "b[price > PREV(price)]", tokens[0].start, bad.end)
    # b[price > a[price]] or b[price > b[i-1].price]: brackets inside a condition
    if mode == "BRACKET" and bad.type == "LSQB" and prev.type in NAMES:
        tokens = [prev, bad, *after]
        owner = bracket_var(before[:-1])
        index = _sase_index(tokens, 1)
        if index is not None:
            which, at = index
            attr = tokens[at].text
            shown = source(text, prev, tokens[at])
            what = {"cur": attr, "prev": f"PREV({attr})", "first": f"FIRST({prev.text}.{attr})"}
            if which != "first" and owner is not None and owner.text != prev.text:
                return Hint(f"'{shown}' (SASE) {NOT_SUPPORTED}; PREV and plain names read "
                            f"the events of the variable whose brackets they are in: write "
                            f"{prev.text}[… {what[which]} …]", prev.start, tokens[at].end)
            return Hint(f"'{shown}' (SASE) {NOT_SUPPORTED}; write {what[which]}",
                        prev.start, tokens[at].end)
        if len(tokens) >= 4 and tokens[2].type in NAMES | SOFT_ATTRS \
                and tokens[3].type == "RSQB":
            shown = source(text, prev, tokens[3])
            return Hint(f"'{shown}' {NOT_SUPPORTED} inside a condition; an attribute of "
                        f"{prev.text}'s events is written {prev.text}.{tokens[2].text}",
                        prev.start, tokens[3].end)
    # calls: COUNT(*), PREV(), PREV(price, 1), LAST(b.price, 1)
    if mode == "BRACKET":
        return call_hint(text, before, bad, after)
    return None


def absence_hint(text: str, pos: int, before: Sequence[Tok]) -> Hint:
    """``A ; !B ; C`` (SASE's negation): CEQL's ``A ; NOT B ; C``."""
    head = f"'!' {NOT_SUPPORTED}; the absence of an event is written NOT"
    after, complete = lex_after(text, pos + 1)
    stop = operand_end(after, 0)
    if stop is None:
        return Hint(f"{head}: A ; NOT B ; C (no B between A and C)", pos, pos + 1)
    element = f"NOT {join(after[:stop])}"
    left = sequence_before(before, len(before))
    right = sequence_after(after, stop, complete)
    rewrite = element if left is None or right is None else with_element(left, element, right)
    return Hint(f"{head}: {rewrite}", pos, pos + 1)
