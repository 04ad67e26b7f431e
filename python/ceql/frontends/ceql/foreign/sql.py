"""SQL and MATCH_RECOGNIZE: ``GROUP BY``, ``DEFINE``, ``MEASURES``, ``HAVING``, ``ORDER BY``,
``IN (…)``, ``BETWEEN``, ``IS NULL``, ``RLIKE``, ``SELECT a.attr``, ``AFTER MATCH SKIP``,
``PATTERN (A B+ C)``'s items, and calls (``COUNT(*)``, ``PREV(x, 1)``, ``COUNT(DISTINCT x)``).
"""

from __future__ import annotations

from collections.abc import Sequence

from .scan import (
    bracket_var,
    expr_back,
    expr_forward,
    last_alias,
    match_forward,
    open_call,
    scan_forward,
)
from .tokens import (
    CLAUSES,
    CONDITION_TOKENS,
    LITERALS,
    NAMES,
    NOT_SUPPORTED,
    Hint,
    Tok,
    is_function,
    join,
    source,
)

__all__ = ["call_hint", "mr_items", "rule_after_match", "rule_predicates", "rule_select_attrs",
           "rule_sql_words"]


def mr_items(after: Sequence[Tok], k: int) -> tuple[str, int] | None:
    """MATCH_RECOGNIZE's ``PATTERN (A B+ C)`` from ``after[k]`` as a contiguous sequence."""
    close = match_forward(after, k)
    if close is None or close == k + 1:
        return None
    out: list[str] = []
    for t in after[k + 1:close]:
        if t.type in NAMES:
            out.append(t.text)
        elif t.type == "PLUS" and out and not out[-1].endswith(":+"):
            out[-1] += ":+"
        else:
            return None
    return " : ".join(out), close


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


def rule_sql_words(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok],
                   complete: bool, mode: str, word: str, prev_word: str) -> Hint | None:
    if word == "GROUP" and after and after[0].type == "BY":
        names = []
        for t in after[1:]:
            if t.type in NAMES:
                names.append(t.text)
            elif t.type != "COMMA":
                break
        example = f"PARTITION BY [{', '.join(names)}]" if names else "PARTITION BY [key]"
        return Hint(f"GROUP BY {NOT_SUPPORTED}; to match within each key write {example}",
                    bad.start, after[0].end)
    if prev_word == "EVERY" and mode == "WHERE":
        return Hint(_SQL_WORDS["EVERY"].format(ns=NOT_SUPPORTED), before[-1].start,
                    before[-1].end)
    if word == "DEFINE":
        found = _define(after, complete)
        if found is not None:
            rewrite, prev = found
            note = (" (PREV there is the previous event of the same variable in the match, "
                    "not the previous row)" if prev else "")
            return Hint(f"DEFINE {NOT_SUPPORTED}; a condition on a variable goes in FILTER, "
                        f"in that variable's brackets: {rewrite}{note}", bad.start, bad.end)
    message = _SQL_WORDS.get(word)
    if message is None:
        return None
    end = after[0].end if word == "ORDER" and after and after[0].type == "BY" else bad.end
    return Hint(message.format(ns=NOT_SUPPORTED), bad.start, end)


