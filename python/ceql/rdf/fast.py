"""Basic graph patterns evaluated in Python, without a store: SPAseq's usual GPM on a batch.

A GPM that is a basic graph pattern with FILTERs — ``SELECT [DISTINCT] vars|* [WHERE] {
triple patterns and FILTERs }``, its pattern terms variables, IRIs, prefixed names and ``a``,
nothing else (no literal or blank node in a pattern, no OPTIONAL, UNION, GRAPH, BIND, VALUES,
property path, subquery, modifier; no EXISTS, NOT, RAND, NOW, UUID, STRUUID or BNODE in a
FILTER) — is matched here on a whole batch of events, their triples held as the N-Triples
texts of their terms. :func:`parse_bgp` says which GPMs qualify; :class:`TripleReader` reads
a batch into columns of such texts (:meth:`TripleReader.read_batch`: N-Triples lines with
one split and set operations, lists of ``(s, p, o)`` value by distinct value, anything else
event by event); :func:`match_batch` matches a pattern on the batch column by column, one
hash join per triple pattern keyed by the event. :class:`ceql.rdf.GpmEvaluator` takes this
path when every GPM of the evaluator qualifies (its FILTERs it decides with the store's
evaluator: see there), and its store otherwise (the tests compare both on random graphs,
patterns, FILTERs and literals).

What keeps the answers those of the store:

* **terms exactly as written.** Each term's text is read once through the library's parser
  (format and base IRI) and remembered: escapes resolved, IRIs made absolute, language tags
  in lower case, literals as written (``"05"^^xsd:int`` stays itself: the store path keeps
  it too, :mod:`ceql.rdf.exact`), so equal texts are equal RDF terms. Only texts the parser
  surely gives back unchanged skip it (plain strings of printable characters without
  escapes, canonical ``xsd:integer`` and ``xsd:decimal`` values, literals of datatypes
  outside the W3C's namespaces whose ending it took before).
* **the same parser, the same errors.** Event text is split into lines of exactly
  ``subject predicate object .`` with single spaces, each term checked to be one N-Triples
  term; any other text (Turtle's abbreviations, comments, other spacing) is read by the
  library (:func:`ceql.rdf.read_event`). A triple whose predicate no GPM uses is checked as
  well, then dropped. Whatever the scratch parse refuses sends the whole batch to the store
  path, which reports the error as before.
* **graphs are sets.** When a GPM has no ``DISTINCT``, an event's triples are made distinct
  before matching, and a BGP's solutions are then distinct over its variables; with
  ``DISTINCT``, a duplicate triple would only repeat solutions, which it removes (as it does
  duplicates of the projection).
* **constants as the query reads them.** :func:`parse_bgp` only finds the pattern's shape;
  each constant is resolved by the store's own query parser (``BIND(<constant> AS ?x)`` under
  the GPM's prologue, with the evaluator's prefixes and base IRI).
* **blank nodes scoped to their event.** Labels in text are renamed per event (fresh labels
  of this reader), as the library's parser does.
"""

from __future__ import annotations

import itertools
import operator
import re
import secrets
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, chain, compress, filterfalse, repeat
from typing import Any, cast

import pyoxigraph as ox

from ceql.rdf.reader import (
    EventGraph,
    ntriples_node,
    ntriples_object,
    ntriples_terms,
    read_event,
)
from ceql.rdf.sparql import Token, tokenize

__all__ = [
    "Bgp",
    "Row",
    "Slot",
    "TextTriple",
    "TripleColumns",
    "TripleReader",
    "distinct_triples",
    "group_by_predicate",
    "match_batch",
    "parse_bgp",
]

TextTriple = tuple[str, str, str]
"""A triple as the N-Triples texts of its terms, exactly as written (the parser's form)."""

TripleColumns = tuple[Sequence[int], Sequence[str], Sequence[str], Sequence[str]]
"""A batch's triples as columns: each triple's event index, then the texts of its terms."""

Row = tuple[Any, ...]
"""A solution of a batch: the event's index, then the variables' term texts."""

RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
_XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
_XSD_DECIMAL = "http://www.w3.org/2001/XMLSchema#decimal"
_INTEGER_TAIL = f"^^<{_XSD_INTEGER}>"
# xsd:decimal lexical forms the store keeps (no sign but '-', no leading or trailing zero,
# a fraction only when not zero; within the 18 + 18 digits of its decimals)
_CANONICAL_DECIMAL = re.compile(
    r"(?:0|-?[1-9][0-9]{0,16})(?:\.[0-9]{0,16}[1-9])?\Z|-0\.[0-9]{0,16}[1-9]\Z")
_NT_IRI = re.compile(r'<[^<>"{}|^`\\\x00-\x20]*>\Z')
_NT_BLANK = re.compile(r"_:[A-Za-z0-9_](?:[\w.-]*[\w-])?\Z", re.ASCII)
_NT_LITERAL = re.compile(r'"(?:[^"\\\n\r]|\\.)*"'
                         r'(?:@[a-zA-Z]+(?:-[a-zA-Z0-9]+)*|\^\^<[^<>"{}|^`\\\x00-\x20]*>)?\Z')
_KEY = "urn:ceql:t"
_SEPARATOR = "\x01"  # a field no term is
_BETWEEN = f"{_SEPARATOR} {_SEPARATOR} {_SEPARATOR} .\n"  # a line after each event's text
_THREE_FIELDS = operator.methodcaller("split", " ", 2)
_SPO = operator.itemgetter("s", "p", "o")
_ANY_LITERAL = re.compile("")  # for texts already known to be one term each
# xsd:integer literals the parser gives back as they are (canonical, up to 18 digits)
_CANONICAL_INTEGER = re.compile(
    r'"(?:0|-?[1-9][0-9]{0,17})"\^\^<http://www\.w3\.org/2001/XMLSchema#integer>\Z')
_CACHE_LIMIT = 500_000  # remembered term texts per format, before the memory is cleared


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
_UNSAFE = frozenset({"EXISTS", "NOT", "RAND", "NOW", "UUID", "STRUUID", "BNODE", "SERVICE",
                     "SELECT"})


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
        if k < n and tokens[k].kind in ("word", "pname") and _upper(tokens[k]) not in _UNSAFE:
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
            if t.text in ("{", "}") or _upper(t) in _UNSAFE:
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


def _unchanged(text: str, tails: set[str]) -> bool:
    """Whether the parser surely gives this literal's text back as it is (checked by the
    tests against it): ``tails`` are the endings (``""``, ``^^<datatype>``) the parser is
    known to take."""
    end = text.rfind('"')
    if end <= 0:
        return False
    lex = text[1:end]
    if "\\" in lex or '"' in lex or not lex.isprintable():
        return False
    tail = text[end + 1:]
    if not tail:
        return True
    if tail not in tails or not tail.startswith("^^<"):
        return False
    datatype = tail[3:-1]
    if datatype == _XSD_INTEGER:
        digits = lex[1:] if lex.startswith("-") else lex
        return (0 < len(digits) <= 18 and digits.isascii() and digits.isdigit()
                and (digits[0] != "0" or lex == "0"))
    if datatype == _XSD_DECIMAL:
        return _CANONICAL_DECIMAL.match(lex) is not None
    return not datatype.startswith("http://www.w3.org/")


