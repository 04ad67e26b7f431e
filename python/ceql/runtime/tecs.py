"""The timed enumerable compact set (tECS) of the CORE paper, Section 4.1–4.2.

Nodes are plain sequences, for speed (a node is created per event that moves a run); the
field indices are named below:

* bottom ``(mx, mt, pos, None, time)``: an open complex event starting at ``pos``;
* output ``(mx, mt, pos, next, label)``: ``pos`` is in the complex event, ``label`` the
  frozenset of variables that bind it;
* union ``[mx, mt, -1, left, right]`` (a list: ``right`` is cut to ``None`` once everything
  under it has left the time window, so expired nodes are freed).

``mx`` (:data:`MAX_START`) is the node's maximum start as a substream position (orders
union-lists), ``mt`` (:data:`MAX_START_KEY`) the window key (time, position or attribute) of
that start. Union nodes keep
``max(left) >= max(right)`` (time-ordered) and output-depth at most 3 (the paper's gadgets), so
enumeration has output-linear delay.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any

__all__ = [
    "KIND_POS",
    "LABEL",
    "LEFT",
    "MAX_START",
    "MAX_START_KEY",
    "NEXT",
    "RIGHT",
    "START_TIME",
    "enumerate_node",
    "insert",
    "merge",
    "union",
]

MAX_START = 0  #: every node: the latest start (substream position) below it
MAX_START_KEY = 1  #: every node: the window key of that start
KIND_POS = 2  #: bottom/output: the event's position; union: -1
NEXT = 3  #: output: the node below; bottom: None (what tells a bottom from an output)
LABEL = 4  #: output: the variables binding the event
START_TIME = 4  #: bottom: the time key of the start, for ``Match.start_time``
LEFT = 3  #: union: the left child (max start >= the right child's)
RIGHT = 4  #: union: the right child, or None once it left the window

Node = Any  # tuple | list, see module docstring
Fifo = deque[tuple[Any, list[Any]]]


def _u(left: Node, right: Node, fifo: Fifo | None, tc: Any) -> list[Any]:
    u = [left[0], left[1], -1, left, right]
    if fifo is not None:
        fifo.append((tc, u))
    return u


def _solid(n: Node) -> Node:
    """A union whose right side was cut stands for its left child."""
    return n[3] if n[2] < 0 and n[4] is None else n


def union(n1: Node, n2: Node, fifo: Fifo | None, tc: Any) -> Node:
    """A safe node representing both ``n1`` and ``n2`` (safe, with equal max-start)."""
    n1 = _solid(n1)
    n2 = _solid(n2)
    if n1[2] >= 0:
        return _u(n1, n2, fifo, tc)
    if n2[2] >= 0:
        return _u(n2, n1, fifo, tc)
    r1 = _solid(n1[4])
    r2 = _solid(n2[4])
    if r1[0] >= r2[0]:
        u2 = _u(r1, r2, fifo, tc)
    else:
        u2 = _u(r2, r1, fifo, tc)
    return _u(n1[3], _u(n2[3], u2, fifo, tc), fifo, tc)


def merge(ul: list[Node], fifo: Fifo | None, tc: Any) -> Node:
    """One safe node for a whole union-list."""
    k = len(ul)
    if k == 1:
        return ul[0]
    acc = ul[k - 1]
    for i in range(k - 2, -1, -1):
        acc = _u(ul[i], acc, fifo, tc)
    return acc


def insert(ul: list[Node], n: Node, fifo: Fifo | None, tc: Any) -> None:
    """Insert safe ``n`` (max-start at most that of ``ul[0]``) keeping the list sorted."""
    mx = n[0]
    for i in range(1, len(ul)):
        m = ul[i][0]
        if m == mx:
            ul[i] = union(ul[i], n, fifo, tc)
            return
        if m < mx:
            ul.insert(i, n)
            return
    ul.append(n)


def enumerate_node(node: Node, key: Any, eps: Any) -> Iterator[tuple[Node, list[Node]]]:
    """Yield ``(bottom, outputs)`` for every open complex event under ``node`` that starts
    within the window (``key - start_key <= eps``); ``outputs`` are the output nodes, latest
    first. The caller checks ``node`` itself against the window first."""
    path: list[Node] = []
    stack: list[tuple[Node, int]] = [(node, 0)]
    while stack:
        n, depth = stack.pop()
        del path[depth:]
        while True:
            if n[2] < 0:
                r = n[4]
                if r is not None and key - r[1] <= eps:
                    stack.append((r, len(path)))
                n = n[3]
            elif n[3] is None:
                yield n, path
                break
            else:
                path.append(n)
                n = n[3]
