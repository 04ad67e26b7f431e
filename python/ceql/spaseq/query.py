"""``compile`` and :class:`Query`: a SPAseq query ready to run over events."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from ..errors import CeqlInputError, CeqlTypeError
from ..frontends.spaseq import SpaseqQuery, parse
from ..rdf import StaticDataset
from ..rdf.dataset import as_dataset
from .evaluator import Evaluator
from .events import StreamNames, TimeKey, time_key
from .match import Match
from .plan import Plan, lower

DatasetSource = (StaticDataset | Mapping[str, "str | os.PathLike[str]"]
                 | Sequence["str | os.PathLike[str]"])
"""What ``dataset=`` takes (see :func:`compile`)."""

__all__ = ["DatasetSource", "Query", "compile"]


class Query:
    """A compiled SPAseq query (docs/SPASEQ.md): :meth:`run` over a list of events, or
    :meth:`evaluator` to feed events in time order, batch by batch (one per partition)."""

    def __init__(self, text: str, ast: SpaseqQuery, dataset: StaticDataset | None) -> None:
        self.text = text
        self.ast = ast
        self.dataset = dataset
        self.plan: Plan = lower(ast)
        self._streams = StreamNames([(s.name, s.iri) for s in ast.streams])

    @property
    def variables(self) -> tuple[str, ...]:
        """The SELECT variables: the keys of every match's ``bindings``."""
        return self.plan.select

    def __repr__(self) -> str:
        return f"ceql.spaseq.compile({self.text!r})"

    def evaluator(self, *, engine: bool = True) -> Evaluator:
        """A fresh evaluation: ``feed(events)`` in time order, then ``close()``.
        ``engine=False`` evaluates the sequence with the run loop of :mod:`.runs` instead of
        ceql's engine (the same matches; for comparison)."""
        return Evaluator(self.plan, self._streams, self.dataset, engine=engine)

    def run(self, events: Iterable[Mapping[str, Any]], *, time: str = "time",
            stream: str = "stream", graph: str = "graph", engine: bool = True
            ) -> Iterator[Match]:
        """Every match over ``events``: mappings with a stream (its IRI or its name in the
        query), a time (seconds or datetimes) and a graph (N-Triples or Turtle text, a parsed
        graph or a list of triples), under the keys ``stream``, ``time`` and ``graph`` or the
        ones given. The events are sorted by time first (stable); ``positions`` are their
        indices in ``events``. Matches come in time order of their last event. ``engine``: as
        for :meth:`evaluator`."""
        if isinstance(events, Mapping | str | bytes) or not isinstance(events, Iterable):
            raise CeqlTypeError("Query.run takes an iterable of events (mappings), not "
                                f"{type(events).__name__}")
        rows: list[Any] = list(events)
        if (time, stream, graph) != ("time", "stream", "graph"):
            rows = [_renamed(r, i, stream, time, graph) for i, r in enumerate(rows)]
        keys: list[tuple[TimeKey | None, int]] = []
        for i, r in enumerate(rows):
            if isinstance(r, Mapping) and "time" in r and self._streams.resolve(r.get("stream")):
                keys.append((time_key(r["time"], i)[0], i))
            else:
                keys.append((None, i))  # checked (or dropped) by the evaluator
        timed = sorted((k, i) for k, i in keys if k is not None)
        order = [i for k, i in keys if k is None] + [i for _, i in timed]
        ev = self.evaluator(engine=engine)
        yield from ev.feed([rows[i] for i in order], positions=order)
        yield from ev.close()


def _renamed(row: object, i: int, stream: str, time: str, graph: str) -> object:
    if not isinstance(row, Mapping):
        return row
    out = dict(row)
    for ours, theirs in (("stream", stream), ("time", time), ("graph", graph)):
        out.pop(ours, None)
        if theirs in row:
            out[ours] = row[theirs]
    if len(out) < 3 and not all(k in out for k in ("stream", "time", "graph")):
        missing = next(k for k, n in (("stream", stream), ("time", time), ("graph", graph))
                       if n not in row)
        raise CeqlInputError(f"event {i} has no {missing!r}")
    return out


def compile(text: str, *, dataset: DatasetSource | None = None) -> Query:
    """Parse and check a SPAseq query (``ceql.CeqlSyntaxError`` /
    ``ceql.CeqlValidationError`` with line, column and caret) and lower it for evaluation.
    ``dataset``: the static named graphs ``GRAPH <iri> { … }`` reads — a
    :class:`ceql.rdf.StaticDataset`, ``{graph IRI: file path}`` (each file's triples are
    that named graph, as Spark's ``dataset =>`` option takes them) or a list of TriG /
    N-Quads file paths (``ceql.CeqlTypeError`` for anything else)."""
    if not isinstance(text, str):
        raise CeqlTypeError(f"a SPAseq query is a str, not {type(text).__name__}")
    return Query(text, parse(text), as_dataset(dataset))
