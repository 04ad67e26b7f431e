"""The named walks over the IR, written once and used by every stage.

All walks are iterative, so a query nested thousands of levels deep cannot overflow the stack.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Iterator

from . import nodes as N

__all__ = [
    "MAX_DEPTH",
    "bound_variables",
    "depth",
    "filter_atoms",
    "formula_nodes",
    "has_contiguity",
    "recursion_for",
]

MAX_DEPTH = 2000
"""The deepest query (in IR levels) ceql compiles; deeper ones are refused at compile time."""


def formula_nodes(root: N.Formula) -> Iterator[N.Formula]:
    """Every formula node below ``root`` (included), in source order."""
    todo: list[N.Formula] = [root]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, N.Seq | N.Or):
            todo.extend((node.right, node.left))
        elif isinstance(node, N.As | N.Plus | N.Filter):
            todo.append(node.formula)


def bound_variables(root: N.Formula) -> set[str]:
    """Variables bound by ``root``: every ``AS`` name and every event type."""
    names: set[str] = set()
    for node in formula_nodes(root):
        if isinstance(node, N.EventType):
            names.add(node.name)
        elif isinstance(node, N.As):
            names.add(node.var)
    return names


def filter_atoms(cond: N.FilterExpr) -> Iterator[N.FilterAtom]:
    """The ``X[P]`` atoms of a FILTER condition, in source order."""
    todo: list[N.FilterExpr] = [cond]
    while todo:
        node = todo.pop()
        if isinstance(node, N.FilterAtom):
            yield node
        else:
            todo.extend((node.right, node.left))


def has_contiguity(root: N.Formula) -> bool:
    """True when ``root`` uses ``:`` or ``:+`` anywhere."""
    return any(isinstance(node, N.Seq | N.Plus) and node.contiguous
               for node in formula_nodes(root))


def depth(node: object) -> int:
    """How deeply the IR below ``node`` nests (formulas, conditions and expressions)."""
    deepest = 0
    todo: list[tuple[object, int]] = [(node, 1)]
    while todo:
        n, d = todo.pop()
        deepest = max(deepest, d)
        if dataclasses.is_dataclass(n):
            for f in dataclasses.fields(n):
                v = getattr(n, f.name)
                if dataclasses.is_dataclass(v):
                    todo.append((v, d + 1))
                elif isinstance(v, tuple):
                    todo += [(x, d + 1) for x in v if dataclasses.is_dataclass(x)]
    return deepest


@contextlib.contextmanager
def recursion_for(levels: int) -> Iterator[None]:
    """Let recursive passes (dataclass hashing, guard construction) handle ``levels`` levels."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 4 * levels + 1000))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)