def _plain_literals(texts: Sequence[str], tails: set[str]) -> bool:
    r"""Whether every text is a literal without escapes whose ending (``""``,
    ``^^<datatype>``, ``@lang``) is one of ``tails``: ``"lexical"tail`` with no ``"``,
    ``\``, newline, carriage return or NUL in ``lexical``. A few passes over the texts
    joined, instead of a regular expression each: ``False`` may be wrong (then check them
    one by one), ``True`` is not."""
    if not texts:
        return True
    if len(tails) > 8:
        return False
    # '"lex"tail\n"lex"tail\n…\n"', each '"tail\n"' replaced by '\n\0' (after which no
    # other tail's replacement can take place there), is '"lex\n\0lex\n\0…\n\0' when each
    # text is such a literal. Conversely, one replacement per newline means that each text
    # ends with '"tail' and starts with '"' (a text '"tail' has one quote for both, and
    # the first text's is the one quote left), and one quote left that no text has any
    # other.
    joined = "\n".join(texts) + '\n"'
    if (joined.count("\n") != len(texts) or "\\" in joined or "\r" in joined
            or "\0" in joined):
        return False
    replaced = 0
    for tail in sorted(tails, key=len, reverse=True):  # long ones first: shorter passes after
        before = len(joined)
        joined = joined.replace(f'"{tail}\n"', "\n\0")
        replaced += (before - len(joined)) // (len(tail) + 1)
        if replaced == len(texts):  # a replacement at each newline: no other can match
            break
    return replaced == len(texts) and joined[0] == '"' and joined.count('"') == 1


@dataclass(slots=True)
class _Forms:
    """What a reader learnt of one (format, base IRI): term text → its exact form (the parser's),
    the literal endings the parser takes, and for each set of predicates kept (``None``:
    all), each predicate text met → its form when kept, else ``False``
    (:data:`_SEPARATOR` → ``None``)."""

    known: dict[str, str]
    tails: set[str]
    predicates: dict[frozenset[str] | None, dict[str, str | bool | None]] = field(
        default_factory=dict)

    def forget(self) -> None:
        """Clear what was learnt of terms (the memory is full)."""
        self.known.clear()
        self.predicates.clear()


