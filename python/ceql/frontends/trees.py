"""Lark parse trees, as the front ends read them: folded bottom-up without recursion (deep
queries must not hit Python's recursion limit), and the source span of a node or a token."""

from __future__ import annotations

from collections.abc import Callable

from lark import Token, Tree
from lark.tree import Meta

from ..ir.nodes import NO_SPAN, Span

__all__ = ["fold_tree", "meta_span", "token_span"]


def meta_span(meta: Meta) -> Span:
    """Where a tree node's text is (:data:`~ceql.ir.nodes.NO_SPAN` for an empty node)."""
    if getattr(meta, "empty", True):
        return NO_SPAN
    return Span(meta.line, meta.column, meta.end_line, meta.end_column, meta.start_pos,
                meta.end_pos)


def token_span(tok: Token) -> Span:
    """Where a token's text is."""
    return Span(tok.line or 0, tok.column or 0, tok.end_line or 0, tok.end_column or 0,
                tok.start_pos or 0, tok.end_pos or 0)


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
