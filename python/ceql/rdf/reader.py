"""Reading one event's RDF graph, once, into the library's triples.

An event graph is given as

* **text** (``str`` or ``bytes``) in N-Triples, Turtle or JSON-LD: ``format`` names it
  (:data:`EVENT_FORMATS`; case, ``-`` and ``_`` ignored, so ``"N-Triples"``, ``"JSON-LD"``,
  ``"ttl"`` work), or it is sniffed: JSON-LD when the text starts with ``{`` or ``[``, else
  Turtle (of which N-Triples is a subset);
* **an already-parsed graph**: a ``pyoxigraph.Dataset`` or an iterable of ``pyoxigraph.Triple``
  / ``pyoxigraph.Quad`` (quads of the default graph only);
* **a list of triples**: ``(s, p, o)`` tuples, or mappings with keys ``s``, ``p``, ``o`` (what
  an ``array<struct<s,p,o>>`` column holds, also as its Arrow value), terms written as
  :mod:`ceql.rdf.terms` says (:func:`group_triples` cuts a triples table
  ``(event, s, p, o)``, or ``(stream, time, s, p, o)``, into such lists). When every term is
  in N-Triples syntax or a plain IRI, string, int or bool, the evaluator has the library
  parse the list as one N-Triples text (:func:`ntriples_text`);
* an :class:`EventGraph` read before.

Every reading gives the event's blank nodes fresh ids (the text's labels are not kept): blank
nodes are scoped to their event, so those of two events are never the same node, while the
GPMs of one event, and both of :class:`~ceql.rdf.GpmEvaluator`'s paths given the same
:class:`EventGraph`, see the same ids.

Bad input raises :class:`~ceql.rdf.errors.RdfInputError` naming the event, and for bad text
the line and column with a caret under the spot.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import pyarrow as pa
import pyoxigraph as ox

from ceql.errors import CeqlTypeError, caret_snippet
from ceql.rdf.errors import RdfInputError
from ceql.rdf.terms import object_term, predicate_term, subject_term

__all__ = [
    "DATASET_FORMATS",
    "EVENT_FORMATS",
    "EventGraph",
    "EventSource",
    "as_python",
    "group_triples",
    "ntriples_node",
    "ntriples_object",
    "ntriples_terms",
    "ntriples_text",
    "parse_error",
    "rdf_format",
    "read_event",
    "sniff_format",
]

EVENT_FORMATS: dict[str, ox.RdfFormat] = {
    "ntriples": ox.RdfFormat.N_TRIPLES,
    "turtle": ox.RdfFormat.TURTLE,
    "jsonld": ox.RdfFormat.JSON_LD,
}
DATASET_FORMATS: dict[str, ox.RdfFormat] = {
    **EVENT_FORMATS,
    "nquads": ox.RdfFormat.N_QUADS,
    "trig": ox.RdfFormat.TRIG,
    "rdfxml": ox.RdfFormat.RDF_XML,
}
_ALIASES = {"nt": "ntriples", "ttl": "turtle", "json": "jsonld", "nq": "nquads", "rdf": "rdfxml",
            "xml": "rdfxml"}

# the spot pyoxigraph's messages start with
_WHERE = re.compile(r"Parser error (?:at|between) line [^:]*: ")


@dataclass(frozen=True, slots=True, eq=False)
class EventGraph:
    """One event's graph, parsed: its triples as quads of the default graph."""

    quads: tuple[ox.Quad, ...]
    name: str = "event"

    def __len__(self) -> int:
        return len(self.quads)


EventSource: TypeAlias = (
    str | bytes | EventGraph | ox.Dataset | Iterable[ox.Triple | ox.Quad]
    | Iterable[Sequence[object] | Mapping[str, object]]
)


def rdf_format(name: str, formats: Mapping[str, ox.RdfFormat] = EVENT_FORMATS) -> ox.RdfFormat:
    """The library's format called ``name`` (see :data:`EVENT_FORMATS`)."""
    if isinstance(name, str):
        key = name.lower().replace("-", "").replace("_", "")
        key = _ALIASES.get(key, key)
        if key in formats:
            return formats[key]
    known = ", ".join(repr(k) for k in formats)
    raise RdfInputError(f"unknown RDF format {name!r}: use one of {known}, or leave the format "
                        "out to sniff it from the text")


def sniff_format(text: str | bytes, dataset: bool = False) -> ox.RdfFormat:
    """JSON-LD when ``text`` starts with ``{`` or ``[``; else Turtle (TriG for a dataset)."""
    head = text[:64].lstrip()
    if isinstance(head, bytes):
        head = head.lstrip(b"\xef\xbb\xbf")[:1]
        is_json = head in (b"{", b"[")
    else:
        is_json = head.lstrip("\ufeff")[:1] in ("{", "[")
    if is_json:
        return ox.RdfFormat.JSON_LD
    return ox.RdfFormat.TRIG if dataset else ox.RdfFormat.TURTLE