class TripleReader:
    """Reads events into :data:`TextTriple` lists (see the module's docstring). Remembers
    the exact form of every term text it met, per format; not thread-safe."""

    def __init__(self, base_iri: str | None = None) -> None:
        self._base_iri = base_iri
        self._known: dict[tuple[ox.RdfFormat, str | None], _Forms] = {}
        self._labels = itertools.count()
        self._prefix = "f" + secrets.token_hex(6) + "x"  # fresh blank nodes of this reader
        self._misses = 0  # texts met that are still to learn

    def _blank(self, fresh: dict[str, str], label: str) -> str | None:
        got = fresh.get(label)
        if got is None:
            if _NT_BLANK.match(label) is None:
                return None
            got = fresh[label] = f"_:{self._prefix}{next(self._labels)}"
        return got

    def _node(self, text: str, fresh: dict[str, str], unknown: dict[str, None]) -> str | None:
        """A subject not known yet: a blank node's fresh label, or an IRI to learn."""
        if text.startswith("_:"):
            return self._blank(fresh, text)
        if _NT_IRI.match(text):
            unknown[text] = None
            self._misses += 1
            return text
        return None

    def _object(self, text: str, fresh: dict[str, str], unknown: dict[str, None],
                tails: set[str]) -> str | None:
        """An object not known yet: a blank node's fresh label, a literal the store keeps as
        it is, or a term to learn."""
        if text.startswith('"'):
            if _NT_LITERAL.match(text) is None:
                return None
            if not _unchanged(text, tails):
                unknown[text] = None
                self._misses += 1
            return text
        return self._node(text, fresh, unknown)

    def _scan(self, text: str, forms: _Forms, unknown: dict[str, None],
              keep: frozenset[str] | None) -> list[TextTriple] | None:
        """Lines of exactly ``s p o .``: terms known are given their exact form, the others
        are listed in ``unknown`` (and kept as written until :meth:`_learn`). A triple whose
        predicate is known and not in ``keep`` is only checked, not kept."""
        out = []
        fresh: dict[str, str] = {}
        known = forms.known
        get = known.get
        tails = forms.tails
        for line in text.split("\n"):
            if not line:
                continue
            if line[-2:] != " .":
                return None
            try:
                s, p, o = line[:-2].split(" ", 2)
            except ValueError:
                return None
            b = get(p)
            if b is None:
                if not _NT_IRI.match(p):
                    return None
                b = p
                unknown[p] = None
                self._misses += 1
            elif keep is not None and b not in keep:
                if s not in known and self._node(s, fresh, unknown) is None:
                    return None
                if o not in known:
                    # a literal of an ending known good needs no more than this
                    end = o.rfind('"')
                    if end > 0 and o[0] == '"' and o[end + 1:] in tails:
                        lex = o[1:end]
                        if '"' not in lex and "\\" not in lex and "\r" not in lex:
                            continue
                    if self._object(o, fresh, unknown, tails) is None:
                        return None
                continue
            a = get(s)
            if a is None:
                a = self._node(s, fresh, unknown)
                if a is None:
                    return None
            c = get(o)
            if c is None:
                c = self._object(o, fresh, unknown, tails)
                if c is None:
                    return None
            out.append((a, b, c))
        return out

    def _terms(self, terms: list[TextTriple], forms: _Forms, unknown: dict[str, None]
               ) -> list[TextTriple]:
        """Triples already cut into term texts, each checked to be one term
        (:func:`ntriples_terms`)."""
        out = []
        fresh: dict[str, str] = {}
        get = forms.known.get
        for triple in terms:
            texts = []
            for text in triple:
                got = get(text)
                if got is None:
                    got = text
                    if text.startswith("_:"):
                        got = self._blank(fresh, text) or text
                    elif not (text.startswith('"') and _unchanged(text, forms.tails)):
                        unknown[text] = None
                        self._misses += 1
                texts.append(got)
            out.append((texts[0], texts[1], texts[2]))
        return out

    @staticmethod
    def _graph(graph: EventGraph, forms: _Forms, unknown: dict[str, None]
               ) -> list[TextTriple] | None:
        """An event read by the library: its terms' texts (RDF-star: ``None``)."""
        out = []
        get = forms.known.get
        for q in graph.quads:
            texts = []
            for term in (q.subject, q.predicate, q.object):
                if isinstance(term, ox.Triple):
                    return None
                text = str(term)
                if not isinstance(term, ox.BlankNode):
                    got = get(text)
                    if got is None:
                        unknown[text] = None
                    else:
                        text = got
                texts.append(text)
            out.append((texts[0], texts[1], texts[2]))
        return out

    @staticmethod
    def _learn(key: tuple[ox.RdfFormat, str | None], texts: list[str], forms: _Forms) -> bool:
        """Read ``texts`` (one term each) as the format and base IRI of ``key`` do, and
        remember each term's exact text (the parser's: escapes resolved, IRIs made absolute,
        language tags in lower case; literals as written, not as the store keeps them);
        ``False`` if the parser refuses one."""
        lines = "".join(f"<{_KEY}{i}> <{_KEY}> {t} .\n" for i, t in enumerate(texts))
        try:
            quads = list(ox.parse(lines, key[0], base_iri=key[1]))
        except (SyntaxError, ValueError, UnicodeError):
            return False
        if len(quads) != len(texts):
            return False
        for i, (text, q) in enumerate(zip(texts, quads, strict=True)):
            if not isinstance(q.subject, ox.NamedNode) or q.subject.value != f"{_KEY}{i}":
                return False
            forms.known[text] = str(q.object)
            if text.startswith('"'):
                forms.tails.add(text[text.rfind('"') + 1:])
        return True

    def _forms(self, key: tuple[ox.RdfFormat, str | None]) -> _Forms:
        forms = self._known.get(key)
        if forms is None:
            # the parser takes any xsd:integer ending (it does not check lexical forms)
            forms = self._known[key] = _Forms({}, {"", _INTEGER_TAIL})
        return forms

    def read_batch(self, events: Sequence[object], format: ox.RdfFormat | None,
                   names: Sequence[str], keep: frozenset[str] | None = None
                   ) -> TripleColumns | None:
        """The triples of a batch's events in their exact form, as columns (each triple's
        event index, subject, predicate, object; in the events' order, duplicates kept), or
        ``None`` when an event needs the store path; see :meth:`read`. Events of N-Triples
        lines are read all at once."""
        kinds = set(map(type, events))
        if format in (None, ox.RdfFormat.TURTLE, ox.RdfFormat.N_TRIPLES) and kinds == {str}:
            # JSON-LD never gets through: its first field is not an IRI
            got = self._bulk(cast(Sequence[str], events),
                             (format or ox.RdfFormat.TURTLE, self._base_iri), keep)
            if got is not None:
                return got
        elif format is None and kinds == {list}:
            got = self._bulk_lists(events, keep)
            if got is not None:
                return got
        each = self.read(events, format, names, keep)
        if each is None:
            return None
        triples = list(chain.from_iterable(each))
        if not triples:
            return [], [], [], []
        subjects, predicates, objects = map(list, zip(*triples, strict=True))
        return (list(chain.from_iterable(map(repeat, range(len(each)), map(len, each)))),
                subjects, predicates, objects)

    def _bulk(self, texts: Sequence[str], key: tuple[ox.RdfFormat, str | None],
              keep: frozenset[str] | None, ended: bool = False) -> TripleColumns | None:
        """:meth:`_scan`'s work on a whole batch with set and map operations, when every
        line of every event is ``s p o .`` with terms that are IRIs or literals (blank nodes
        are renamed per event: :meth:`_scan`). ``ended``: each text ends with a newline."""
        if not texts:
            return [], [], [], []
        # each text followed by a line of three SOH fields, which tells where it ends (a
        # field of the text that is one SOH makes a count below wrong, or is no term)
        whole = _BETWEEN.join(texts) + _BETWEEN
        if "\0" in whole:
            return None
        # one split for the batch: s p o \0 s p o \0 …, each \0 where a line ends; every
        # line ends with " ." when no newline is left, and no term holds a space when every
        # fourth field is a \0 (a \0 elsewhere would be a term, which none is)
        flat = whole.replace(" .\n", " \0 ")
        if "\n" in flat:
            return None
        fields = flat.split(" ")
        if fields.pop():  # after the last \0
            return None
        lines = len(fields) // 4
        subjects: Sequence[str]
        predicates: Sequence[str]
        objects: Sequence[str]
        if len(fields) == 4 * lines and fields[3::4].count("\0") == lines:
            subjects, predicates, objects = fields[0::4], fields[1::4], fields[2::4]
        else:  # a literal with a space
            split = flat.split(" \0 ")
            split.pop()
            parts = list(map(_THREE_FIELDS, split))
            if min(map(len, parts)) != 3:
                return None
            subjects, predicates, objects = zip(*parts, strict=True)
        if predicates.count(_SEPARATOR) != len(texts):  # a text's last line has no newline
            if ended:
                return None
            return self._bulk([t if not t or t.endswith("\n") else t + "\n" for t in texts],
                              key, keep, True)
        if subjects.count(_SEPARATOR) != len(texts):
            return None
        return self._columns(subjects, predicates, objects, None, key, keep)

    def _bulk_lists(self, events: Sequence[object], keep: frozenset[str] | None
                    ) -> TripleColumns | None:
        """Events that are lists of ``(s, p, o)`` (tuples, or mappings with keys s, p, o), read
        at once: each distinct value made an N-Triples text once (as
        :func:`ntriples_terms` does), then :meth:`_columns`. ``None`` when a value is not one
        the text can carry, or a blank node (renamed per event: :meth:`read`)."""
        try:
            lists = cast(Sequence[Sequence[Any]], events)
            counts = list(map(len, lists))
            rows = list(chain.from_iterable(lists))
            if not rows:
                return [], [], [], []
            kinds = set(map(type, rows))
            if set(map(len, rows)) != {3}:
                return None
            if kinds == {dict}:
                rows = list(map(_SPO, rows))
            elif not kinds <= {tuple, list}:
                return None
            subjects, predicates, objects = zip(*rows, strict=True)
            key = (ox.RdfFormat.N_TRIPLES, None)
            known = self._forms(key).known
            nodes = {v: v if v in known else ntriples_node(v, True) for v in set(subjects)}
            nodes.update({v: v if v in known else ntriples_node(v, False)
                          for v in set(predicates)})
            # a term's text met before is one term (a str that is not a term's text
            # is a string literal, never a key of known); 1, 1.0 and True are told apart
            typed: Sequence[Any] = objects
            if set(map(type, objects)) != {str}:
                typed = list(zip(map(type, objects), objects, strict=True))
                texts = {k: ntriples_object(k[1]) for k in set(typed)}
            else:
                texts = {v: v if v in known else ntriples_object(v) for v in set(objects)}
        except (TypeError, KeyError):  # unhashable or missing values: the per-event path
            return None
        if None in nodes.values() or None in texts.values():
            return None
        get_node = cast(Callable[[object], str], nodes.__getitem__)
        at: list[int] = list(chain.from_iterable(map(repeat, range(len(counts)), counts)))
        return self._columns(list(map(get_node, subjects)), list(map(get_node, predicates)),
                             list(map(cast(Callable[[object], str], texts.__getitem__), typed)),
                             at, key, keep, checked=True)

    def _columns(self, subjects: Sequence[str], predicates: Sequence[str],
                 objects: Sequence[str], events: Sequence[int] | None,
                 key: tuple[ox.RdfFormat, str | None], keep: frozenset[str] | None,
                 checked: bool = False) -> TripleColumns | None:
        """A batch's term texts, column by column (``events``: each triple's event index, or
        ``None`` when a line of :data:`_SEPARATOR` ends each event, left out): each distinct
        text checked (unless ``checked``: each is known to be one term's text) and put in
        their exact form, the triples ``keep`` wants."""
        literal = _ANY_LITERAL if checked else _NT_LITERAL
        forms = self._forms(key)
        known = forms.known
        if len(known) > _CACHE_LIMIT:  # here, not later: what it held is read below
            forms.forget()
        # predicate text → its exact form when kept, False when only checked
        kinds = forms.predicates.setdefault(keep, {_SEPARATOR: None})
        try:
            codes = list(map(kinds.__getitem__, predicates))
        except KeyError:  # a predicate not met before
            distinct = set(predicates)
            distinct.discard(_SEPARATOR)
            unknown = list(distinct.difference(known))
            if not all(map(_NT_IRI.match, unknown)):
                return None
            if unknown and not self._learn(key, unknown, forms):
                return None
            for text in distinct:
                form = known[text]
                kinds[text] = form if keep is None or form in keep else False
            codes = list(map(kinds.__getitem__, predicates))
        # each triple's event: the separators before it (its own is left out with it)
        at: Iterable[int] = (accumulate(map(operator.is_, codes, repeat(None)), initial=0)
                             if events is None else events)
        new: dict[str, None] = {}
        subject_texts = set(subjects).difference(known)
        subject_texts.discard(_SEPARATOR)
        for text in subject_texts:
            if _NT_IRI.match(text) is None:  # blank nodes included
                return None
            new[text] = None
        others: list[str] = []  # objects of triples not kept: only checked
        if not all(codes):
            others = list(compress(objects, map(operator.is_, codes, repeat(False))))
            at = compress(at, codes)
            subjects = list(compress(subjects, codes))
            objects = list(compress(objects, codes))
            codes = list(compress(codes, codes))
        forms_of = list(map(known.get, objects))
        missing = set(compress(objects, map(operator.is_, forms_of, repeat(None))))
        for text in missing:
            if _CANONICAL_INTEGER.match(text) is not None:
                known[text] = text  # values repeat (volumes, prices): decided once
            elif text.startswith('"'):
                if literal.match(text) is None:
                    return None
                if _unchanged(text, forms.tails):
                    known[text] = text
                else:
                    new[text] = None
            elif _NT_IRI.match(text) is None:
                return None
            else:
                new[text] = None
        for text in filterfalse(_CANONICAL_INTEGER.match, () if _plain_literals(
                others, forms.tails) else set(others).difference(known)):
            if text.startswith('"'):
                if literal.match(text) is None:
                    return None
                if "\\" in text or text[text.rfind('"') + 1:] not in forms.tails:
                    new[text] = None  # the parser decides (escapes, a new ending)
            elif _NT_IRI.match(text) is None:
                return None
            else:
                new[text] = None
        if new and not self._learn(key, list(new), forms):
            return None
        if missing:
            forms_of = list(map(known.__getitem__, objects))
        # every subject is known by now, and so the kept predicates' forms
        return (list(at), list(map(known.__getitem__, subjects)), cast(list[str], codes),
                cast(list[str], forms_of))

    def read(self, events: Sequence[object], format: ox.RdfFormat | None,
             names: Sequence[str], keep: frozenset[str] | None = None
             ) -> list[list[TextTriple]] | None:
        """Each event's triples in their exact form, or ``None`` when one of them
        needs the store path (text this reader does not take as it is, and which the library
        refuses or reads into RDF-star terms). ``format``: the events' text format, ``None``
        to sniff. ``keep``: the predicates (their exact form) of the triples wanted, all
        when ``None``; the others are checked all the same."""
        Key = tuple[ox.RdfFormat, str | None]
        batches: list[tuple[Key, list[TextTriple]]] = []
        unknown: dict[Key, dict[str, None]] = {}
        pending: list[int] = []  # events with texts to learn
        for event, name in zip(events, names, strict=True):
            got: list[TextTriple] | None = None
            key: Key | None = None
            if isinstance(event, bytes):
                try:
                    event = event.decode("utf-8")
                except UnicodeDecodeError:
                    return None
            if isinstance(event, str):
                if format is None and event[:64].lstrip().startswith(("{", "[", "\ufeff")):
                    return None  # JSON-LD (or a byte-order mark): the store path
                fmt = format or ox.RdfFormat.TURTLE
                if fmt in (ox.RdfFormat.TURTLE, ox.RdfFormat.N_TRIPLES):
                    key = (fmt, self._base_iri)
                    before = self._misses
                    got = self._scan(event, self._forms(key), unknown.setdefault(key, {}), keep)
                    if got is not None and self._misses > before:
                        pending.append(len(batches))
            elif isinstance(event, (list, tuple)) and format is None:
                terms = ntriples_terms(event)
                if terms is not None:
                    key = (ox.RdfFormat.N_TRIPLES, None)  # how the store path loads them
                    before = self._misses
                    got = self._terms(terms, self._forms(key), unknown.setdefault(key, {}))
                    if self._misses > before or keep is not None:
                        pending.append(len(batches))
            if got is None:
                try:
                    graph = read_event(event,  # type: ignore[arg-type]
                                       format=None if format is None else format.file_extension,
                                       base_iri=self._base_iri, name=name)
                except Exception:
                    return None  # the store path reports it
                key = (ox.RdfFormat.N_QUADS, None)  # str(term): N-Triples syntax, absolute
                got = self._graph(graph, self._forms(key), unknown.setdefault(key, {}))
                if got is None:
                    return None
                pending.append(len(batches))
            assert key is not None
            batches.append((key, got))
        for key, texts in unknown.items():
            if not texts:
                continue
            forms = self._known[key]
            if len(forms.known) + len(texts) > _CACHE_LIMIT:
                forms.forget()
            if not self._learn(key, list(texts), forms):
                return None
        for i in pending:
            key, triples = batches[i]
            get = self._known[key].known.get
            # blank nodes are not in it: they keep their fresh labels
            triples = [(get(s, s), get(p, p), get(o, o)) for s, p, o in triples]
            if keep is not None:
                triples = [t for t in triples if t[1] in keep]
            batches[i] = (key, triples)
        return [triples for _, triples in batches]


