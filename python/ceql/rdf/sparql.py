"""A GPM's SPARQL text seen just enough to run it over many events at once.

The batch path loads a batch's events into one store as named graphs and runs each GPM once,
rewritten from ``SELECT vars WHERE { body }`` to::

    SELECT ?__ceql_event vars WHERE { GRAPH ?__ceql_event { body } FILTER(isBLANK(?__ceql_event)) }

(event graphs are named by blank nodes, the dataset's by IRIs, so the filter keeps events
only). ``GRAPH <iri> { … }`` inside the body still reads the dataset: the innermost GRAPH
sets the active graph. That is the per-event answer for each event only when nothing in the
query looks across solutions or graphs, so a GPM is run event by event when it has a
subquery, ``GRAPH ?var``, ``SERVICE``, ``FROM``, an aggregate in its projection, or anything
after its WHERE group (``GROUP BY``, ``ORDER BY``, ``LIMIT``, ``OFFSET``, ``VALUES``, …).

The scan knows strings, IRIs and comments (so braces and keywords in them are not seen); it
does not validate: the library parses every query, the rewrite included, and a rewrite it
refuses falls back to the per-event path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["EVENT_VAR", "BatchPlan", "Token", "canonical_form", "plan_batch", "tokenize"]

EVENT_VAR = "__ceql_event"

_TOKEN = re.compile(
    r"""(?P<space>\s+)
      | (?P<comment>\#[^\n]*)
      | (?P<string>\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"|'''(?:[^'\\]|\\.|'(?!''))*'''
                   |"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
      | (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
      | (?P<var>[?$][^\s(){}\[\],;.!=<>+*/|&"'^#-]+)
      | (?P<pname>(?:[A-Za-z][\w.-]*)?:[\w.:%-]*)
      | (?P<word>[A-Za-z_]\w*)
      | (?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)
_AGGREGATES = {"COUNT", "SUM", "MIN", "MAX", "AVG", "SAMPLE", "GROUP_CONCAT"}


@dataclass(frozen=True, slots=True)
class BatchPlan:
    """How a GPM runs on a batch: ``query`` (the rewrite) when ``why`` is empty, else event by
    event, ``why`` saying what stops the rewrite."""

    query: str
    why: str = ""


@dataclass(frozen=True, slots=True)
class Token:
    """A token of a query: ``kind`` is ``string``, ``iri``, ``var``, ``pname``, ``word`` or
    ``other`` (one character); ``start``, ``end``: where its text is in the query."""

    kind: str
    text: str
    start: int
    end: int


def tokenize(text: str) -> list[Token]:
    """The tokens of a query, spaces and comments left out (see the module's docstring)."""
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "other"
        if kind not in ("space", "comment"):
            out.append(Token(kind, m.group(), m.start(), m.end()))
    return out


def _word(t: Token) -> str:
    return t.text.upper() if t.kind == "word" else ""


def plan_batch(query: str) -> BatchPlan:
    """The batch form of a GPM's SELECT query, or why it has none."""
    tokens = tokenize(query)
    select = next((i for i, t in enumerate(tokens) if _word(t) == "SELECT"), None)
    if select is None:
        return BatchPlan("", "not a SELECT query")
    i = select + 1
    if i < len(tokens) and _word(tokens[i]) in ("DISTINCT", "REDUCED"):
        i += 1
    proj_start = i
    while i < len(tokens) and tokens[i].text != "{" and _word(tokens[i]) not in ("WHERE", "FROM"):
        i += 1
    projection = tokens[proj_start:i]
    if i < len(tokens) and _word(tokens[i]) == "FROM":
        return BatchPlan("", "a FROM clause")
    if any(_word(t) in _AGGREGATES for t in projection):
        return BatchPlan("", "an aggregate in the projection")
    while i < len(tokens) and tokens[i].text != "{":
        i += 1
    if i == len(tokens) or not projection:
        return BatchPlan("", "no WHERE group")
    body_start, depth = i, 0
    for j in range(body_start, len(tokens)):
        t = tokens[j]
        depth += (t.text == "{") - (t.text == "}")
        if depth == 0:
            body_end = j
            break
    else:
        return BatchPlan("", "an unclosed WHERE group")
    body = tokens[body_start:body_end + 1]
    for k, t in enumerate(body):
        word = _word(t)
        if word == "SELECT":
            return BatchPlan("", "a subquery")
        if word == "SERVICE":
            return BatchPlan("", "SERVICE")
        if word == "GRAPH" and k + 1 < len(body) and body[k + 1].kind == "var":
            return BatchPlan("", "GRAPH over a variable")
        if t.kind == "var" and t.text[1:] == EVENT_VAR:
            return BatchPlan("", f"the reserved variable ?{EVENT_VAR}")
    if body_end + 1 < len(tokens):
        return BatchPlan("", f"{tokens[body_end + 1].text} after the WHERE group")
    star = len(projection) == 1 and projection[0].text == "*"
    head = query[:tokens[proj_start].start]
    event = f"?{EVENT_VAR}"
    rewritten = (
        f"{head}{'' if star else event + ' '}"
        f"{query[tokens[proj_start].start:tokens[body_start].start]}"
        f"{{ GRAPH {event} {query[tokens[body_start].start:tokens[body_end].end]}\n"
        f"FILTER(isBLANK({event})) }}{query[tokens[body_end].end:]}"
    )
    return BatchPlan(rewritten)


def canonical_form(query: str) -> tuple[str, tuple[str, ...]]:
    """``query`` with its variables renamed ``?__ceql_v0``, ``?__ceql_v1``, … in order of first
    appearance, and the original names in that order: two queries with equal canonical texts
    differ only by the names of their variables, so one's solutions, renamed position by
    position, are the other's."""
    names: dict[str, int] = {}
    parts, at = [], 0
    for t in tokenize(query):
        if t.kind != "var":
            continue
        k = names.setdefault(t.text[1:], len(names))
        parts += [query[at:t.start], f"?__ceql_v{k}"]
        at = t.end
    parts.append(query[at:])
    return "".join(parts), tuple(names)
