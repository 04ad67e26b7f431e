"""Pictures of matches with matplotlib (an optional dependency: ``pip install 'ceql[notebook]'``).

    >>> import ceql.plot
    >>> ax = ceql.plot.timeline(matches, events, time="ts")   # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .constants import DEFAULT_TYPE_COLUMN
from .errors import CeqlInputError, CeqlTypeError, CeqlValidationError
from .runtime import Match

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["MAX_ROWS", "timeline"]

#: Matches drawn at most (one row each); the title says how many were left out.
MAX_ROWS = 50


def timeline(matches: Iterable[Match], events: Sequence[Mapping[str, Any]] | None = None, *,
             time: str | None = None, type_key: str = DEFAULT_TYPE_COLUMN,
             ax: Axes | None = None, max_rows: int = MAX_ROWS) -> Axes:
    """Draw matches on a time axis: one row per match, its events coloured by variable.

    With ``events`` (the input the matches index) the events are dots on a first row,
    coloured by their ``type_key`` (those from the earliest start to the latest end of the
    matches drawn, so a long input costs nothing more). The axis is ``events[p][time]`` when
    ``time`` names the time attribute (numbers or datetimes), else the position ``p``. Draws
    into ``ax`` (a new figure when ``None``) and returns it; at most ``max_rows`` matches are
    drawn.
    """
    if time is not None and events is None:
        raise CeqlValidationError("timeline(time=...) reads the times from the events: pass "
                                  "events= too (the list the matches were found in).")
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise CeqlTypeError("ceql.plot needs matplotlib: pip install 'ceql[notebook]' "
                            "(or pip install matplotlib).") from exc
    evs = list(events) if events is not None else None
    ms = list(matches)
    shown = ms[:max(max_rows, 0)]
    if not all(isinstance(m, Match) for m in shown):
        raise CeqlTypeError("timeline takes the matches of a query (ceql.Match objects).")

    def at(p: int) -> Any:
        if evs is None or time is None:
            return p
        if not 0 <= p < len(evs):
            raise CeqlInputError(f"A match has position {p} but events has {len(evs)} events: "
                                 "pass the events the matches were found in.")
        e = evs[p]
        return e.get(time) if isinstance(e, Mapping) else None

    variables: dict[str, None] = {}
    for m in shown:
        variables.update(dict.fromkeys(m.variables))
    own = ax is None
    if ax is None:
        rows = len(shown) + (1 if evs is not None else 0)
        per_row = max(0.3, 0.1 * len(variables))  # room for each variable's lane
        _, ax = plt.subplots(figsize=(9, 1.8 + per_row * max(rows, 1)), layout="constrained")
    cycle = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    top = 0
    handles_types: list[Any] = []
    if evs is not None:
        by_type: dict[str, list[Any]] = {}
        lo = min((m.start_position for m in shown), default=0)
        hi = max((m.end_position for m in shown), default=len(evs) - 1)
        for p in range(max(lo, 0), min(hi + 1, len(evs))):
            e, x = evs[p], at(p)
            if x is not None:
                kind = e.get(type_key) if isinstance(e, Mapping) else None
                by_type.setdefault(str(kind), []).append(x)
        palette = plt.get_cmap("Set2")
        for i, (kind, xs) in enumerate(by_type.items()):
            handles_types.append(ax.scatter(xs, [0] * len(xs), s=14, marker="s",
                                            color=palette(i % 8), label=kind, zorder=2))
        top = 1
    colour = {v: cycle[i % len(cycle)] for i, v in enumerate(variables)}
    lane = 0.7 / max(len(variables), 1)
    offset = {v: (i - (len(variables) - 1) / 2) * lane for i, v in enumerate(variables)}
    points: dict[str, tuple[list[Any], list[float]]] = {v: ([], []) for v in variables}
    for row, m in enumerate(shown, start=top):
        start, end = at(m.start_position), at(m.end_position)
        if start is not None and end is not None:
            ax.plot([start, end], [row, row], color="0.6", linewidth=1, zorder=1)
        for v, ps in m.variables.items():
            for p in ps:
                x = at(p)
                if x is not None:
                    points[v][0].append(x)
                    points[v][1].append(row + offset[v])
    handles_vars = [ax.scatter(xs, ys, s=24, color=colour[v], label=v, zorder=3)
                    for v, (xs, ys) in points.items()]
    labels = (["events"] if evs is not None else []) + [f"#{i}" for i in range(len(shown))]
    if len(labels) <= 40:
        ax.set_yticks(range(len(labels)), labels)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_xlabel(time if time is not None else "position")
    n = len(ms)
    ax.set_title(f"{n} match{'es' if n != 1 else ''}" if len(shown) == n
                 else f"the first {len(shown)} of {n} matches")
    legend = ax.legend(handles=handles_vars, title="variables", loc="upper left",
                       bbox_to_anchor=(1.01, 1), fontsize="small") if handles_vars else None
    if handles_types and own:  # in a row under the figure
        ax.figure.legend(handles=handles_types[:12], title=f"events by {type_key}",
                         loc="outside lower center", ncols=min(len(handles_types), 6),
                         fontsize="small")
    elif handles_types:
        if legend is not None:
            ax.add_artist(legend)
        ax.legend(handles=handles_types[:12], title=f"events by {type_key}", loc="lower left",
                  bbox_to_anchor=(1.01, 0), fontsize="small")
    ax.grid(axis="x", alpha=0.3)
    return ax
