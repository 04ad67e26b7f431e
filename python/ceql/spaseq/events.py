"""Checking the events a SPAseq query reads: each a mapping with ``stream`` (a stream's IRI
or its name in the query), ``time`` (a number of seconds or a datetime) and ``graph`` (what
:func:`ceql.rdf.read_event` reads). Events of streams the query does not name are not its
events (docs/SPASEQ.md, Data model) and are dropped here, before instants are formed.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, NamedTuple

from ..errors import CeqlInputError

__all__ = ["MICROS", "Event", "StreamNames", "TimeKey", "check_event", "time_key"]

TimeKey = int | Fraction
"""A time in exact microseconds: an ``int`` (datetimes, whole numbers of microseconds) or a
``Fraction`` (a float time that is not a whole number of microseconds) — ints are compared
and subtracted many times per event, Fractions are slow."""

MICROS = 10 ** 6
"""Microseconds in a second: time keys and windows (``Plan.span``) are in microseconds."""

_KEYS = ("stream", "time", "graph")
_NEEDS = ("an event needs 'stream' (a stream's IRI or its name in the query), 'time' (a number "
          "of seconds or a datetime) and 'graph' (RDF text, a parsed graph or a list of "
          "triples)")


class Event(NamedTuple):
    """One event of the streamset: its index in the input, its stream (IRI), its time as
    given, as a key (microseconds, exact) and its kind (:func:`time_key`), and its graph as
    given. (A named tuple: one is made per event read.)"""

    position: int
    stream: str
    time: Any
    key: TimeKey
    kind: str
    graph: Any


class StreamNames:
    """The query's streams: name or IRI → IRI, and each IRI's order in ``FROM STREAM``."""

    def __init__(self, streams: Sequence[tuple[str, str]]) -> None:
        self.iri: dict[str, str] = {}
        for name, iri in streams:
            self.iri[iri] = iri
            self.iri.setdefault(name, iri)
        self.order = {iri: i for i, (_, iri) in enumerate(streams)}
        self.name = {iri: name for name, iri in streams}
        self.listing = ", ".join(f"{n} <{i}>" for n, i in streams)

    def resolve(self, stream: object) -> str | None:
        """The IRI of the stream a ``stream`` value names (``<iri>``, ``iri`` or the name),
        ``None`` for any other value."""
        if not isinstance(stream, str):
            return None
        return self.iri.get(stream[1:-1] if stream.startswith("<") else stream)


_EPOCH = {True: dt.datetime(1970, 1, 1, tzinfo=dt.UTC), False: dt.datetime(1970, 1, 1)}


def time_key(value: object, position: int) -> tuple[TimeKey, str]:
    """A time as exact microseconds (datetimes since the epoch, numbers as seconds) and its
    kind (``"number"``, ``"naive datetime"``, ``"aware datetime"``), or the error saying why
    it is not one."""
    if isinstance(value, bool) or value is None:
        pass
    elif isinstance(value, int):
        return value * MICROS, "number"
    elif isinstance(value, float):
        if math.isfinite(value):
            key = Fraction(value) * MICROS
            return (key.numerator if key.denominator == 1 else key), "number"
    elif isinstance(value, dt.datetime):
        aware = value.utcoffset() is not None
        d = value - _EPOCH[aware]
        return ((d.days * 86400 + d.seconds) * MICROS + d.microseconds,
                "aware datetime" if aware else "naive datetime")
    raise CeqlInputError(f"event {position}: 'time' is {value!r}; a time is a finite number of "
                         "seconds or a datetime")


def check_event(raw: object, position: int, streams: StreamNames) -> Event | None:
    """The event at input index ``position``, or ``None`` when it is on no stream of the
    query; :class:`ceql.CeqlInputError` when it is not an event."""
    if not isinstance(raw, Mapping):
        raise CeqlInputError(f"event {position} is a {type(raw).__name__}: {_NEEDS}")
    for k in _KEYS:
        if k not in raw:
            raise CeqlInputError(f"event {position} has no {k!r}: {_NEEDS}")
    stream = raw["stream"]
    if not isinstance(stream, str):
        raise CeqlInputError(f"event {position}: 'stream' is {stream!r}; it must be the IRI or "
                             f"the name of a stream of the query ({streams.listing})")
    iri = streams.resolve(stream)
    if iri is None:
        return None
    key, kind = time_key(raw["time"], position)
    graph = raw["graph"]
    if graph is None:
        raise CeqlInputError(f"event {position}: 'graph' is None; an empty graph is \"\" or []")
    return Event(position, iri, raw["time"], key, kind, graph)
