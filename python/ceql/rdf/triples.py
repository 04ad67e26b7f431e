"""Reading a batch of events into columns of the N-Triples texts of their terms, for the
storeless path (:mod:`ceql.rdf.fast`).

:meth:`TripleReader.read_batch` reads N-Triples lines with one split and set operations,
lists of ``(s, p, o)`` value by distinct value, anything else event by event. What keeps the
texts those of the store:

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
* **blank nodes scoped to their event.** Labels in text are renamed per event (fresh labels
  of this reader), as the library's parser does.
"""

from __future__ import annotations

import itertools
import operator
import re
import secrets
from collections.abc import Callable, Iterable, Sequence
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

__all__ = ["TextTriple", "TripleColumns", "TripleReader"]

TextTriple = tuple[str, str, str]
"""A triple as the N-Triples texts of its terms, exactly as written (the parser's form)."""

TripleColumns = tuple[Sequence[int], Sequence[str], Sequence[str], Sequence[str]]
"""A batch's triples as columns: each triple's event index, then the texts of its terms."""

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
