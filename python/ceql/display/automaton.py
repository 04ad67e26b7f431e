"""An automaton as words: guards and atoms as text, the plain-text listing, Graphviz DOT.

Transitions read ``guard •`` (the event joins the complex event) or ``guard ○`` (it is
skipped); the listing and :func:`to_dot` name atoms ``p0, p1, …``, the pictures spell them out
(:func:`edge_labels`).
"""

from __future__ import annotations

from collections.abc import Callable

from ..automata import CEA, Transition
from ..automata.mandatory import Mandatory
from ..frontends.ceql import format_pred
from ..predicates import (
    Atom,
    AtomTable,
    GAnd,
    GAtom,
    GNot,
    GOr,
    GTrue,
    GuardTree,
    GUnless,
    StreamIs,
    TypeIs,
)

__all__ = ["atom_text", "describe", "edge_labels", "guard_text", "mandatory_lines", "short_atom",
           "to_dot"]


def guard_text(g: GuardTree, name: Callable[[int], str]) -> str:
    """A guard as text, atom ``k`` written ``name(k)`` (without recursion)."""
    out: list[str] = []
    todo: list[GuardTree | str] = [g]  # a str is text to write as is
    while todo:
        x = todo.pop()
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, GTrue):
            out.append("TRUE")
        elif isinstance(x, GAtom):
            out.append(name(x.k))
        elif isinstance(x, GNot):
            todo += [x.item, "NOT "]
        elif isinstance(x, GUnless):
            todo += [")", x.item, "UNLESS("]
        elif isinstance(x, (GAnd, GOr)):
            op = " AND " if isinstance(x, GAnd) else " OR "
            parts: list[GuardTree | str] = ["("]
            for i, item in enumerate(x.items):
                parts += [op, item] if i else [item]
            todo += reversed([*parts, ")"])
        else:
            out.append(repr(x))
    return "".join(out)


def _p(k: int) -> str:
    return f"p{k}"


def atom_text(atom: Atom) -> str:
    """An atom as the listing writes it (``type = 'SELL'``, ``price > 100``)."""
    if isinstance(atom, TypeIs):
        return f"type = {atom.name!r}"
    if isinstance(atom, StreamIs):
        return f"stream = {atom.name!r} (or none)"
    return format_pred(atom)


def short_atom(atom: Atom) -> str:
    """An atom as a picture writes it: a type test is the type's name."""
    if isinstance(atom, TypeIs):
        return atom.name
    if isinstance(atom, StreamIs):
        return f"stream {atom.name}"
    return format_pred(atom)


def _unwrap(text: str) -> str:
    """``text`` without parentheses around all of it."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    level = 0
    for i, c in enumerate(text):
        level += (c == "(") - (c == ")")
        if level == 0 and i < len(text) - 1:
            return text
    return text[1:-1]


def edge_labels(transitions: list[Transition], atoms: AtomTable) -> list[str]:
    """One line per transition of an arc: spelled-out guard, mark, the variables it binds."""
    names = [short_atom(a) for a in atoms.atoms]
    lines = []
    for t in transitions:
        guard = "any" if isinstance(t.guard, GTrue) else _unwrap(
            guard_text(t.guard, names.__getitem__))
        vs = f" {', '.join(sorted(t.vars))}" if t.vars else ""
        lines.append(f"{guard} {'•' if t.pmark else '○'}{vs}")
    return lines


def describe(cea: CEA, atoms: AtomTable, header: str,
             conditions: list[str] | None = None) -> str:
    """A plain-text listing of predicates, states and transitions (and ``conditions``, the
    lines describing conditions between events, if any)."""
    lines = [header, "", f"predicates ({len(atoms)}):"]
    for k, atom in enumerate(atoms.atoms):
        lines.append(f"  p{k}: {atom_text(atom)}")
    lines.append("")
    lines.append(f"automaton: {cea.n_states} states, {len(cea.transitions)} transitions; "
                 f"initial q0, final {', '.join(f'q{q}' for q in sorted(cea.finals))}")
    for t in cea.transitions:
        mark = "•" if t.pmark else ("○ (marks before projection)" if t.mark else "○")
        vs = f"  binds {', '.join(sorted(t.vars))}" if t.vars else ""
        if t.scopes:
            vs += "  in " + ", ".join(f"s{k}" + (" (opens)" if k in t.opens else "")
                                      for k, _ in t.scopes)
        lines.append(f"  q{t.src} --[{guard_text(t.guard, _p)}] {mark}--> q{t.dst}{vs}")
    if conditions:
        lines += ["", *conditions]
    return "\n".join(lines)


def mandatory_lines(elements: tuple[Mandatory, ...], atoms: AtomTable) -> list[str]:
    """One line per mandatory element: its label and its guard, atoms spelled out."""
    names = [atom_text(a) for a in atoms.atoms]
    return [f"  {m.label}: {_unwrap(guard_text(m.guard, names.__getitem__))}" for m in elements]


def to_dot(cea: CEA, atoms: AtomTable) -> str:
    """The automaton in Graphviz DOT, atoms named ``p0, p1, …``."""
    out = ["digraph cea {", "  rankdir=LR;", '  node [shape=circle, fontname="Helvetica"];',
           '  start [shape=point]; start -> q0;']
    for q in sorted(cea.finals):
        out.append(f"  q{q} [shape=doublecircle];")
    for t in cea.transitions:
        label = guard_text(t.guard, _p) + (" / •" if t.pmark else " / ○")
        label = label.replace('"', '\\"')
        out.append(f'  q{t.src} -> q{t.dst} [label="{label}"];')
    out.append("}")
    return "\n".join(out)
