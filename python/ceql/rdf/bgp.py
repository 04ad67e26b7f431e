"""A basic graph pattern as the storeless path matches it (:mod:`ceql.rdf.fast`): triple
patterns of variables and constants, ``DISTINCT`` or not, and the FILTER constraints that path
decides; :func:`parse_bgp` finds it in a GPM's SPARQL text.

A GPM qualifies when it is ``SELECT [DISTINCT] vars|* [WHERE] { triple patterns and FILTERs }``,
its pattern terms variables, IRIs, prefixed names and ``a``, nothing else (no literal or blank
node in a pattern, no OPTIONAL, UNION, GRAPH, BIND, VALUES, property path, subquery, modifier;
no EXISTS, NOT, RAND, NOW, UUID, STRUUID or BNODE in a FILTER). :func:`parse_bgp` only finds
the pattern's shape; each constant is resolved by the store's own query parser
(:meth:`Bgp.resolved`, see :class:`ceql.rdf.GpmEvaluator`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ceql.rdf.sparql import Token, tokenize

__all__ = ["RDF_TYPE", "UNSAFE_WORDS", "Bgp", "Slot", "parse_bgp"]

RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"


@dataclass(frozen=True, slots=True)
class Slot:
    """One position of a triple pattern: a variable (``var``, its name without ``?``) or a
    constant (``text``: its N-Triples text as the query reads it)."""

    var: str | None
    text: str


@dataclass(frozen=True, slots=True)
class Bgp:
    """A GPM that is a basic graph pattern and FILTERs: its triple patterns, ``DISTINCT`` or
    not, the query's prologue (what precedes ``SELECT``), and the FILTERs' constraints as
    written (``(?p > 3)``, ``regex(?s, "a")``), each with the variables it reads, and
    all of those variables."""

    patterns: tuple[tuple[Slot, Slot, Slot], ...]
    distinct: bool
    prologue: str
    filters: tuple[tuple[str, tuple[str, ...]], ...] = ()
    filter_vars: tuple[str, ...] = ()

    @property
    def predicates(self) -> frozenset[str] | None:
        """The constant predicates, or ``None`` when a pattern's predicate is a variable (then
        every triple can match)."""
        out = set()
        for _, p, _ in self.patterns:
            if p.var is not None:
                return None
            out.add(p.text)
        return frozenset(out)

    def resolved(self, resolve: Callable[[str], str]) -> Bgp:
        """The same pattern with each constant's source text replaced by ``resolve(text)``."""
        def slot(s: Slot) -> Slot:
            return s if s.var is not None else Slot(None, resolve(s.text))
        return Bgp(tuple((slot(s), slot(p), slot(o)) for s, p, o in self.patterns),
                   self.distinct, self.prologue, self.filters, self.filter_vars)


# in a FILTER, what the batch's one query would not evaluate as each event's query does
UNSAFE_WORDS = frozenset({"EXISTS", "NOT", "RAND", "NOW", "UUID", "STRUUID", "BNODE",
                          "SERVICE", "SELECT"})


def _upper(t: Token) -> str:
    return t.text.upper() if t.kind == "word" else ""


def _split_dots(tokens: list[Token]) -> list[Token]:
    # the tokenizer's prefixed names take a trailing '.', which ends a triple instead
    out = []
    for t in tokens:
        if t.kind == "pname" and t.text.endswith(".") and len(t.text) > 1:
            stem = t.text.rstrip(".")
            out.append(Token("pname", stem, t.start, t.start + len(stem)))
            out.extend(Token("other", ".", t.start + k, t.start + k + 1)
                       for k in range(len(stem), len(t.text)))
        else:
            out.append(t)
    return out


