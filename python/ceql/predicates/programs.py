"""Deep expressions as postfix programs run on an explicit stack.

The row and column paths compile an expression to nested closures, one call per level. Beyond
:data:`MAX_CLOSURE_DEPTH` levels (``x + x + ... + x``, ``- - - x``) those calls would overflow
Python's stack at run time, so such an expression runs as a postfix program instead: the same
operations, in the same order, on a stack.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..ir import depth
from ..ir import nodes as _ast

__all__ = ["MAX_CLOSURE_DEPTH", "is_deep", "stack_program"]

#: The deepest expression compiled to nested closures; deeper ones become stack programs.
MAX_CLOSURE_DEPTH = 64

X = TypeVar("X")
V = TypeVar("V")

_LEAF, _NEG, _ARITH = 0, 1, 2


def is_deep(e: _ast.Expr) -> bool:
    """True when ``e`` nests too deeply for nested closures."""
    return depth(e) > MAX_CLOSURE_DEPTH


def stack_program(root: _ast.Expr, leaf: Callable[[_ast.Expr], Callable[[X], V] | None],
                  neg: Callable[[V], V],
                  arith: Callable[[str, V, V], V]) -> Callable[[X], V]:
    """``root`` as a function of ``X``: ``leaf(node)`` gives a node's function (None: not a
    leaf, look inside); ``neg`` and ``arith(op, left, right)`` combine operand values."""
    prog: list[tuple[int, Any]] = []
    todo: list[tuple[_ast.Expr, bool]] = [(root, False)]
    while todo:
        node, ready = todo.pop()
        if ready:
            prog.append((_ARITH, node.op) if isinstance(node, _ast.Arith) else (_NEG, None))
            continue
        fn = leaf(node)
        if fn is not None:
            prog.append((_LEAF, fn))
        elif isinstance(node, _ast.Neg):
            todo += [(node, True), (node.operand, False)]
        elif isinstance(node, _ast.Arith):
            todo += [(node, True), (node.right, False), (node.left, False)]
        else:
            raise TypeError(f"not an expression: {node!r}")

    def run(x: X) -> V:
        stack: list[V] = []
        push, pop = stack.append, stack.pop
        for kind, arg in prog:
            if kind == _LEAF:
                push(arg(x))
            elif kind == _NEG:
                push(neg(pop()))
            else:
                right = pop()
                push(arith(arg, pop(), right))
        return stack[0]
    return run