def distinct_triples(table: TripleColumns) -> TripleColumns:
    """``table`` without its duplicate triples (a graph is a set), in the same order."""
    unique = dict.fromkeys(zip(*table, strict=True))
    if len(unique) == len(table[0]):
        return table
    if not unique:
        return [], [], [], []
    events, subjects, predicates, objects = zip(*unique, strict=True)
    return list(events), list(subjects), list(predicates), list(objects)


def group_by_predicate(table: TripleColumns) -> dict[str, TripleColumns]:
    """``table``'s triples grouped by predicate, each group in ``table``'s order."""
    predicates = table[2]
    kinds = set(predicates)
    if len(kinds) <= 1:
        return {p: table for p in kinds}
    out: dict[str, TripleColumns] = {}
    for p in kinds:
        mask = list(map(p.__eq__, predicates))
        events = list(compress(table[0], mask))
        out[p] = (events, list(compress(table[1], mask)), [p] * len(events),
                  list(compress(table[3], mask)))
    return out


def _where(table: TripleColumns, mask: Iterable[object]) -> TripleColumns:
    keep = list(mask)
    return (list(compress(table[0], keep)), list(compress(table[1], keep)),
            list(compress(table[2], keep)), list(compress(table[3], keep)))


_NO_TRIPLES: TripleColumns = ((), (), (), ())


