"""RDF graph events for SPAseq: reading event graphs, the static dataset, and evaluating a
query's graph patterns (GPMs) on each event with pyoxigraph (pure Python, no Spark).

* :mod:`.reader` — an event's graph from N-Triples / Turtle / JSON-LD text, pyoxigraph
  terms, or ``(s, p, o)`` triples (:func:`read_event`, :func:`group_triples`);
* :mod:`.terms` — how RDF terms become the plain values conditions compare, and how Python
  values become terms;
* :mod:`.dataset` — :class:`StaticDataset`, the named graphs ``GRAPH <iri> { … }`` reads;
* :mod:`.gpm` — :class:`GpmEvaluator`, every GPM on one event or on a batch of events;
* :mod:`.bgp` — the basic graph pattern (triple patterns and FILTERs) a GPM is, when it is
  only that: what the storeless path matches;
* :mod:`.triples` — a batch of events read into columns of the store's term texts;
* :mod:`.fast` — basic graph patterns (and their FILTERs) matched on a batch without a store,
  with the store's term forms and FILTER outcomes;
* :mod:`.sparql` — the rewrite that runs a GPM once per batch;
* :mod:`.errors` — :class:`RdfInputError` (a :class:`ceql.CeqlInputError`) and
  :class:`GpmError` (a :class:`ceql.CeqlValidationError`).

>>> gpms = GpmEvaluator({"A": "SELECT ?c ?p WHERE { ?c <http://ex/price> ?p }"})
>>> gpms.evaluate([("http://ex/goog", "http://ex/price", 101.5)])
{'A': [{'c': 'http://ex/goog', 'p': 101.5}]}
"""

try:
    import pyoxigraph as _pyoxigraph  # noqa: F401
except ImportError as e:  # pragma: no cover - the test extra installs it
    raise ImportError("ceql.rdf needs pyoxigraph: pip install 'ceql[spaseq]'") from e

from ceql.rdf.dataset import StaticDataset
from ceql.rdf.errors import GpmError, RdfInputError
from ceql.rdf.gpm import GpmEvaluator, GpmResults, Solution
from ceql.rdf.reader import EventGraph, EventSource, group_triples, read_event
from ceql.rdf.terms import (
    Value,
    object_term,
    predicate_term,
    subject_term,
    term_text,
    term_value,
    to_value,
)

__all__ = [
    "EventGraph",
    "EventSource",
    "GpmError",
    "GpmEvaluator",
    "GpmResults",
    "RdfInputError",
    "Solution",
    "StaticDataset",
    "Value",
    "group_triples",
    "object_term",
    "predicate_term",
    "read_event",
    "subject_term",
    "term_text",
    "term_value",
    "to_value",
]
