"""Graphviz, when this machine has it: the ``graphviz`` Python package and the ``dot`` program.

Both are optional; :func:`render` says ``None`` whenever either is missing or ``dot`` fails, and
the caller draws the automaton itself.
"""

from __future__ import annotations

import shutil

from ..automata import CEA
from ..predicates import AtomTable
from .automaton import edge_labels

__all__ = ["MAX_STATES", "dot_binary", "picture_dot", "render"]

#: Larger automata are not drawn (``dot`` would take long and the picture would be unreadable).
MAX_STATES = 300


def dot_binary() -> str | None:
    """The path of Graphviz's ``dot`` program, or ``None`` when it is not installed."""
    return shutil.which("dot")


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def picture_dot(cea: CEA, atoms: AtomTable) -> str:
    """DOT of the automaton as pictures show it: one arc per pair of states, atoms spelled out.

    (``explain(..., dot=True)`` keeps the listing's form: one edge per transition, ``p0, p1…``.)
    """
    out = ["digraph cea {", '  rankdir=LR; bgcolor="transparent";',
           '  node [shape=circle, fontname="Helvetica", fontsize=12];',
           '  edge [fontname="Courier", fontsize=10];',
           "  start [shape=point, width=0.08]; start -> q0;"]
    for q in range(cea.n_states):
        shape = "doublecircle" if q in cea.finals else "circle"
        out.append(f"  q{q} [shape={shape}];")
    arcs: dict[tuple[int, int], list[int]] = {}
    for i, t in enumerate(cea.transitions):
        arcs.setdefault((t.src, t.dst), []).append(i)
    for (s, d), idx in arcs.items():
        lines = edge_labels([cea.transitions[i] for i in idx], atoms)
        out.append(f"  q{s} -> q{d} [label={_quoted(chr(10).join(lines))}];")
    out.append("}")
    return "\n".join(out)


def render(source: str) -> str | None:
    """``source`` (DOT) drawn by Graphviz as an SVG element, or ``None`` if it cannot be."""
    if dot_binary() is None:
        return None
    try:
        import graphviz
    except ImportError:
        return None
    try:
        svg = graphviz.Source(source).pipe(format="svg", encoding="utf-8", quiet=True)
    except (graphviz.ExecutableNotFound, graphviz.CalledProcessError, OSError):
        return None
    text = svg if isinstance(svg, str) else ""
    start = text.find("<svg")
    if start < 0:
        return None
    # follow the notebook's text colour (dark themes) instead of Graphviz's black
    return (text[start:].rstrip().replace('"black"', '"currentColor"')
            .replace("<text ", '<text fill="currentColor" '))
