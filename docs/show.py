"""The small printer the examples in these docs use (``from show import show``).

``show(query, events, **options)`` runs a CEQL query over a list of events and prints its
matches grouped by end position, one line per end position::

    at 4: {0,2,4} {1,2,4}

Each ``{…}`` is one complex event: the positions (0-based indices into ``events``) of its
events. When the SELECT list leaves out the first or last event of the interval, the interval
is written before them: ``[0,4]{2}``. The engine yields the matches of one end position in an
order that is not specified; ``show`` sorts them. ``variables=True`` adds what each variable
binds, ``partition=True`` the PARTITION BY key. Other keyword arguments go to ``Query.run``.

``stream("SELL SELL BUY", price=[101, 102, 80])`` builds such a list of events.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import ceql

__all__ = ["show", "stream"]


def stream(types: str, **columns: Sequence[Any]) -> list[dict[str, Any]]:
    """Events with the given space-separated types and one value per event for each column."""
    names = types.split()
    return [{"type": t, **{k: v[i] for k, v in columns.items()}} for i, t in enumerate(names)]


def _braces(positions: Iterable[int]) -> str:
    return "{" + ",".join(map(str, positions)) + "}"


def _text(m: ceql.Match, variables: bool, partition: bool) -> str:
    ps = m.positions
    out = _braces(ps)
    if not ps or ps[0] != m.start_position or ps[-1] != m.end_position:
        out = f"[{m.start_position},{m.end_position}]" + out
    if variables:
        out += "(" + " ".join(f"{v}={_braces(p)}" for v, p in m.variables.items()) + ")"
    if partition:
        out += "@" + ",".join(map(str, m.partition))
    return out


def show(query: str | ceql.Query, events: Iterable[Mapping[str, Any]], *,
         variables: bool = False, partition: bool = False, **options: Any) -> None:
    """Print the matches of ``query`` over ``events``, grouped by end position."""
    q = ceql.compile(query) if isinstance(query, str) else query
    by_end: dict[int, list[ceql.Match]] = {}
    for m in q.run(events, **options):
        by_end.setdefault(m.end_position, []).append(m)
    if not by_end:
        print("no match")
    for end, ms in by_end.items():
        ms.sort(key=lambda m: (m.positions, m.start_position, m.partition))
        print(f"at {end}: " + " ".join(_text(m, variables, partition) for m in ms))
