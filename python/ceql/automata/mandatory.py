"""Mandatory elements of a formula: row conditions every valuation has an event for.

An element is a disjunction of *leaves*: an event-type occurrence (its type, and its stream for
``S>T``) with the unary FILTER atoms about the variables it binds. Every valuation of the
formula binds at least one event that satisfies some leaf of each element, so an event that is
not within the window of an event of every element is in no match (lazy evaluation reads
this, :mod:`ceql.runtime.lazy`).

The rules, from the leaves up:

* ``T``: one element, one leaf;
* ``φ AS X``: φ's elements, X added to the variables of their leaves;
* ``φ ; ψ``, ``φ : ψ``, ``φ AND ψ``: the elements of both (a ``NOT β`` element adds none);
* ``φ+``, ``φ:+``: φ's (a valuation of ``φ+`` holds one of φ);
* ``φ1 OR φ2``: each union of an element of φ1 and one of φ2;
* ``φ FILTER θ``: φ's, each leaf ANDed with θ where every atom that does not speak of the leaf
  (another variable, a negated one, a condition between events, a match condition) reads
  TRUE. A valuation that passes θ passes one DNF conjunction of it, whose atoms about the
  leaf's variables hold on the leaf's event, so the leaf's guard holds there.

Fewer elements is always sound, so the counts are capped (:data:`MAX_ELEMENTS`,
:data:`MAX_LEAVES`). The atoms are those the automaton's construction registered already (the
same predicates), so computing the elements adds none to the table.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import is_correlated, negated_variables
from ..ir import nodes as A
from ..predicates import AtomTable, GAnd, GAtom, GOr, GuardTree, StreamIs, TypeIs, guard_from_pred

__all__ = ["MAX_ELEMENTS", "MAX_LEAVES", "Mandatory", "mandatory_elements"]

MAX_ELEMENTS = 8  #: elements kept per sub-formula
MAX_LEAVES = 32  #: leaves of one element, at most


@dataclass(frozen=True)
class Mandatory:
    """A row condition every match has an event for: ``guard`` over the query's atoms;
    ``label`` names it by the variables of its leaves (``a``, ``x OR y``)."""

    guard: GuardTree
    label: str


@dataclass(frozen=True)
class _Leaf:
    guard: GuardTree
    vars: frozenset[str]
    label: str  # the innermost AS name over the leaf, else its type
    named: bool = False


_Element = tuple[_Leaf, ...]


def mandatory_elements(root: A.Formula, atoms: AtomTable) -> tuple[Mandatory, ...]:
    """The mandatory elements of ``root`` (see the module), in pattern order."""
    done: list[list[_Element]] = []
    todo: list[tuple[A.Formula, bool]] = [(root, False)]
    while todo:
        f, ready = todo.pop()
        if isinstance(f, A.EventType):
            g: GuardTree = GAtom(atoms.add(TypeIs(f.name)))
            names = {f.name}
            label = f.name
            if f.stream is not None:
                g = GAnd((g, GAtom(atoms.add(StreamIs(f.stream)))))
                label = f"{f.stream}>{f.name}"
                names.add(label)
            done.append([(_Leaf(g, frozenset(names), label),)])
        elif isinstance(f, A.Not):
            done.append([])
        elif not ready:
            todo.append((f, True))
            todo += [(c, False) for c in reversed(_children(f))]
        elif isinstance(f, A.As):
            done.append([tuple(_Leaf(lf.guard, lf.vars | {f.var},
                                     lf.label if lf.named else f.var, True) for lf in e)
                         for e in done.pop()])
        elif isinstance(f, A.Filter):
            negated = frozenset(negated_variables(f.formula))
            done.append([tuple(_filtered(lf, f.cond, negated, atoms) for lf in e)
                         for e in done.pop()])
        elif isinstance(f, A.Or):
            right, left = done.pop(), done.pop()
            done.append(_unions(left, right))
        elif isinstance(f, A.Seq | A.And):
            right, left = done.pop(), done.pop()
            done.append((left + right)[:MAX_ELEMENTS])
        # A.Plus: its operand's elements, already on ``done``
    return tuple(_element(e) for e in done[0])


def _children(f: A.Formula) -> tuple[A.Formula, ...]:
    if isinstance(f, A.As | A.Filter | A.Plus):
        return (f.formula,)
    if isinstance(f, A.Or | A.Seq | A.And):
        return (f.left, f.right)
    raise TypeError(f"not a formula: {f!r}")


def _unions(left: list[_Element], right: list[_Element]) -> list[_Element]:
    out: list[_Element] = []
    for a in left:
        for b in right:
            if len(a) + len(b) <= MAX_LEAVES and len(out) < MAX_ELEMENTS:
                out.append(a + b)
    return out


def _filtered(leaf: _Leaf, cond: A.FilterExpr, negated: frozenset[str],
              atoms: AtomTable) -> _Leaf:
    """``leaf`` ANDed with what ``cond`` requires of its event (without recursion)."""
    done: list[GuardTree | None] = []  # None: TRUE (nothing required)
    todo: list[tuple[A.FilterExpr, bool]] = [(cond, False)]
    while todo:
        c, ready = todo.pop()
        if isinstance(c, A.FilterMatch):
            done.append(None)
        elif isinstance(c, A.FilterAtom):
            about = c.var in leaf.vars and c.var not in negated and not is_correlated(c)
            done.append(guard_from_pred(c.pred, atoms) if about else None)
        elif not ready:
            todo += [(c, True), (c.right, False), (c.left, False)]
        else:
            right, left = done.pop(), done.pop()
            if isinstance(c, A.FilterAnd):
                done.append(left if right is None else right if left is None
                            else _flat(GAnd, left, right))
            else:  # FilterOr: TRUE when either side requires nothing
                done.append(None if left is None or right is None else _flat(GOr, left, right))
    req = done[0]
    if req is None:
        return leaf
    return _Leaf(_flat(GAnd, leaf.guard, req), leaf.vars, leaf.label, leaf.named)


def _flat(op: type[GAnd] | type[GOr], a: GuardTree, b: GuardTree) -> GuardTree:
    """``a op b``, operands that are ``op`` themselves spliced in."""
    items = [x for g in (a, b) for x in (g.items if isinstance(g, op) else (g,))]
    return op(tuple(dict.fromkeys(items)))


def _element(e: _Element) -> Mandatory:
    guards = tuple(dict.fromkeys(lf.guard for lf in e))
    labels = " OR ".join(dict.fromkeys(lf.label for lf in e))
    return Mandatory(guards[0] if len(guards) == 1 else GOr(guards), labels)
