"""Partitions: the per-key state of an evaluation, created lazily and dropped when expired.

Without PARTITION BY there is one partition, keyed ``()``. CONSUME BY ANY empties every
partition at once; instead of visiting them all, it bumps :attr:`Partitions.epoch`, and a
partition whose own epoch is older is emptied the next time it is touched.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any

from .tecs import KIND_POS, LEFT, MAX_START_KEY, NEXT, RIGHT, Fifo, Node

__all__ = ["NAN", "Partition", "Partitions", "canonical_key"]

#: The one NaN object partition keys hold: SQL groups NaN with NaN (as Spark does), while
#: Python compares distinct NaN objects unequal, so each NaN of a key is replaced by this one.
NAN = float("nan")


def _is_nan(v: object) -> bool:
    try:
        return bool(v != v)  # NaN of float, NumPy or Decimal (NaT too)
    except (TypeError, ValueError):  # pandas' NA has no truth value: a value like any other
        return False


def canonical_key(key: tuple[Any, ...], nan_null: tuple[bool, ...] = ()
                  ) -> tuple[Any, ...] | None:
    """``key`` with each NaN replaced by :data:`NAN` (the same tuple when it holds none), or
    None when a NaN sits where ``nan_null`` is true (an implied key, which stands for an
    equality that NaN fails: see :mod:`ceql.analysis.keys`)."""
    if not any(_is_nan(v) for v in key):
        return key
    if any(nan_null[i] for i, v in enumerate(key) if i < len(nan_null) and _is_nan(v)):
        return None
    return tuple(NAN if _is_nan(v) else v for v in key)


class Partition:
    """The state of one partition's evaluation.

    ``states`` maps each active deterministic state to its union-list of tECS nodes (sorted
    by max start, latest first); ``g`` is the strategy's global state; ``n`` counts the
    partition's events (substream positions); ``fifo`` lists union nodes by creation key so
    expired right branches can be cut (windowed queries only); ``sig`` caches
    ``(g, frozenset(states))`` for the inertness tables.
    """

    __slots__ = ("aux", "epoch", "fifo", "g", "key", "n", "sig", "states")

    def __init__(self, key: tuple[Any, ...], g: int, windowed: bool, epoch: int) -> None:
        self.key = key
        #: a runtime's own index over ``states`` (register runs by state and value); it
        #: notices when ``states`` was replaced, and rebuilds
        self.aux: Any = None
        self.states: dict[int, list[Node]] = {}
        self.g = g
        self.n = 0
        self.sig: tuple[int, frozenset[int]] | None = None
        self.fifo: Fifo | None = deque() if windowed else None
        self.epoch = epoch

    def signature(self) -> tuple[int, frozenset[int]]:
        """``(g, active states)``: what decides which event classes leave this partition be."""
        s = self.sig
        if s is None:
            s = self.sig = (self.g, frozenset(self.states))
        return s

    def catch_up(self, epoch: int) -> None:
        """Empty the partition if CONSUME BY ANY fired elsewhere since it was last touched."""
        if self.epoch != epoch:
            self.states = {}
            self.epoch = epoch
            self.sig = None
            if self.fifo:
                self.fifo.clear()  # nothing in it is reachable any more


class Partitions:
    """Every live partition, by key, with the CONSUME BY ANY epoch."""

    __slots__ = ("by_key", "epoch", "g0", "nan_null", "nan_seen", "windowed")

    def __init__(self, g0: int, windowed: bool, nan_null: tuple[bool, ...] = ()) -> None:
        self.by_key: dict[tuple[Any, ...], Partition] = {}
        self.epoch = 0
        self.g0 = g0
        self.windowed = windowed
        #: per key attribute: whether a NaN there puts the event in no partition (see
        #: :func:`canonical_key`)
        self.nan_null = nan_null
        #: a key holding NaN was met: a missed lookup may be a NaN of another object
        self.nan_seen = False

    def __len__(self) -> int:
        return len(self.by_key)

    def __iter__(self) -> Iterator[Partition]:
        return iter(self.by_key.values())

    def canonical(self, key: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """``key`` as partitions are keyed (NaN equals NaN), None if it names none."""
        return canonical_key(key, self.nan_null)

    def get(self, key: tuple[Any, ...]) -> Partition:
        """The partition of ``key``, created on first use. ``key`` is canonical: as
        :meth:`canonical` or :func:`canonical_key` returned it (each NaN is :data:`NAN`)."""
        P = self.by_key.get(key)
        if P is None:
            if not self.nan_seen:
                for v in key:
                    if v is NAN:
                        self.nan_seen = True
            P = Partition(key, self.g0, self.windowed, self.epoch)
            self.by_key[key] = P
        return P

    def sweep(self, now_key: Any, eps: Any, timewise: bool) -> int:
        """Drop partitions with nothing left that could ever output; return how many were kept
        for their strategy state alone (time will not drop them).

        A partition whose strategy state is initial and whose runs all started more than
        ``eps`` before the next event's window key — ``now_key`` when the window is measured
        in time or an attribute (``timewise``), the partition's own count for ``n EVENTS`` —
        or were emptied by CONSUME BY ANY, starts over exactly as a new one would (only
        differences of substream positions within a partition matter).
        """
        g0 = self.g0
        epoch = self.epoch
        dead = []
        held = 0
        for k, P in self.by_key.items():
            if P.g != g0:
                held += 1
                continue
            if P.epoch != epoch:
                P.catch_up(epoch)
            if P.states and eps is not None:
                now = now_key if timewise else P.n
                if all(now - ul[0][MAX_START_KEY] > eps for ul in P.states.values()):
                    P.states = {}
            if not P.states:
                dead.append(k)
        for k in dead:
            del self.by_key[k]
        return held

    def oldest_start(self, floor: int) -> tuple[int | None, int]:
        """The earliest position at which a run below some union-list started (None: no run),
        and how many partitions and nodes were visited to find it.

        Walks the live tECS, oldest union-list entries and right (older) branches first; it
        stops at a bottom at ``floor`` or before, a bound the caller knows nothing beats.
        """
        best: int | None = None
        seen: set[int] = set()  # ids: every node visited stays reachable during the walk
        stack: list[Node] = []
        visited = 0
        for P in self.by_key.values():
            visited += 1
            if P.epoch != self.epoch:
                continue  # emptied by CONSUME BY ANY
            for ul in P.states.values():
                stack.extend(ul)
                while stack:
                    n = stack.pop()
                    while id(n) not in seen:
                        seen.add(id(n))
                        visited += 1
                        if n[KIND_POS] < 0:  # union: the right (older starts) first
                            if n[RIGHT] is not None:
                                stack.append(n[LEFT])
                                n = n[RIGHT]
                            else:
                                n = n[LEFT]
                        elif n[NEXT] is not None:  # output
                            n = n[NEXT]
                        else:  # bottom: where its run started
                            if best is None or n[KIND_POS] < best:
                                best = n[KIND_POS]
                                if best <= floor:
                                    return best, visited
                            break
        return best, visited

    def states_in_use(self) -> tuple[set[int], set[int]]:
        """The deterministic states and global states some partition holds."""
        states: set[int] = set()
        globals_: set[int] = {self.g0}
        for P in self.by_key.values():
            states.update(P.states)  # stale ones too: a signature may still name them
            globals_.add(P.g)
        return states, globals_
