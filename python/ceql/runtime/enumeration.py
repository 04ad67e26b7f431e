"""Enumeration: the complex events below the accepting tECS nodes of one event, as matches.

A depth-first walk below each accepting node (left before right, as
:func:`~ceql.runtime.tecs.enumerate_node`), carrying the positions and labels met so far as
tuples (latest last), so a match costs its bottom node and one object; union branches that start
outside the window are not entered (output-linear delay). LIMIT caps the matches per end
position, and the walk stops as soon as it has them (a chunk is full after the match that fills
it, even in the middle of a spine of unions), so LIMIT n costs n matches, not every match;
matches come in chunks so a consumer can stop early.

Prepending to a tuple copies it, so a long match would cost the square of its length: the walk
prepends to tuples of at most :data:`RUN` entries and sets full ones aside in a linked list
(shared between branches, like the tuples), which a match joins once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .match import Ending, Match
from .partitions import Partition
from .tecs import KIND_POS, LABEL, LEFT, MAX_START_KEY, NEXT, RIGHT, Node
from .times import Clock

__all__ = ["CHUNK", "RUN", "Enumerator"]

CHUNK = 2048  #: matches enumerated ahead of the consumer
RUN = 64  #: the longest tuple of positions built by prepending; longer ones are joined once
_new = object.__new__

# Full runs set aside: (positions, labels, the runs after them in the stream) or None.
_Runs = tuple[tuple[int, ...], tuple[frozenset[str], ...], Any] | None


def _joined(ps: tuple[int, ...], ls: tuple[frozenset[str], ...],
            runs: _Runs) -> tuple[tuple[int, ...], tuple[frozenset[str], ...]]:
    """``ps``/``ls`` followed by the runs set aside, as two tuples (linear in their length)."""
    pos = list(ps)
    lab = list(ls)
    while runs is not None:
        rp, rl, runs = runs
        pos += rp
        lab += rl
    return tuple(pos), tuple(lab)


class Enumerator:
    """Turns accepting nodes into :class:`~ceql.Match` objects (window and LIMIT applied)."""

    __slots__ = ("clock", "eps", "key_len", "limit")

    def __init__(self, clock: Clock, eps: Any, limit: int | None) -> None:
        self.clock = clock
        self.eps = eps
        self.limit = limit
        #: how much of a partition's key matches report (None: all of it); an implied key,
        #: appended to the written one, is not reported
        self.key_len: int | None = None

    def emit(self, P: Partition, accs: list[Node], pos: int, wkey: Any,
             tkey: Any) -> Iterator[Sequence[Match]]:
        """The complex events ending at ``pos``, in chunks of at most :data:`CHUNK`."""
        return self.walk(P, accs, pos, wkey, tkey, self.limit)

    def walk(self, P: Partition, accs: list[Node], pos: int, wkey: Any, tkey: Any,
             limit_n: int | None) -> Iterator[Sequence[Match]]:
        """:meth:`emit` with at most ``limit_n`` matches (None: all)."""
        eps = self.eps if self.eps is not None else float("inf")
        limit = limit_n if limit_n is not None else -1
        if limit == 0:
            return
        clock = self.clock
        key = P.key if self.key_len is None else P.key[:self.key_len]
        end: Ending
        if clock.is_ts:
            end = (pos, clock.value(tkey), key, clock.form(), True)
        else:
            end = (pos, tkey, key, None, clock.time is not None)
        new = _new
        M = Match
        out: list[Match] = []
        append = out.append
        left = limit  # matches still allowed (-1: no LIMIT)
        cap = CHUNK if left < 0 else min(CHUNK, left)
        stack: list[tuple[Node, tuple[int, ...], tuple[frozenset[str], ...], _Runs]] = []
        push = stack.append
        pop = stack.pop
        run = RUN
        for node in accs:
            push((node, (), (), None))
            while stack:
                n, ps, ls, runs = pop()
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
                                    push((r, ps, ls, runs))
                                    continue
                                if runs is not None:
                                    pl, ll = _joined(pl, ll, runs)
                                m = new(M)
                                m._start = b
                                m._end = end
                                m.positions = pl
                                m._labels = ll
                                append(m)
                                if len(out) >= cap:  # a chunk (or LIMIT) is full: r later
                                    push((r, ps, ls, runs))
                                    break
                                n = r
                            else:
                                push((r, ps, ls, runs))
                    elif n[NEXT] is None:  # bottom: one complex event
                        if runs is not None:
                            ps, ls = _joined(ps, ls, runs)
                        m = new(M)
                        m._start = n
                        m._end = end
                        m.positions = ps
                        m._labels = ls
                        append(m)
                        break
                    else:  # output: its position and label go before those seen so far
                        if len(ps) == run:
                            runs = (ps, ls, runs)
                            ps = ()
                            ls = ()
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
