"""ceql's own drawing of a small automaton as SVG, for machines without Graphviz.

States stand in columns by the longest path to them from the initial state (cycles set aside;
left to right) and in rows within a column; the transitions between two states are one arc
labelled with one line each.
An arc to the next column is straight, a self-loop sits above its state, any other arc bends
below. Crude next to Graphviz, but a real picture with no dependency.
"""

from __future__ import annotations

import math

from ..automata import CEA, Transition
from ..markup import esc
from ..predicates import AtomTable
from .automaton import edge_labels

__all__ = ["MAX_ARCS", "MAX_STATES", "automaton_svg"]

#: Larger automata are not drawn (the listing is clearer than a thicket).
MAX_STATES = 40
MAX_ARCS = 120

_R = 18.0          # state radius
_CHAR = 7.2        # width of a 12 px monospace character
_LINE = 14.0       # label line height
_GAP = 34.0        # vertical space between rows
_LOOP = 51.0       # how far a self-loop rises above its state's centre
_MAX_CHARS = 44    # longer label lines are cut (the full text is the arc's tooltip)

Point = tuple[float, float]
# labels over lines stay readable: a rim of the page's background colour around the letters
_HALO = ("paint-order:stroke;stroke:var(--jp-layout-color0,var(--vscode-editor-background,"
         "white));stroke-width:4px;stroke-linejoin:round")