def match_batch(bgp: Bgp, by_predicate: Mapping[str, TripleColumns],
                everything: TripleColumns, events: int
                ) -> tuple[list[str], list[Sequence[Any]]]:
    """Every solution of ``bgp`` (constants resolved) on each of a batch's ``events``, whose
    triples are given by predicate and all together, each in event order (for a GPM
    without ``DISTINCT``, without duplicates: duplicates only repeat solutions). Returns the
    variables and the solutions as columns, in event order: the events' indices, then each
    variable's term texts in that order. One hash join per triple pattern, keyed by the
    event and the variables bound before."""
    names: list[str] = []
    solutions: list[Sequence[Any]] | None = None  # None: every event's one empty solution
    for pattern in bgp.patterns:
        ps, pp, po = pattern
        table = everything if pp.var is not None else by_predicate.get(pp.text, _NO_TRIPLES)
        for k, slot in ((1, ps), (3, po)):
            if slot.var is None:
                table = _where(table, map(slot.text.__eq__, table[k]))
        first: dict[str, int] = {}
        for k, slot in enumerate(pattern, start=1):
            if slot.var is None:
                continue
            if slot.var in first:  # the variable twice in this pattern
                table = _where(table, map(operator.eq, table[first[slot.var]], table[k]))
            else:
                first[slot.var] = k
        shared = [(names.index(v) + 1, k) for v, k in first.items() if v in names]
        new: list[Sequence[Any]] = [table[k] for v, k in first.items() if v not in names]
        names += [v for v in first if v not in names]
        if solutions is None:  # the first pattern: its triples are the solutions
            solutions = [table[0], *new]
        else:
            solutions = _join(solutions, table, shared, new)
        if not solutions[0]:
            break
    if solutions is None:
        solutions = [range(events)]
    return names, solutions


