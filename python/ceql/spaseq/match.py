"""The matches a SPAseq query outputs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..rdf import term_value

__all__ = ["Match", "Terms"]

Terms = dict[str, "str | list[str] | None"]
"""SELECT variable → its term's N-Triples text (``None``: unbound), or for an
iteration-local variable the list of its terms, one per iteration."""


def _frozen(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _value(term: str | list[str] | None) -> Any:
    if term is None:
        return None
    if isinstance(term, list):
        return [term_value(t) for t in term]
    return term_value(term)


class Match:
    """One match: ``positions`` (ascending indices in the input of its events), ``events``
    (GPM → the indices of its events, in time order: several for a ``+`` GPM), ``bindings``
    (SELECT variable → plain value — IRIs as strings, literals as Python values, ``None``
    when unbound — or, for an iteration-local variable, the list of its values, one per
    iteration in time order), ``terms`` (the same as RDF terms: N-Triples texts,
    :data:`Terms`), ``start_time`` and ``end_time`` (times as given).

    Two matches are equal when their events per GPM and their terms are: outputs form a set
    of RDF terms (docs/SPASEQ.md), so ``"x"`` and ``"x"@en``, or ``1`` and ``1.0``, make
    two outputs even though their plain values are equal.
    """

    __slots__ = ("bindings", "end_time", "events", "positions", "start_time", "terms")

    def __init__(self, events: Mapping[str, tuple[int, ...]], terms: Terms,
                 start_time: Any, end_time: Any) -> None:
        self.events = dict(events)
        self.positions = tuple(sorted({p for ps in events.values() for p in ps}))
        self.terms = terms
        self.bindings = {v: _value(t) for v, t in terms.items()}
        self.start_time = start_time
        self.end_time = end_time

    def key(self) -> tuple[Any, ...]:
        """The match's identity: its events per GPM and its terms."""
        return (tuple(sorted(self.events.items())),
                tuple((k, _frozen(v)) for k, v in self.terms.items()))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (times as given)."""
        return {"positions": list(self.positions),
                "events": {g: list(ps) for g, ps in self.events.items()},
                "bindings": dict(self.bindings), "terms": dict(self.terms),
                "start_time": self.start_time,
                "end_time": self.end_time}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Match) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def __repr__(self) -> str:
        return (f"Match(positions={list(self.positions)}, events={self.events!r}, "
                f"bindings={self.bindings!r})")
