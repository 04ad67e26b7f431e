"""Matches as HTML for notebooks: one match as a card, a list of matches as a table.

The events' fields are shown when a match carries its events (``Match.events``: the mappings
of its positions, in order), or when they are passed in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ..markup import esc, table, value, wrap

__all__ = ["MAX_ROWS", "match_html", "matches_html"]

#: Rows of a matches table shown before "… N more".
MAX_ROWS = 30
#: Positions written in one cell before "… (+N)".
_MAX_CELL_POSITIONS = 20

Events = Mapping[int, Mapping[str, Any]]


class Match(Protocol):
    """What this module reads of a :class:`ceql.Match` (``runtime/match.py`` imports this
    module for ``_repr_html_``, so it names the match by its shape)."""

    @property
    def positions(self) -> tuple[int, ...]: ...
    @property
    def start_position(self) -> int: ...
    @property
    def end_position(self) -> int: ...
    @property
    def start_time(self) -> Any: ...
    @property
    def end_time(self) -> Any: ...
    @property
    def partition(self) -> tuple[Any, ...]: ...
    @property
    def timed(self) -> bool: ...
    @property
    def variables(self) -> dict[str, tuple[int, ...]]: ...


def _events(m: Match, events: Sequence[Any] | None) -> Events | None:
    """Position → event mapping of ``m``'s events, from ``events`` or ``m.events``."""
    evs = getattr(m, "events", None) if events is None else events
    if not isinstance(evs, Sequence) or isinstance(evs, str | bytes):
        return None
    if len(evs) != len(m.positions):
        return None
    out = {p: e for p, e in zip(m.positions, evs, strict=True) if isinstance(e, Mapping)}
    return out or None


def _times_known(m: Match) -> bool:
    # Without a time attribute a match's times are its positions: not worth a column.
    return m.timed


def _fields(e: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={e[k]}" for k in e)


def _positions(ps: Sequence[int], events: Events | None) -> str:
    shown = ps[:_MAX_CELL_POSITIONS]
    cells = []
    for p in shown:
        e = events.get(p) if events is not None else None
        cells.append(f'<span title="{esc(_fields(e))}">{p}</span>' if e is not None else str(p))
    more = f" … (+{len(ps) - len(shown)})" if len(ps) > len(shown) else ""
    return ", ".join(cells) + more


def _partition(key: tuple[Any, ...]) -> str:
    return ", ".join(value(v) for v in key)


def match_html(m: Match, events: Sequence[Mapping[str, Any]] | None = None) -> str:
    """One match: interval, times when known, partition, and its variables or its events.

    ``events`` (the mappings of ``m.positions``, in order) overrides ``m.events``.
    """
    head = [f"<b>match</b> [{m.start_position}, {m.end_position}]"]
    if _times_known(m):
        head.append(f"time {value(m.start_time)} → {value(m.end_time)}")
    if m.partition:
        head.append(f"partition {_partition(m.partition)}")
    evs = _events(m, events)
    variables = m.variables
    if evs is None:
        body = table(["variable", "positions"],
                     [[esc(v), _positions(ps, None)] for v, ps in variables.items()])
    else:
        roles: dict[int, list[str]] = {}
        for v, ps in variables.items():
            for p in ps:
                roles.setdefault(p, []).append(v)
        names: dict[str, None] = {}
        for e in evs.values():
            names.update(dict.fromkeys(e))
        rows = []
        for p in m.positions:
            e = evs.get(p, {})
            rows.append([str(p), esc(", ".join(roles.get(p, []))),
                         *(value(e[k]) if k in e else "" for k in names)])
        body = table(["position", "variables", *names], rows)
    return wrap("<div>" + " · ".join(head) + "</div>" + body, "ceql-match")


def matches_html(matches: Sequence[Match], max_rows: int = MAX_ROWS) -> str:
    """A table of matches: one row per match, one column per variable (at most ``max_rows``)."""
    n = len(matches)
    if n == 0:
        return wrap('<span class="ceql-note">no matches</span>', "ceql-matches")
    shown = matches[:max(max_rows, 0)]
    times = any(_times_known(m) for m in shown)
    partitions = any(m.partition for m in shown)
    variables: dict[str, None] = {}
    for m in shown:
        variables.update(dict.fromkeys(m.variables))
    header = ["#", "start", "end"]
    header += ["start time", "end time"] if times else []
    header += ["partition"] if partitions else []
    header += list(variables)
    rows = []
    for i, m in enumerate(shown):
        evs = _events(m, None)
        row = [str(i), str(m.start_position), str(m.end_position)]
        if times:
            row += [value(m.start_time), value(m.end_time)]
        if partitions:
            row.append(_partition(m.partition))
        vs = m.variables
        row += [_positions(vs[v], evs) if v in vs else "" for v in variables]
        rows.append(row)
    what = f"{n} match{'es' if n != 1 else ''}"
    if len(shown) < n:
        what = (f"the first {len(shown)} of {n} matches; {n - len(shown)} more not shown")
    note = f'<div class="ceql-note">{what}</div>'
    return wrap(table(header, rows) + note, "ceql-matches")
