"""The static dataset (background knowledge base) that GPMs read with ``GRAPH <iri> { … }``.

How an event and the dataset combine, in every GPM: the query's **default graph is the
event's graph** (its triple patterns outside ``GRAPH`` match the event, and only it), and the
dataset's graphs are the query's **named graphs**, reached by ``GRAPH <iri> { … }`` — SPAseq's
Graph operator (paper, Definition 15: ``[[P]]_G ⋈ [[P_D]]_{G_D}``). The dataset has no default
graph of its own: triples loaded outside a named graph (N-Triples, Turtle, JSON-LD files, or
the default graph of a TriG / N-Quads file) go into the graph ``graph=`` names, and loading
them without one is an error. Blank nodes of the dataset are renamed on loading, so they never
meet an event's blank nodes (RDF scopes blank nodes per document).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

import pyoxigraph as ox

from ceql.errors import CeqlTypeError
from ceql.rdf.errors import RdfInputError
from ceql.rdf.reader import DATASET_FORMATS, parse_error, rdf_format, sniff_format
from ceql.rdf.terms import object_term, predicate_term, subject_term

__all__ = ["StaticDataset", "as_dataset"]


def _graph_node(graph: str, source: str) -> ox.NamedNode:
    try:
        return ox.NamedNode(graph[1:-1] if graph.startswith("<") else graph)
    except (TypeError, ValueError) as e:
        raise RdfInputError(f"graph={graph!r} is not an IRI ({e})", source=source) from None


class StaticDataset:
    """Named graphs of static RDF, loaded from files, text or triples.

    >>> kb = StaticDataset().load('<http://ex/h1> <http://ex/owner> "john" .',
    ...                           graph="http://ex/kb")
    >>> kb.graphs
    ('http://ex/kb',)
    """

    def __init__(self) -> None:
        self._quads: list[ox.Quad] = []
        self._graphs: dict[str, ox.NamedNode | ox.BlankNode] = {}

    @property
    def graphs(self) -> tuple[str, ...]:
        """The names of the graphs, in loading order."""
        return tuple(self._graphs)

    @property
    def graph_nodes(self) -> tuple[ox.NamedNode | ox.BlankNode, ...]:
        """The names of the graphs as pyoxigraph terms."""
        return tuple(self._graphs.values())

    @property
    def quads(self) -> tuple[ox.Quad, ...]:
        """Every triple, with its graph."""
        return tuple(self._quads)

    def __len__(self) -> int:
        return len(self._quads)

    def __repr__(self) -> str:
        return f"StaticDataset({len(self._quads)} triples in graphs {list(self._graphs)})"

    def load(self, data: str | bytes | None = None, *, path: str | os.PathLike[str] | None = None,
             format: str | None = None, graph: str | None = None,
             base_iri: str | None = None) -> StaticDataset:
        """Add RDF text (``data``) or a file (``path``) and return ``self``.

        ``format``: N-Triples, Turtle, JSON-LD, N-Quads, TriG or RDF/XML (``"ntriples"``,
        ``"turtle"``, ``"jsonld"``, ``"nquads"``, ``"trig"``, ``"rdfxml"``); by default from the
        file's extension, else sniffed (JSON-LD or TriG, which reads Turtle and N-Triples too).
        ``graph``: the IRI the text's default-graph triples are read under.
        """
        if (data is None) == (path is None):
            raise RdfInputError("give StaticDataset.load either data or path=, not "
                                f"{'both' if data is not None else 'neither'}")
        if path is not None:
            source = f"dataset file {os.fspath(path)}"
            ext = os.path.splitext(os.fspath(path))[1].lstrip(".")
            try:
                with open(path, "rb") as f:
                    text: str | bytes = f.read()
            except OSError as e:
                raise RdfInputError(f"cannot read it: {e.strerror}", source=source) from None
            by_ext = ox.RdfFormat.from_extension(ext) if format is None else None
        else:
            source = "dataset text"
            assert data is not None
            text, by_ext = data, None
        if format is not None:
            fmt = rdf_format(format, DATASET_FORMATS)
        else:
            fmt = by_ext or sniff_format(text, dataset=True)
        node = None if graph is None else _graph_node(graph, source)
        try:
            parsed = list(ox.parse(text, fmt, base_iri=base_iri, rename_blank_nodes=True))
        except SyntaxError as e:  # a file's text is never quoted (it may be any file)
            raise parse_error(e, text, fmt, source, quote=path is None) from None
        quads = []
        for q in parsed:
            if isinstance(q.graph_name, ox.DefaultGraph):
                if node is None:
                    raise RdfInputError(
                        "triples outside a named graph need a graph name: load(..., "
                        "graph='http://…'), which GPMs read as GRAPH <http://…> { … }",
                        source=source)
                q = ox.Quad(q.subject, q.predicate, q.object, node)
            quads.append(q)
        self._add(quads)
        return self

    def add(self, triples: Iterable[Sequence[object]], *, graph: str) -> StaticDataset:
        """Add ``(s, p, o)`` triples (terms as :mod:`ceql.rdf.terms` says) to ``graph``."""
        source = f"dataset graph {graph}"
        node = _graph_node(graph, source)
        quads = []
        for i, t in enumerate(triples):
            try:
                s, p, o = t
                quads.append(ox.Quad(subject_term(s), predicate_term(p), object_term(o), node))
            except (TypeError, ValueError) as e:
                raise RdfInputError(f"triple {i}: {e}", source=source) from None
        self._graphs.setdefault(node.value, node)
        self._add(quads)
        return self

    def _add(self, quads: list[ox.Quad]) -> None:
        for q in quads:
            g = q.graph_name
            assert not isinstance(g, ox.DefaultGraph)
            key = g.value if isinstance(g, ox.NamedNode) else "_:" + g.value
            self._graphs.setdefault(key, g)
        self._quads.extend(quads)


_WHAT = ("a ceql.rdf.StaticDataset, a mapping {graph IRI: file path} (each file's triples are "
         "that named graph) or a list of TriG / N-Quads file paths (their named graphs as "
         "written)")


def as_dataset(dataset: object) -> StaticDataset | None:
    """``dataset`` as a :class:`StaticDataset`: one as it is, ``{graph IRI: path}`` or a list
    of paths read from their files (the forms Spark's ``dataset =>`` option takes), ``None``
    as it is; :class:`ceql.CeqlTypeError` for anything else."""
    if dataset is None or isinstance(dataset, StaticDataset):
        return dataset
    paths = (str, os.PathLike)
    if isinstance(dataset, Mapping):
        for iri, path in dataset.items():
            if not isinstance(iri, str) or not isinstance(path, paths):
                raise CeqlTypeError(
                    f"dataset: the item {iri!r}: {path!r} is not graph IRI (str): file path; "
                    f"dataset must be {_WHAT}")
        ds = StaticDataset()
        for iri, path in dataset.items():
            ds.load(path=path, graph=iri)
        return ds
    if isinstance(dataset, (list, tuple)):
        ds = StaticDataset()
        for path in dataset:
            if not isinstance(path, paths):
                raise CeqlTypeError(f"dataset: {path!r} is not a file path; dataset must be "
                                    f"{_WHAT}")
            ds.load(path=path)
        return ds
    hint = (" (a str is not taken: for a file write [path] or {graph IRI: path}; for RDF "
            "text, StaticDataset().load(text, graph=…))") if isinstance(dataset, str) else ""
    raise CeqlTypeError(f"dataset must be {_WHAT}, not {type(dataset).__name__}{hint}")
