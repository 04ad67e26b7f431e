"""Guards: boolean trees over the atoms of an :class:`~.table.AtomTable`, evaluated on classes.

A guard holds on an event when it is TRUE in SQL's 3-valued logic on the event's class.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..ir import nodes as _ast
from .table import AtomTable
from .values import FALSE, NOT3, TRUE, UNKNOWN

__all__ = [
    "GAnd",
    "GAtom",
    "GNot",
    "GOr",
    "GTrue",
    "GUnless",
    "GuardTree",
    "guard_fn",
    "guard_from_pred",
    "tri_state",
]


# Guards may nest thousands of levels (``NOT NOT ... x = 1``) and are hashed at run time (the
# automaton's guard caches), so hashing and equality must not recurse: each node's hash is
# computed when it is built, from its children's (ints only: the same in every process), and
# equality walks the two trees with a stack.

@dataclass(frozen=True)
class GAtom:
    """Atom ``k`` of an :class:`AtomTable`."""

    k: int
    _h: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_h", hash((1, self.k)))

    def __hash__(self) -> int:
        return self._h

    def __eq__(self, other: object) -> bool:
        return _same_guard(self, other)


@dataclass(frozen=True)
class GAnd:
    """3-valued AND of the items."""

    items: tuple[GuardTree, ...]
    _h: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_h", hash((2, *(it._h for it in self.items))))

    def __hash__(self) -> int:
        return self._h

    def __eq__(self, other: object) -> bool:
        return _same_guard(self, other)


@dataclass(frozen=True)
class GOr:
    """3-valued OR of the items."""

    items: tuple[GuardTree, ...]
    _h: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_h", hash((3, *(it._h for it in self.items))))

    def __hash__(self) -> int:
        return self._h

    def __eq__(self, other: object) -> bool:
        return _same_guard(self, other)


@dataclass(frozen=True)
class GNot:
    """3-valued NOT of the item."""

    item: GuardTree
    _h: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_h", hash((4, self.item._h)))

    def __hash__(self) -> int:
        return self._h

    def __eq__(self, other: object) -> bool:
        return _same_guard(self, other)


@dataclass(frozen=True)
class GUnless:
    """TRUE unless the item is TRUE, else FALSE (never unknown): the gap of a negation lets
    an event by when it is not a negated event, including when a condition on it is unknown
    (a NULL), which 3-valued NOT would not."""

    item: GuardTree
    _h: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_h", hash((6, self.item._h)))

    def __hash__(self) -> int:
        return self._h

    def __eq__(self, other: object) -> bool:
        return _same_guard(self, other)


@dataclass(frozen=True)
class GTrue:
    """Always TRUE (no condition)."""

    _h: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_h", hash((5,)))

    def __hash__(self) -> int:
        return self._h

    def __eq__(self, other: object) -> bool:
        return _same_guard(self, other)


def _same_guard(a: GuardTree, b: object) -> bool:
    if not isinstance(b, GAtom | GAnd | GOr | GNot | GUnless | GTrue):
        return False
    todo: list[tuple[GuardTree, GuardTree]] = [(a, b)]
    while todo:
        x, y = todo.pop()
        if x is y:
            continue
        if type(x) is not type(y) or x._h != y._h:
            return False
        if isinstance(x, GAtom) and isinstance(y, GAtom):
            if x.k != y.k:
                return False
        elif isinstance(x, GNot | GUnless) and isinstance(y, GNot | GUnless):
            todo.append((x.item, y.item))
        elif isinstance(x, GAnd | GOr) and isinstance(y, GAnd | GOr):
            if len(x.items) != len(y.items):
                return False
            todo.extend(zip(x.items, y.items, strict=True))
    return True


GuardTree = GAtom | GAnd | GOr | GNot | GUnless | GTrue

# Beyond this depth the Python parser rejects a guard's source; a postfix program runs instead.
_MAX_SOURCE_DEPTH = 50


def guard_from_pred(pred: _ast.Pred, table: AtomTable) -> GuardTree:
    """Register the atoms of ``pred`` in ``table`` and return the guard over them.

    Nested ANDs (ORs) become one flat :class:`GAnd` (:class:`GOr`); atoms are added in
    left-to-right order. Iterative, so long chains of conditions do not hit Python's recursion
    limit.
    """
    done: list[GuardTree] = []
    todo: list[tuple[Any, bool]] = [(pred, False)]
    while todo:
        node, ready = todo.pop()
        if isinstance(node, (_ast.PAnd, _ast.POr, _ast.PNot)):
            if not ready:
                todo.append((node, True))
                todo.extend((c, False) for c in reversed(_pred_children(node)))
                continue
            if isinstance(node, _ast.PNot):
                done.append(GNot(done.pop()))
                continue
            right, left = done.pop(), done.pop()
            cls = GAnd if isinstance(node, _ast.PAnd) else GOr
            items: list[GuardTree] = []
            for it in (left, right):
                items.extend(it.items if isinstance(it, cls) else (it,))
            done.append(cls(tuple(items)))
        else:
            done.append(GAtom(table.add(node)))
    return done[0]


def _pred_children(node: _ast.PAnd | _ast.POr | _ast.PNot) -> tuple[_ast.Pred, ...]:
    return (node.operand,) if isinstance(node, _ast.PNot) else (node.left, node.right)


def _guard_children(tree: GuardTree) -> tuple[GuardTree, ...]:
    if isinstance(tree, (GAnd, GOr)):
        return tree.items
    return (tree.item,) if isinstance(tree, GNot | GUnless) else ()


def _depth(tree: GuardTree) -> int:
    deepest, todo = 0, [(tree, 1)]
    while todo:
        node, d = todo.pop()
        deepest = max(deepest, d)
        todo.extend((c, d + 1) for c in _guard_children(node))
    return deepest


def _guard_src(tree: GuardTree, false: bool) -> str:
    """Python source over ``c`` that is truthy iff ``tree`` is TRUE (or FALSE, if ``false``)."""
    if isinstance(tree, GAtom):
        return f"(c & {1 << (2 * tree.k + int(false))})"
    if isinstance(tree, GNot):
        return _guard_src(tree.item, not false)
    if isinstance(tree, GUnless):
        inner = _guard_src(tree.item, False)
        return inner if false else f"(not {inner})"
    if isinstance(tree, GTrue):
        return "False" if false else "True"
    if isinstance(tree, (GAnd, GOr)):
        conj = isinstance(tree, GAnd) != false  # TRUE of AND / FALSE of OR: all items
        if not tree.items:
            return "True" if conj else "False"
        parts = [_guard_src(it, false) for it in tree.items]
        return "(" + (" and " if conj else " or ").join(parts) + ")"
    raise TypeError(f"not a guard: {tree!r}")


# A guard as a postfix program: ("a", k) atom, ("t", 0) TRUE, ("n", 0) NOT, ("&"|"|", arity).
_Program = list[tuple[str, int]]


def _postfix(tree: GuardTree) -> _Program:
    prog: _Program = []
    todo: list[tuple[GuardTree, bool]] = [(tree, False)]
    while todo:
        node, ready = todo.pop()
        if isinstance(node, GAtom):
            prog.append(("a", node.k))
        elif isinstance(node, GTrue):
            prog.append(("t", 0))
        elif not isinstance(node, (GNot, GUnless, GAnd, GOr)):
            raise TypeError(f"not a guard: {node!r}")
        elif ready:
            prog.append(("n", 0) if isinstance(node, GNot) else ("u", 0)
                        if isinstance(node, GUnless) else (
                "&" if isinstance(node, GAnd) else "|", len(node.items)))
        else:
            todo.append((node, True))
            todo.extend((c, False) for c in reversed(_guard_children(node)))
    return prog


def _run(prog: _Program, cls: int) -> int:
    """Evaluate a postfix guard on a class; the result is a code (0 unknown, 1 true, 2 false)."""
    stack: list[int] = []
    for op, arg in prog:
        if op == "a":
            stack.append(cls >> (2 * arg) & 3)
        elif op == "t":
            stack.append(TRUE)
        elif op == "n":
            stack.append(NOT3[stack.pop()])
        elif op == "u":
            stack.append(FALSE if stack.pop() == TRUE else TRUE)
        else:
            vals = stack[len(stack) - arg:]
            del stack[len(stack) - arg:]
            decisive, default = (FALSE, TRUE) if op == "&" else (TRUE, FALSE)
            stack.append(decisive if decisive in vals else UNKNOWN if UNKNOWN in vals else default)
    return stack[0]


def tri_state(tree: GuardTree, cls: int) -> bool | None:
    """3-valued value of ``tree`` on a class: True, False or None (unknown)."""
    code = _run(_postfix(tree), cls)
    return None if code == UNKNOWN else code == TRUE


def guard_fn(tree: GuardTree) -> Callable[[int], bool]:
    """Compile ``tree`` to a function of the class that holds iff the guard is TRUE."""
    if _depth(tree) > _MAX_SOURCE_DEPTH:
        prog = _postfix(tree)
        return lambda c: _run(prog, c) == TRUE
    fn: Callable[[int], bool] = eval(f"lambda c: bool({_guard_src(tree, False)})")
    return fn