def rule_predicates(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok],
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
        close = match_forward([bad, *after], 0, bad.type, "RPAR" if bad.type == "LPAR"
                              else "RSQB")
        what = "IN (…)" if bad.type == "LPAR" else "IN […]"
        at = expr_back(subject)
        items = [bad, *after][1:close] if close is not None else []
        ok = bool(items) and all(t.type in LITERALS | {"COMMA", "MINUS"} for t in items)
        if at is None or close is None or not ok:
            return Hint(f"{what} {NOT_SUPPORTED}; a set of values is written in braces: "
                        "x IN {1, 2}", first.start, bad.end)
        rewrite = (f"{join(subject[at:], True)} {'NOT IN' if negated else 'IN'} "
                   f"{{{join(items, True)}}}")
        end = [bad, *after][close].end
        return Hint(f"{what} {NOT_SUPPORTED}; write {rewrite} (a set is written in braces)",
                    first.start, end)
    if word == "BETWEEN":
        first = prev if negated else bad
        at = expr_back(subject)
        lo_end = expr_forward(after, 0, {"AND"})
        if at is None or lo_end == 0 or lo_end >= len(after) or after[lo_end].type != "AND":
            return Hint(f"BETWEEN {NOT_SUPPORTED}; write x IN RANGE(lo, hi) (inclusive at "
                        "both ends)", first.start, bad.end)
        hi_end = expr_forward(after, lo_end + 1, {"AND", "OR", "RSQB"})
        if hi_end == lo_end + 1:
            return None
        rewrite = (f"{join(subject[at:], True)} {'NOT IN' if negated else 'IN'} RANGE("
                   f"{join(after[:lo_end], True)}, {join(after[lo_end + 1:hi_end], True)})")
        return Hint(f"BETWEEN {NOT_SUPPORTED}; write {rewrite} (inclusive at both ends)",
                    first.start, after[hi_end - 1].end)
    if word == "IS":
        is_not = bool(after) and after[0].type == "NOT"
        nul = after[1 if is_not else 0] if len(after) > (1 if is_not else 0) else None
        end = nul.end if nul is not None and nul.text.upper() == "NULL" else bad.end
        if is_not:
            return Hint(f"IS NOT NULL {NOT_SUPPORTED}, and not needed: a comparison is false "
                        "when its attribute is missing or NULL (x[price > 0] keeps only events "
                        "that have a price)", bad.start, end)
        return Hint(f"IS NULL {NOT_SUPPORTED}, and CEQL has no test for a missing value: a "
                    "missing or NULL attribute makes every comparison on it false, and NOT of "
                    "such a comparison false too", bad.start, end)
    if word in ("RLIKE", "REGEXP"):
        return Hint(f"{word} {NOT_SUPPORTED}; LIKE takes a regular expression here: "
                    "x LIKE '^ab+'", bad.start, bad.end)
    if word == "ILIKE":
        return Hint(f"ILIKE {NOT_SUPPORTED}; LIKE takes a regular expression here, and (?i) "
                    "at its start ignores case: x LIKE '(?i)^abc'", bad.start, bad.end)
    return None


def _define(after: Sequence[Tok], complete: bool) -> tuple[str, bool] | None:
    """MATCH_RECOGNIZE's ``DEFINE A AS cond, B AS cond`` (``after``: the tokens after DEFINE)
    as ``FILTER A[cond] AND B[cond]``, and whether a PREV was translated; None when some part
    has no plain CEQL form."""
    defs: list[tuple[Tok, list[Tok]]] = []
    i = 0
    while i < len(after):
        if i + 1 >= len(after) or after[i].type not in NAMES or after[i + 1].type != "AS":
            return None
        var = after[i]
        i += 2
        end = scan_forward(after, i, lambda kind: kind == "COMMA" or kind in CLAUSES,
                           frozenset({"LPAR", "LBRACE"}), frozenset({"RPAR", "RBRACE"}))
        body, i = list(after[i:end]), end
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
        prev = prev or any(is_function(t) and t.text.upper() == "PREV" for t in body)
        parts.append(f"{var.text}[{cond}]")
    return f"FILTER {' AND '.join(parts)}", prev


def _own_attributes(body: Sequence[Tok], var: str) -> str | None:
    """A condition of ``var`` written with qualified names (``B.price > PREV(B.price)``) as
    the inside of ``var[…]`` (``price > PREV(price)``); None when it is not plain CEQL."""
    out: list[Tok] = []
    i = 0
    while i < len(body):
        t = body[i]
        if t.type not in CONDITION_TOKENS:
            return None
        if is_function(t) and i + 1 < len(body) and body[i + 1].type == "LPAR":
            close = match_forward(body, i + 1)
            if close is None:
                return None
            arg = body[i + 2:close]
            name = t.text.upper()
            kinds = [a.type for a in arg]
            if name == "PREV":
                if kinds == ["NAME"] or (kinds[1:] == ["DOT", "NAME"] and arg[0].text == var
                                         and arg[0].type in NAMES):
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
        if (t.type in NAMES and t.text == var and i + 2 < len(body)
            and body[i + 1].type == "DOT"):
            out.append(body[i + 2])
            i += 3
            continue
        out.append(t)
        i += 1
    return join(out, True)


