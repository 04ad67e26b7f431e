"""Lark parse trees folded bottom-up without recursion (shared by the front ends: deep
queries must not hit Python's recursion limit)."""

from __future__ import annotations

from collections.abc import Callable

from lark import Token, Tree

__all__ = ["fold_tree"]


def fold_tree(tree: Tree[Token], handle: Callable[[Tree[Token], list[object]], object]
              ) -> object:
    """``handle(node, values)`` for every node of ``tree``, children first (a token's value is
    the token); the root's result."""
    out: list[object] = []
    todo: list[tuple[Tree[Token] | Token, bool]] = [(tree, False)]
    while todo:
        node, ready = todo.pop()
        if isinstance(node, Token):
            out.append(node)
        elif ready:
            n = len(node.children)
            args = out[len(out) - n:] if n else []
            del out[len(out) - n:]
            out.append(handle(node, args))
        else:
            todo.append((node, True))
            todo.extend((child, False) for child in reversed(node.children))
    return out[0]
