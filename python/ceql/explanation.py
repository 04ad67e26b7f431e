"""Readable descriptions of a compiled query: its clauses, predicates and automaton."""

from __future__ import annotations

from .automata import CEA
from .frontends.ceql import format_pred, format_query
from .ir import depth, recursion_for
from .predicates import Atom, AtomTable, GAnd, GAtom, GNot, GOr, GTrue, GuardTree, StreamIs, TypeIs
from .query import compile

__all__ = ["describe", "explain", "to_dot"]


def explain(text: str, *, dot: bool = False) -> str:
    """Describe the query's automaton: predicates, states, transitions (or Graphviz DOT)."""
    q = compile(text)
    atoms, cea = q.automaton()
    if dot:
        return to_dot(cea, atoms)
    with recursion_for(depth(q.ast)):
        return describe(cea, atoms, format_query(q.ast))


def _guard_text(g: GuardTree, atoms: AtomTable) -> str:
    out: list[str] = []
    todo: list[GuardTree | str] = [g]  # a str is text to write as is
    while todo:
        x = todo.pop()
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, GTrue):
            out.append("TRUE")
        elif isinstance(x, GAtom):
            out.append(f"p{x.k}")
        elif isinstance(x, GNot):
            todo += [x.item, "NOT "]
        elif isinstance(x, (GAnd, GOr)):
            op = " AND " if isinstance(x, GAnd) else " OR "
            parts: list[GuardTree | str] = ["("]
            for i, item in enumerate(x.items):
                parts += [op, item] if i else [item]
            todo += reversed([*parts, ")"])
        else:
            out.append(repr(x))
    return "".join(out)


def _atom_text(atom: Atom) -> str:
    if isinstance(atom, TypeIs):
        return f"type = {atom.name!r}"
    if isinstance(atom, StreamIs):
        return f"stream = {atom.name!r} (or none)"
    return format_pred(atom)


def describe(cea: CEA, atoms: AtomTable, header: str) -> str:
    """A plain-text listing of predicates, states and transitions."""
    lines = [header, "", f"predicates ({len(atoms)}):"]
    for k, atom in enumerate(atoms.atoms):
        lines.append(f"  p{k}: {_atom_text(atom)}")
    lines.append("")
    lines.append(f"automaton: {cea.n_states} states, {len(cea.transitions)} transitions; "
                 f"initial q0, final {', '.join(f'q{q}' for q in sorted(cea.finals))}")
    for t in cea.transitions:
        mark = "•" if t.pmark else ("○ (marks before projection)" if t.mark else "○")
        vs = f"  binds {', '.join(sorted(t.vars))}" if t.vars else ""
        lines.append(f"  q{t.src} --[{_guard_text(t.guard, atoms)}] {mark}--> q{t.dst}{vs}")
    return "\n".join(lines)


def to_dot(cea: CEA, atoms: AtomTable) -> str:
    """The automaton in Graphviz DOT."""
    out = ["digraph cea {", "  rankdir=LR;", '  node [shape=circle, fontname="Helvetica"];',
           '  start [shape=point]; start -> q0;']
    for q in sorted(cea.finals):
        out.append(f"  q{q} [shape=doublecircle];")
    for t in cea.transitions:
        label = _guard_text(t.guard, atoms) + (" / •" if t.pmark else " / ○")
        label = label.replace('"', '\\"')
        out.append(f'  q{t.src} -> q{t.dst} [label="{label}"];')
    out.append("}")
    return "\n".join(out)