def parse_bgp(query: str) -> Bgp | None:
    """The basic graph pattern ``query`` is, or ``None`` when it is anything more (see the
    module's docstring). Constants keep their source text (``<…>``, ``pfx:local``, or
    :data:`RDF_TYPE` for ``a``): :meth:`Bgp.resolved` gives them their IRIs."""
    tokens = _split_dots(tokenize(query))
    n = len(tokens)
    i = 0
    while i < n and _upper(tokens[i]) in ("PREFIX", "BASE"):
        if _upper(tokens[i]) == "PREFIX":
            if i + 2 >= n or tokens[i + 1].kind != "pname" or tokens[i + 2].kind != "iri":
                return None
            i += 3
        else:
            if i + 1 >= n or tokens[i + 1].kind != "iri":
                return None
            i += 2
    if i == n or _upper(tokens[i]) != "SELECT":
        return None
    prologue = query[:tokens[i].start]
    i += 1
    distinct = i < n and _upper(tokens[i]) == "DISTINCT"
    i += distinct
    if i < n and tokens[i].text == "*":
        i += 1
    else:
        start = i
        while i < n and tokens[i].kind == "var":
            i += 1
        if i == start:
            return None
    if i < n and _upper(tokens[i]) == "WHERE":
        i += 1
    if i == n or tokens[i].text != "{":
        return None
    i += 1
    patterns: list[tuple[Slot, Slot, Slot]] = []

    def term(k: int, verb: bool) -> Slot | None:
        if k >= n:
            return None
        t = tokens[k]
        if t.kind == "var":
            return Slot(t.text[1:], t.text)
        if t.kind in ("iri", "pname"):
            return Slot(None, t.text)
        if verb and t.kind == "word" and t.text == "a":
            return Slot(None, RDF_TYPE)
        return None

    filters: list[tuple[str, tuple[str, ...]]] = []
    filter_vars: dict[str, None] = {}

    def constraint(k: int) -> int | None:
        """Where the FILTER at ``k`` ends, its constraint noted (a bracketed one cut at its
        top-level ``&&``: ``FILTER(a && b)`` passes what ``FILTER(a) FILTER(b)`` does, an
        error failing both); ``None`` if this path would not evaluate it exactly (EXISTS,
        random or time-dependent functions, BNODE)."""
        k += 1
        begin = k
        if k < n and tokens[k].kind in ("word", "pname") and _upper(tokens[k]) not in UNSAFE_WORDS:
            k += 1  # a function call
        if k >= n or tokens[k].text != "(" or k + 1 >= n:
            return None
        bracket = k == begin
        at = tokens[k + 1].start if bracket else tokens[begin].start
        pieces: list[tuple[str, tuple[str, ...]]] = []
        names: dict[str, None] = {}
        depth = 0
        while k < n:
            t = tokens[k]
            depth += (t.text == "(") - (t.text == ")")
            if t.text in ("{", "}") or _upper(t) in UNSAFE_WORDS:
                return None
            if t.kind == "var":
                if t.text[1:].startswith("__ceql"):
                    return None
                names[t.text[1:]] = None
                filter_vars[t.text[1:]] = None
            if (bracket and depth == 1 and t.text == "&" and k + 2 < n
                    and tokens[k + 1].text == "&" and tokens[k + 1].start == t.end):
                pieces.append((f"({query[at:t.start].strip()})", tuple(names)))
                names = {}
                k += 2
                at = tokens[k].start
                continue
            k += 1
            if depth == 0:
                end = t.start if bracket else t.end
                text = query[at:end].strip()
                pieces.append((f"({text})" if bracket else text, tuple(names)))
                filters.extend(pieces)
                return k
        return None

    while i < n and tokens[i].text != "}":
        if _upper(tokens[i]) == "FILTER":
            end = constraint(i)
            if end is None:
                return None
            i = end
            if i < n and tokens[i].text == ".":
                i += 1
            continue
        subject = term(i, False)
        if subject is None:
            return None
        i += 1
        while True:  # predicate-object lists
            verb = term(i, True)
            if verb is None:
                return None
            i += 1
            while True:  # object lists
                obj = term(i, False)
                if obj is None:
                    return None
                patterns.append((subject, verb, obj))
                i += 1
                if i < n and tokens[i].text == ",":
                    i += 1
                    continue
                break
            if i < n and tokens[i].text == ";":
                while i < n and tokens[i].text == ";":
                    i += 1
                if i < n and tokens[i].text not in (".", "}") and _upper(tokens[i]) != "FILTER":
                    continue
            break
        if i < n and tokens[i].text == ".":
            i += 1
        elif i == n or (tokens[i].text != "}" and _upper(tokens[i]) != "FILTER"):
            return None
    if i != n - 1:  # the group must close the query: nothing after it
        return None
    return Bgp(tuple(patterns), bool(distinct), prologue, tuple(filters), tuple(filter_vars))