def _f(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _cut(line: str) -> str:
    return line if len(line) <= _MAX_CHARS else line[:_MAX_CHARS - 1] + "…"


class _Canvas:
    """SVG elements and the box around them."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.x0 = self.y0 = math.inf
        self.x1 = self.y1 = -math.inf

    def cover(self, x: float, y: float) -> None:
        self.x0, self.y0 = min(self.x0, x), min(self.y0, y)
        self.x1, self.y1 = max(self.x1, x), max(self.y1, y)

    def text(self, x: float, y: float, text: str, anchor: str = "middle") -> None:
        w = len(text) * _CHAR
        left = x - w / 2 if anchor == "middle" else x
        self.cover(left, y - 11)
        self.cover(left + w, y + 3)
        self.parts.append(f'<text x="{_f(x)}" y="{_f(y)}" text-anchor="{anchor}" '
                          f'fill="currentColor" style="{_HALO}">{esc(text)}</text>')

    def arrow(self, tip: Point, towards: Point) -> None:
        """An arrowhead at ``tip``, pointing away from ``towards``."""
        dx, dy = tip[0] - towards[0], tip[1] - towards[1]
        n = math.hypot(dx, dy) or 1.0
        ux, uy = dx / n, dy / n
        bx, by = tip[0] - 9 * ux, tip[1] - 9 * uy
        pts = [tip, (bx - 4 * uy, by + 4 * ux), (bx + 4 * uy, by - 4 * ux)]
        self.parts.append('<polygon points="' + " ".join(f"{_f(x)},{_f(y)}" for x, y in pts)
                          + '" fill="currentColor"/>')

    def svg(self) -> str:
        pad = 6.0
        x, y = self.x0 - pad, self.y0 - pad
        w, h = self.x1 - self.x0 + 2 * pad, self.y1 - self.y0 + 2 * pad
        return (f'<svg xmlns="http://www.w3.org/2000/svg" class="ceql-automaton" '
                f'data-layout="ceql" width="{_f(w)}" height="{_f(h)}" '
                f'viewBox="{_f(x)} {_f(y)} {_f(w)} {_f(h)}" font-family="monospace" '
                f'font-size="12">' + "".join(self.parts) + "</svg>")


def _ranks(cea: CEA) -> list[int]:
    """Each state's column: the longest path to it from the initial state once the arcs that
    close cycles are set aside (unreachable states one column further)."""
    succ: list[list[int]] = [[] for _ in range(cea.n_states)]
    for t in cea.transitions:
        if t.dst not in succ[t.src]:
            succ[t.src].append(t.dst)
    # depth-first, without recursion: arcs to a state on the path close a cycle
    on_path = [False] * cea.n_states
    seen = [False] * cea.n_states
    order: list[int] = []  # reverse topological order of the acyclic rest
    dag: list[list[int]] = [[] for _ in range(cea.n_states)]
    stack: list[tuple[int, int]] = [(0, 0)]
    seen[0] = on_path[0] = True
    while stack:
        q, i = stack.pop()
        if i < len(succ[q]):
            stack.append((q, i + 1))
            r = succ[q][i]
            if not on_path[r]:
                dag[q].append(r)
                if not seen[r]:
                    seen[r] = on_path[r] = True
                    stack.append((r, 0))
        else:
            on_path[q] = False
            order.append(q)
    rank = [-1] * cea.n_states
    rank[0] = 0
    for q in reversed(order):
        for r in dag[q]:
            rank[r] = max(rank[r], rank[q] + 1)
    last = max(rank) + 1
    return [r if r >= 0 else last for r in rank]


def _arcs(cea: CEA) -> dict[tuple[int, int], list[Transition]]:
    arcs: dict[tuple[int, int], list[Transition]] = {}
    for t in cea.transitions:
        arcs.setdefault((t.src, t.dst), []).append(t)
    return arcs


def automaton_svg(cea: CEA, atoms: AtomTable) -> str | None:
    """The automaton as SVG, or ``None`` when it is too large to draw."""
    arcs = _arcs(cea)
    if cea.n_states > MAX_STATES or len(arcs) > MAX_ARCS:
        return None
    labels = {pair: [_cut(s) for s in edge_labels(ts, atoms)] for pair, ts in arcs.items()}
    rank = _ranks(cea)
    n_cols = max(rank) + 1
    # rows: each column ordered by the mean row of its predecessors in earlier columns
    row: dict[int, int] = {}
    columns: list[list[int]] = [[] for _ in range(n_cols)]
    for c in range(n_cols):
        members = [q for q in range(cea.n_states) if rank[q] == c]
        preds: dict[int, list[int]] = {q: [] for q in members}
        for s, d in arcs:
            if d in preds and rank[s] < c:
                preds[d].append(row[s])
        members.sort(key=lambda q: (sum(preds[q]) / len(preds[q]) if preds[q] else math.inf, q))
        for i, q in enumerate(members):
            row[q] = i
        columns[c] = members
    # row heights: room above for self-loops and their labels
    above = [_R] * max(len(col) for col in columns)
    for (s, d), lines in labels.items():
        if s == d:
            above[row[s]] = max(above[row[s]], _LOOP + 6 + len(lines) * _LINE)
    ys: list[float] = []
    y = 0.0
    for i, a in enumerate(above):
        y += a if i == 0 else _R + _GAP + a
        ys.append(y)
    # column gaps: room for the labels of the straight arcs between them
    xs: list[float] = [0.0]
    for c in range(n_cols - 1):
        width = max((max(map(len, lines)) * _CHAR for (s, d), lines in labels.items()
                     if rank[s] == c and rank[d] == c + 1), default=0.0)
        xs.append(xs[-1] + max(2 * _R + 60, width + 2 * _R + 24))
    pos = {q: (xs[rank[q]], ys[row[q]]) for q in range(cea.n_states)}

    cv = _Canvas()
    x, y = pos[0]
    cv.parts.append(f'<line x1="{_f(x - _R - 30)}" y1="{_f(y)}" x2="{_f(x - _R)}" '
                    f'y2="{_f(y)}" stroke="currentColor"/>')
    cv.cover(x - _R - 30, y)
    cv.arrow((x - _R, y), (x - _R - 30, y))
    for q in range(cea.n_states):
        x, y = pos[q]
        cv.cover(x - _R, y - _R)
        cv.cover(x + _R, y + _R)
        cv.parts.append(f'<circle cx="{_f(x)}" cy="{_f(y)}" r="{_f(_R)}" fill="none" '
                        'stroke="currentColor"/>')
        if q in cea.finals:
            cv.parts.append(f'<circle cx="{_f(x)}" cy="{_f(y)}" r="{_f(_R - 4)}" fill="none" '
                            'stroke="currentColor"/>')
        cv.text(x, y + 4, f"q{q}")
    for (s, d), lines in labels.items():
        title = f"q{s} → q{d}\n" + "\n".join(edge_labels(arcs[(s, d)], atoms))
        cv.parts.append(f"<g><title>{esc(title)}</title>")
        _arc(cv, pos[s], pos[d], s == d, rank[d] - rank[s], lines)
        cv.parts.append("</g>")
    return cv.svg()


def _arc(cv: _Canvas, a: Point, b: Point, loop: bool, step: int, lines: list[str]) -> None:
    """One arc from ``a`` to ``b`` (``step`` columns to the right) with its label."""
    if loop:
        x, y = a
        p0, p1 = (x - 9, y - 15.6), (x + 9, y - 15.6)
        c0, c1 = (x - 30, y - _R - 45), (x + 30, y - _R - 45)
        cv.parts.append(f'<path d="M{_f(p0[0])},{_f(p0[1])} C{_f(c0[0])},{_f(c0[1])} '
                        f'{_f(c1[0])},{_f(c1[1])} {_f(p1[0])},{_f(p1[1])}" fill="none" '
                        'stroke="currentColor"/>')
        cv.arrow(p1, c1)
        for i, line in enumerate(reversed(lines)):
            cv.text(x, y - _LOOP - 6 - i * _LINE, line)
        return
    (ax, ay), (bx, by) = a, b
    mx, my = (ax + bx) / 2, (ay + by) / 2
    dx, dy = bx - ax, by - ay
    n = math.hypot(dx, dy) or 1.0
    nx, ny = -dy / n, dx / n  # a normal of the chord: made to point down or right
    if step == 1:
        bend = 0.0                             # straight to the next column
    elif abs(dx) < 1:
        bend = 60.0                            # within a column: to the right
        nx, ny = (nx, ny) if nx > 0 else (-nx, -ny)
    elif step > 1:
        bend = 30.0 + 20 * step                # over other states: below them
        nx, ny = (nx, ny) if ny > 0 else (-nx, -ny)
    else:
        bend = 2 * (45.0 + 15 * -step)         # backwards: further below
        nx, ny = (nx, ny) if ny > 0 else (-nx, -ny)
    cx, cy = mx + bend * nx, my + bend * ny
    start = _towards(a, (cx, cy) if bend else b)
    end = _towards(b, (cx, cy) if bend else a)
    cv.parts.append(f'<path d="M{_f(start[0])},{_f(start[1])} Q{_f(cx)},{_f(cy)} '
                    f'{_f(end[0])},{_f(end[1])}" fill="none" stroke="currentColor"/>')
    cv.arrow(end, (cx, cy) if bend else start)
    if not bend:
        for i, line in enumerate(reversed(lines)):
            cv.text(mx, my - 6 - i * _LINE, line)
        return
    px, py = (ax + bx) / 4 + cx / 2, (ay + by) / 4 + cy / 2  # the curve's middle
    cv.cover(px, py)
    if ny > 0.5:
        for i, line in enumerate(lines):
            cv.text(px, py + 15 + i * _LINE, line)
    else:
        for i, line in enumerate(lines):
            cv.text(px + 6, py + 4 + (i - (len(lines) - 1) / 2) * _LINE, line, anchor="start")


def _towards(p: Point, q: Point) -> Point:
    """The point of the circle around ``p`` in the direction of ``q``."""
    dx, dy = q[0] - p[0], q[1] - p[1]
    n = math.hypot(dx, dy) or 1.0
    return (p[0] + _R * dx / n, p[1] + _R * dy / n)