def parse_error(e: SyntaxError, text: str | bytes, fmt: ox.RdfFormat, source: str,
                quote: bool = True) -> RdfInputError:
    """A parser's error as an :class:`RdfInputError` with the line, column and a caret;
    ``quote=False`` (a file's text): the line and column alone, since the parser's words and
    the caret quote the text, which a message must not show of a file."""
    message = str(e.msg if e.msg is not None else e)
    detail = _WHERE.sub("", message, count=1)
    line, column = e.lineno or 0, e.offset or 0
    if not quote:
        where = f" at line {line}, column {column}" if line else ""
        return RdfInputError(f"not valid {fmt.name}{where} (its text is not quoted here: "
                             "open the file there)", source=source, line=line, column=column)
    if not line:
        return RdfInputError(f"bad {fmt.name}: {detail}", source=source)
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    return RdfInputError(f"bad {fmt.name} at line {line}, column {column}: {detail}",
                         source=source, line=line, column=column,
                         snippet=caret_snippet(text, line, column))


def _parse_text(text: str | bytes, fmt: ox.RdfFormat, base_iri: str | None, name: str
                ) -> tuple[ox.Quad, ...]:
    try:
        return tuple(ox.parse(text, fmt, base_iri=base_iri, without_named_graphs=True,
                              rename_blank_nodes=True))
    except SyntaxError as e:
        raise parse_error(e, text, fmt, name) from None


def _triple(item: object) -> ox.Quad:
    if isinstance(item, ox.Quad):
        if not isinstance(item.graph_name, ox.DefaultGraph):
            raise ValueError("an event graph holds no named graph: this quad is in "
                             f"{item.graph_name}")
        return item
    if isinstance(item, ox.Triple):
        return ox.Quad(item.subject, item.predicate, item.object)
    if isinstance(item, Mapping):
        try:
            s, p, o = item["s"], item["p"], item["o"]
        except KeyError as e:
            raise ValueError(f"a triple as a mapping needs the keys 's', 'p', 'o'; {e} is "
                             "missing") from None
    elif isinstance(item, Sequence) and not isinstance(item, (str, bytes)) and len(item) == 3:
        s, p, o = item
    else:
        raise ValueError(f"{item!r} is not a triple (s, p, o)")
    return ox.Quad(subject_term(s), predicate_term(p), object_term(o))


_NT_IRI = re.compile(r'<[^<>"{}|^`\\\x00-\x20]*>\Z')
_NT_BLANK = re.compile(r"_:[A-Za-z0-9_](?:[\w.-]*[\w-])?\Z", re.ASCII)
_NT_LITERAL = re.compile(r'"(?:[^"\\\n\r]|\\.)*"'
                         r'(?:@[a-zA-Z]+(?:-[a-zA-Z0-9]+)*|\^\^<[^<>"{}|^`\\\x00-\x20]*>)?\Z')
_PLAIN_IRI = re.compile(r'[^<>"{}|^`\\\x00-\x20]+\Z')
_XSD_INTEGER = "<http://www.w3.org/2001/XMLSchema#integer>"
_XSD_BOOLEAN = "<http://www.w3.org/2001/XMLSchema#boolean>"


def ntriples_node(v: object, subject: bool) -> str | None:
    """A subject (``subject=True``) or predicate as the N-Triples text of one term, when
    :func:`ntriples_terms` can carry it as is (``"<iri>"``, a plain IRI, ``"_:label"`` for
    subjects), else ``None``."""
    return _nt_node(v, subject)


def ntriples_object(v: object) -> str | None:
    """An object as the N-Triples text of one term, when :func:`ntriples_terms` can carry it
    as is (a term's text, a plain IRI, a string, an int, a bool), else ``None``."""
    return _nt_object(v)


def _nt_node(v: object, subject: bool) -> str | None:
    if type(v) is not str:
        return None
    if v.startswith("<"):
        return v if _NT_IRI.match(v) else None
    if v.startswith("_:"):
        return v if subject and _NT_BLANK.match(v) else None
    return f"<{v}>" if _PLAIN_IRI.match(v) else None


def _nt_object(v: object) -> str | None:
    if type(v) is str:
        if v.startswith("<"):
            return v if _NT_IRI.match(v) else None
        if v.startswith("_:"):
            return v if _NT_BLANK.match(v) else None
        if v.startswith('"'):
            return v if _NT_LITERAL.match(v) else None
        escaped = v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return '"' + escaped.replace("\r", "\\r") + '"'
    if type(v) is int:
        return f'"{v}"^^{_XSD_INTEGER}'
    if type(v) is bool:
        return f'"{str(v).lower()}"^^{_XSD_BOOLEAN}'
    return None


