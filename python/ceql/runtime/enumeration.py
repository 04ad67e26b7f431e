"""Enumeration: the complex events below the accepting tECS nodes of one event, as matches.

A depth-first walk below each accepting node (left before right, as
:func:`~ceql.runtime.tecs.enumerate_node`), carrying the positions and labels met so far as
tuples (latest last), so a match costs its bottom node and one object; union branches that start
outside the window are not entered (output-linear delay). LIMIT caps the matches per end
position; matches come in chunks so a consumer can stop early.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .match import Ending, Match
from .partitions import Partition
from .tecs import KIND_POS, LABEL, LEFT, MAX_START_KEY, NEXT, RIGHT, Node
from .times import Clock

__all__ = ["CHUNK", "Enumerator"]

CHUNK = 2048  #: matches enumerated ahead of the consumer
_new = object.__new__


class Enumerator:
    """Turns accepting nodes into :class:`~ceql.Match` objects (window and LIMIT applied)."""

    __slots__ = ("clock", "eps", "limit")

    def __init__(self, clock: Clock, eps: Any, limit: int | None) -> None:
        self.clock = clock
        self.eps = eps
        self.limit = limit

    def emit(self, P: Partition, accs: list[Node], pos: int, wkey: Any,
             tkey: Any) -> Iterator[list[Match]]:
        """The complex events ending at ``pos``, in chunks of at most :data:`CHUNK`."""
        eps = self.eps if self.eps is not None else float("inf")
        limit = self.limit if self.limit is not None else -1
        if limit == 0:
            return
        clock = self.clock
        end: Ending
        if clock.is_ts:
            end = (pos, clock.value(tkey), P.key, clock.form())
        else:
            end = (pos, tkey, P.key, None)
        new = _new
        M = Match
        out: list[Match] = []
        append = out.append
        left = limit  # matches still allowed (-1: no LIMIT)
        cap = CHUNK if left < 0 else min(CHUNK, left)
        stack: list[tuple[Node, tuple[int, ...], tuple[frozenset[str], ...]]] = []
        push = stack.append
        pop = stack.pop
        for node in accs:
            push((node, (), ()))
            while stack:
                n, ps, ls = pop()
                while True:
                    if n[KIND_POS] < 0:  # union: the right side only if it starts in the window
                        r = n[RIGHT]
                        n = n[LEFT]
                        if r is not None and wkey - r[MAX_START_KEY] <= eps:
                            if n[KIND_POS] >= 0:  # left a bottom or output: finish it, go right
                                b = n[NEXT]
                                if b is None:
                                    b = n
                                    pl = ps
                                    ll = ls
                                elif b[NEXT] is None:
                                    pl = (n[KIND_POS],) + ps  # noqa: RUF005 (faster)
                                    ll = (n[LABEL],) + ls  # noqa: RUF005
                                else:
                                    push((r, ps, ls))
                                    continue
                                m = new(M)
                                m._start = b
                                m._end = end
                                m.positions = pl
                                m._labels = ll
                                append(m)
                                n = r
                            else:
                                push((r, ps, ls))
                    elif n[NEXT] is None:  # bottom: one complex event
                        m = new(M)
                        m._start = n
                        m._end = end
                        m.positions = ps
                        m._labels = ls
                        append(m)
                        break
                    else:  # output: its position and label go before those seen so far
                        ps = (n[KIND_POS],) + ps  # noqa: RUF005 (faster than unpacking)
                        ls = (n[LABEL],) + ls  # noqa: RUF005
                        n = n[NEXT]
                if len(out) >= cap:
                    if left >= 0:
                        if len(out) >= left:
                            del out[left:]
                            yield out
                            return
                        left -= len(out)
                        cap = min(CHUNK, left)
                    yield out
                    out = []
                    append = out.append
        if out:
            yield out