def _join(solutions: list[Sequence[Any]], table: TripleColumns,
          shared: list[tuple[int, int]], new: list[Sequence[Any]]) -> list[Sequence[Any]]:
    """The solutions extended by each of ``table``'s triples of their event that agrees on
    the ``shared`` (solution column, triple column) pairs, with that triple's ``new``
    columns."""
    size = len(table[0])
    keys: Sequence[Hashable] = table[0]
    wanted: Iterable[Hashable] = solutions[0]
    if shared:
        keys = list(zip(keys, *(table[k] for _, k in shared), strict=True))
        wanted = zip(wanted, *(solutions[i] for i, _ in shared), strict=True)
    index = dict(zip(keys, range(size), strict=True))
    if len(index) == size:  # one triple a key: a lookup per solution
        found: list[Any] = list(map(index.get, wanted))  # None: no triple
        mask = list(map(operator.is_not, found, repeat(None)))
        if not all(mask):
            solutions = [list(compress(column, mask)) for column in solutions]
            found = list(compress(found, mask))
    else:
        triples: dict[Hashable, list[int]] = {}
        for key, i in zip(keys, range(size), strict=True):
            got = triples.get(key)
            if got is None:
                triples[key] = [i]
            else:
                got.append(i)
        rows: list[int] = []
        found = []
        for row, key in enumerate(wanted):
            for i in triples.get(key, ()):
                rows.append(row)
                found.append(i)
        solutions = [list(map(column.__getitem__, rows)) for column in solutions]
    return solutions + [list(map(column.__getitem__, found)) for column in new]