def ntriples_terms(source: object) -> list[tuple[str, str, str]] | None:
    """A list of triples as the N-Triples texts of their terms when every term is one the
    text can carry as is (terms in N-Triples syntax, plain IRIs, strings, ints, bools), else
    ``None``. Each field is checked to be exactly one term."""
    if not isinstance(source, (list, tuple)):
        return None
    out = []
    for item in source:
        if isinstance(item, (tuple, list)) and len(item) == 3:
            s, p, o = item
        elif isinstance(item, Mapping) and len(item) == 3:
            s, p, o = item.get("s"), item.get("p"), item.get("o")
        else:
            return None
        a, b, c = _nt_node(s, True), _nt_node(p, False), _nt_object(o)
        if a is None or b is None or c is None:
            return None
        out.append((a, b, c))
    return out


def ntriples_text(source: object) -> str | None:
    """A list of triples as N-Triples text (:func:`ntriples_terms`), else ``None``: the
    library then parses the event in one call instead of building each term in Python. No
    field can add a triple."""
    terms = ntriples_terms(source)
    if terms is None:
        return None
    return "".join(f"{a} {b} {c} .\n" for a, b, c in terms)


def as_python(source: object) -> object:
    """An Arrow value (an ``array<struct<s,p,o>>`` cell, a struct array) as Python values."""
    if isinstance(source, pa.Scalar):
        return source.as_py()
    if isinstance(source, (pa.Array, pa.ChunkedArray)):
        return source.to_pylist()
    return source


def read_event(source: EventSource, *, format: str | None = None, base_iri: str | None = None,
               name: str = "event") -> EventGraph:
    """Read one event's graph (see the module's docstring for what ``source`` may be).

    ``name`` is how errors name the event (e.g. ``"event 3"``).
    """
    if isinstance(source, EventGraph):
        return source
    source = as_python(source)  # type: ignore[assignment]
    if isinstance(source, (str, bytes)):
        fmt = sniff_format(source) if format is None else rdf_format(format)
        return EventGraph(_parse_text(source, fmt, base_iri, name), name)
    if format is not None:
        raise RdfInputError(f"format={format!r} is for RDF text, and this event is a "
                            f"{type(source).__name__}", source=name)
    if isinstance(source, ox.Dataset):
        source = iter(source)
    if not isinstance(source, Iterable):
        raise CeqlTypeError(f"{name}: an event graph is RDF text, a pyoxigraph Dataset or a "
                            f"list of triples, not {type(source).__name__}")
    quads = []
    for i, item in enumerate(source):
        try:
            quads.append(_triple(item))
        except ValueError as e:
            raise RdfInputError(f"triple {i}: {e}", source=name) from None
    return EventGraph(_fresh_blank_nodes(quads), name)


def _fresh_blank_nodes(quads: list[ox.Quad]) -> tuple[ox.Quad, ...]:
    if not any(isinstance(q.subject, ox.BlankNode) or isinstance(q.object, ox.BlankNode)
               for q in quads):
        return tuple(quads)
    fresh: dict[ox.BlankNode, ox.BlankNode] = {}

    def rename(term: Any) -> Any:
        if isinstance(term, ox.BlankNode):
            if term not in fresh:
                fresh[term] = ox.BlankNode()
            return fresh[term]
        return term

    return tuple(ox.Quad(rename(q.subject), q.predicate, rename(q.object)) for q in quads)


def group_triples(rows: pa.Table | pa.RecordBatch | Iterable[Sequence[object]],
                  columns: Sequence[str] = ("event", "s", "p", "o"),
                  ) -> dict[Hashable, list[tuple[object, object, object]]]:
    """Cut a triples table into one list of ``(s, p, o)`` per event, in first-seen order.

    ``rows`` is an Arrow table or rows of Python values. The last three ``columns`` are the
    triple's; those before them are the event's key (a tuple when several:
    ``columns=("stream", "time", "s", "p", "o")`` keys events by ``(stream, time)``). Rows are
    read by position, in the order of ``columns``.
    """
    if len(columns) < 4:
        raise RdfInputError(f"columns={tuple(columns)!r} needs the event's key column(s) and "
                            "then s, p, o")
    width = len(columns) - 3
    if isinstance(rows, (pa.Table, pa.RecordBatch)):
        missing = [c for c in columns if c not in rows.column_names]
        if missing:
            raise RdfInputError(f"the triples table has no column {missing[0]!r}: its columns "
                                f"are {rows.column_names}; name them with columns=")
        rows = zip(*(rows.column(c).to_pylist() for c in columns), strict=True)
    out: dict[Hashable, list[tuple[object, object, object]]] = {}
    for row in rows:
        if len(row) != len(columns):
            raise RdfInputError(f"the triples table's row {tuple(row)!r} does not have the "
                                f"{len(columns)} values of columns={tuple(columns)!r}")
        event = row[0] if width == 1 else tuple(row[:width])
        if not isinstance(event, Hashable):
            raise RdfInputError(f"an event key must be hashable, not {event!r}")
        out.setdefault(event, []).append((row[width], row[width + 1], row[width + 2]))
    return out
