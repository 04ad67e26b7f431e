"""How far DEFINE and MEASURES read outside the rows of a match: ``PREV(x, k)`` reads k rows
before the row it starts from, ``NEXT(x, k)`` k rows after; ``FIRST``/``LAST``, aggregates and
columns read rows of the match only. The incremental evaluator keeps that many rows before the
earliest open match and waits for that many rows before deciding one."""

from __future__ import annotations

from collections.abc import Iterable

from ..frontends.mr import ast as A

__all__ = ["reach"]


def _reach(e: A.Expr) -> tuple[int, int]:
    """(rows before, rows after) the row ``e`` starts from that it may read, iteratively
    (children first)."""
    order = A.walk(e)  # pre-order: every node before its children
    got: dict[int, tuple[int, int]] = {}
    for node in reversed(order):
        back = ahead = 0
        for child in A.children(node):
            b, a = got[id(child)]
            back, ahead = max(back, b), max(ahead, a)
        if isinstance(node, A.Navigation) and node.kind == "PREV":
            back += node.offset
        elif isinstance(node, A.Navigation) and node.kind == "NEXT":
            ahead += node.offset
        got[id(node)] = (back, ahead)
    return got[id(e)]


def reach(exprs: Iterable[A.Expr]) -> tuple[int, int]:
    """The most rows before and after its row (or its match) any of ``exprs`` reads."""
    back = ahead = 0
    for e in exprs:
        b, a = _reach(e)
        back, ahead = max(back, b), max(ahead, a)
    return back, ahead