def call_hint(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok]
              ) -> Hint | None:
    at = open_call(before)
    if at is None:
        return None
    func = before[at]
    name = func.text.upper()
    arg = list(before[at + 2:])
    owner = bracket_var(before[:at])
    var = owner.text if owner is not None else last_alias(before) or "b"
    close = match_forward([*before[at + 1:], bad, *after], 0)
    end = ([*before[at + 1:], bad, *after][close].end if close is not None else bad.end)
    if bad.type == "STAR" and not arg and name == "COUNT":
        return Hint(f"COUNT(*) {NOT_SUPPORTED}; COUNT takes a variable and counts its events "
                    f"in the match: COUNT({var})", func.start, end)
    if bad.type == "RPAR" and [t.type for t in arg][:1] == ["DISTINCT"] and len(arg) == 2 \
            and arg[1].type in NAMES:
        aliases = {t.text for k, t in enumerate(before) if k and before[k - 1].type == "AS"}
        if arg[1].text in aliases:
            x = arg[1].text
            return Hint(f"{source(text, func, bad)} needs an attribute of {x}: COUNT({x}) "
                        f"counts {x}'s events (each one is distinct), and "
                        f"{name}(DISTINCT {x}.attr) is over the distinct values of attr among "
                        "them", func.start, bad.end)
        return Hint(f"{source(text, func, bad)} needs a variable's attribute: "
                    f"{name}(DISTINCT {var}.{arg[1].text}) is over the distinct values of "
                    f"{arg[1].text} among the {var} events of the match", func.start, bad.end)
    if bad.type == "RPAR" and not arg:
        example = {"PREV": "an attribute of the filtered event: PREV(price)",
                   "COUNT": f"a variable: COUNT({var})"}.get(
                       name, f"a variable's attribute: {name}({var}.price)")
        return Hint(f"{func.text}() needs an argument, {example}", func.start, bad.end)
    if bad.type == "COMMA" and arg:
        shown = source(text, func, [*before[at + 1:], bad, *after][close]) \
            if close is not None else f"{func.text}(…, …)"
        kinds = [t.type for t in arg]
        qualified = len(arg) == 3 and kinds[1] == "DOT"
        if name == "PREV":
            attr = arg[-1].text if qualified or len(arg) == 1 else "attr"
            where = f" inside {arg[0].text}[…]" if qualified else ""
            return Hint(f"{shown} (MATCH_RECOGNIZE's PREV with an offset) {NOT_SUPPORTED}; "
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
            return Hint(f"{shown} (MATCH_RECOGNIZE's {name} with an offset) {NOT_SUPPORTED}; "
                        f"{what}, with no offset; {before_each}", func.start, end)
        one = f"{name}({var})" if name == "COUNT" else f"{name}({var}.price)"
        return Hint(f"{shown} {NOT_SUPPORTED}; {name} takes one argument: {one}",
                    func.start, end)
    return None


_STRATEGY_WORDS = {"ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT"}


def rule_select_attrs(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok],
                      complete: bool, mode: str, word: str, prev_word: str) -> Hint | None:
    """``SELECT a.amount``: CEQL selects variables, whose events carry every attribute."""
    if mode != "SELECT" or bad.type != "DOT" or not before or before[-1].type not in NAMES:
        return None
    head = max((i for i, t in enumerate(before) if t.type == "SELECT"), default=None)
    if head is None:
        return None
    first = head + 1 + (head + 1 < len(before) and before[head + 1].type in _STRATEGY_WORDS)
    tokens = [*before[first:], bad, *after]
    stop = next((i for i, t in enumerate(tokens) if t.type in CLAUSES), len(tokens))
    items: list[list[Tok]] = [[]]
    for t in tokens[:stop]:
        if t.type == "COMMA":
            items.append([])
        else:
            items[-1].append(t)
    if not all(items) or any(it[0].type not in NAMES for it in items):
        return None
    variables = list(dict.fromkeys(it[0].text for it in items))
    attrs = [(it[0].text, it[2].text) for it in items
             if len(it) == 3 and it[1].type == "DOT" and it[2].type in NAMES | {"NAME"}]
    if not attrs:
        return None
    var, attr = attrs[0]
    shown = source(text, tokens[0], tokens[stop - 1])
    return Hint(f"SELECT {shown} {NOT_SUPPORTED}: SELECT lists variables, and a match reports "
                f"their events with every attribute. Write SELECT {', '.join(variables)} and "
                f"read {attr} from {var}'s events in each match (in Python: match.events, "
                f"with match.variables['{var}'] the positions of {var}'s events; in Spark: "
                f"MATCH_CEQL's output column {var}, an array of {var}'s events, so "
                f"{var}[0].{attr})", tokens[0].start, tokens[stop - 1].end)


def rule_after_match(text: str, before: Sequence[Tok], bad: Tok, after: Sequence[Tok],
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
    elif rest[:1] == ["TO"] and len(after) > 3 and after[3].type in NAMES | {"LAST"}:
        k = 4 if rest[1:2] in (["FIRST"], ["LAST"]) and len(after) > 4 else 3
        end = after[k]
        advice = (f"CEQL cannot resume from an event of the match; the nearest are {consume} "
                  "(later matches start after the whole match) and the default, every match")
    else:
        end = after[1]
        advice = (f"write {consume} for SKIP PAST LAST ROW (later matches start after the "
                  "match), or leave it out for SKIP TO NEXT ROW (every match)")
    return Hint(f"{source(text, bad, end)} (MATCH_RECOGNIZE) {NOT_SUPPORTED}; {advice}",
                bad.start, end.end)
