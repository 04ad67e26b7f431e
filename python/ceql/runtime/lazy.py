"""Lazy evaluation: feed the automaton only the rows of an Arrow batch that can be in a match.

The lazy-chain paper (Kolchinsky and Schuster) buffers frequent events and matches in ascending
order of frequency, so the rare event of a pattern decides whether the frequent ones are looked
at. Here the automaton stays CORE's; what is lazy is which rows reach it.

**The plan** (:func:`plan_lazy`, per query): the query's *mandatory elements* M1..Mk
(:mod:`ceql.automata.mandatory`: every match holds an event satisfying each) and a window
WITHIN ε in time or an attribute. A row ``r`` can be in a match only if, for every Mi, some row
satisfying Mi lies within ε of ``r`` (before or after): every event of a match lies in its
window, and so does every event a ``NOT β`` between two elements checks. Such rows are
*active*; the others are never fed (their positions still count: rows keep their own).
Only rows whose class can change some run are looked at (*relevant*: a marking guard holds, or
a gap's skip loop does not).

**Per batch** (:meth:`Lazy.select`): the elements are checked in ascending frequency observed
in the batch (the paper's tree variant: no frequencies given up front), each with a bisection
of the rows still active into the sorted window keys of the element's rows; it stops as soon as
no row is left. When more than :data:`EAGER_ABOVE` of the relevant rows would be fed, the batch
is fed whole and the next :data:`PROBE_EVERY` - 1 batches too (without computing regions);
so is a batch with fewer than one relevant row in :data:`SPARSE`. ``lazy=True`` computes
regions for every batch. Either way the rows that can be in a match reach the automaton, so
the choice never changes a result.

**Across batches**: per element the window key of its last row is remembered, so a row near
an element's row of an earlier batch is active. A row near the end of a batch may still get a
later element's row within ε. Such rows are *held* (as NumPy arrays: positions, classes, time
and window keys, partition values) and looked at again with the next batch, before its rows.
Holding is safe because only rows after the batch's last row that can *end* a match are held:
a match ending at ``j`` has, for each element, a row at or before ``j`` within ε
(``j`` is *backward-complete*), and a held row is after every backward-complete row, so no match
ends at or after it in this batch and no output is delayed; rows are still fed in stream order.
A held row whose window key is more than ε behind the batch's last one is dropped: its matches
would end at a row already seen after it, which would be backward-complete. So what is held is
bounded by the window. After rows went by unseen (fed whole, fed one by one, or before a
snapshot was restored), every element counts as seen at the next batch's first window key,
which is wider than the truth, never narrower. Feeding held rows early (:meth:`Lazy.release`,
before rows fed one by one or a snapshot) outputs nothing and is sound, since feeding more rows
always is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from ..automata import CEA
from ..automata.mandatory import Mandatory
from ..constants import STRATEGY_STRICT, WITHIN_EVENTS
from ..ir import has_contiguity, is_correlated_query, seq_elements, top_sequence
from ..ir import nodes as N
from ..predicates import guard_fn

__all__ = ["EAGER_ABOVE", "PROBE_EVERY", "SPARSE", "Lazy", "LazyPlan", "LazyReport", "Region",
           "Rows", "plan_lazy", "region"]

#: a batch of which lazy evaluation would feed more than this fraction of the rows that can
#: change a run is fed whole (eager evaluation skips the others at little cost; measured in
#: bench/lazy.py, regions pay for themselves well before 1/2, so the bar is high)
EAGER_ABOVE = 0.9
PROBE_EVERY = 8  #: after such a batch, regions are computed again only every this many batches
#: a batch with fewer rows that can change a run than 1 in this many is fed whole: eager
#: evaluation steps on few rows, and computing regions would cost about as much
SPARSE = 64
_CLASS_CACHE = 1 << 16  # classes whose element bits are cached (more: the cache starts over)


class LazyPlan(NamedTuple):
    """Whether lazy evaluation may run a query (``reason``: why not), and its mandatory
    elements."""

    eligible: bool
    reason: str
    elements: tuple[Mandatory, ...]


class LazyReport(NamedTuple):
    """What lazy evaluation did with the last Arrow batch (:meth:`ceql.Evaluator.lazy_report`).

    ``lazy``: rows were chosen (False: the batch was fed whole); ``order``: the mandatory
    elements by label as checked, rarest first (empty when not computed); ``counts``: their
    rows in the batch, same order; ``rows``: rows looked at (the batch's rows that take part
    and the rows held from before); ``relevant``: those whose class can change a run (what
    eager evaluation steps on at most; 0 when not computed); ``fed``: rows fed to the
    automaton; ``held``: rows held for the next batch.
    """

    lazy: bool
    order: tuple[str, ...]
    counts: tuple[int, ...]
    rows: int
    relevant: int
    fed: int
    held: int

    @property
    def active(self) -> float:
        """The fraction of the rows looked at that were fed."""
        return self.fed / self.rows if self.rows else 0.0


class Region(NamedTuple):
    """Rows to feed now and rows to hold (indices, ascending), and the order the elements
    were checked in."""

    feed: np.ndarray
    held: np.ndarray
    order: tuple[int, ...]


class Rows(NamedTuple):
    """Rows for the run stage: the unique classes, each row's index into them, positions,
    time keys, ``WITHIN n [attr]`` keys, partition columns and the rows of those to take."""

    classes: list[int]
    inv: np.ndarray
    positions: np.ndarray
    tkeys: np.ndarray | None
    wattr: np.ndarray | None
    pcols: list[pa.Array]
    take: np.ndarray


def plan_lazy(query: N.Query, cea: CEA) -> LazyPlan:
    """Whether lazy evaluation may run ``query`` (whose automaton is ``cea``), and why not."""
    def no(reason: str) -> LazyPlan:
        return LazyPlan(False, reason, cea.mandatory)

    w = query.within
    if is_correlated_query(query.where):
        return no("conditions between events (register runs read the rows of the batch)")
    if query.strategy not in ("ALL", "ANY"):
        what = "STRICT counts every event" if query.strategy == STRATEGY_STRICT else (
            "it compares complex events with each other")
        return no(f"SELECT {query.strategy}: {what}")
    if has_contiguity(query.where):
        return no("contiguity (':' or ':+') counts every event")
    if w is None:
        return no("no WITHIN: without a window every row may be in a match")
    if w.kind == WITHIN_EVENTS:
        return no("WITHIN n EVENTS counts every event")
    top = top_sequence(query.where)
    if top is not None:
        elems = seq_elements(top)
        if isinstance(elems[0][0], N.Not) or isinstance(elems[-1][0], N.Not):
            return no("a leading or trailing NOT")
    if not cea.mandatory:
        return no("no event condition that every match meets")
    if _loopless(cea):
        return no("an automaton state that cannot skip an event")
    return LazyPlan(True, "", cea.mandatory)


def _loopless(cea: CEA) -> bool:
    """True when a state other than the initial one has outgoing transitions but no skip
    loop, or an unmarked transition is not a loop (an event there is never irrelevant)."""
    moving = {t.src for t in cea.transitions if t.mark} - {cea.initial}
    loops = {t.src for t in cea.transitions if not t.mark and t.src == t.dst}
    return bool(moving - loops) or any(not t.mark and t.src != t.dst for t in cea.transitions)


def region(keys: np.ndarray, relevant: np.ndarray, members: Sequence[np.ndarray],
           before: Sequence[Any], eps: Any, horizon: Any) -> Region:
    """Which rows to feed and which to hold.

    ``keys``: the rows' window keys (non-decreasing); ``relevant``: rows whose class can change
    a run; ``members[i]``: relevant rows satisfying element ``i``; ``before[i]``: the window key
    of its last row before these (None: none); ``horizon``: the least key a later row can have.
    """
    counts = [int(np.count_nonzero(m)) for m in members]
    order = tuple(sorted(range(len(members)), key=counts.__getitem__))
    keys, e = _comparable(keys, eps)
    cand = np.flatnonzero(relevant)
    sorted_keys = [keys[m] for m in members]
    for i in order:  # rarest first: the fewest rows to find, and most rows dropped early
        if not cand.size:
            break
        x = keys[cand]
        k = sorted_keys[i]
        near = np.searchsorted(k, x + e, "right") > np.searchsorted(k, x - e, "left")
        if before[i] is not None:
            near |= x - before[i] <= e
        cand = cand[near | (x + e >= horizon)]  # a later row of the element may come
    if not cand.size:
        return Region(cand, cand, order)
    x = keys[cand]
    complete = np.ones(cand.size, dtype=bool)  # can end a match: every element within ε before
    for i in order:
        k = sorted_keys[i]
        back = np.searchsorted(k, x, "right") > np.searchsorted(k, x - e, "left")
        if before[i] is not None:
            back |= x - before[i] <= e
        complete &= back
    ends = np.flatnonzero(complete)
    cut = int(ends[-1]) + 1 if ends.size else 0
    rest = cand[cut:]
    return Region(cand[:cut], rest[keys[rest] + e >= horizon], order)


def _comparable(keys: np.ndarray, eps: Any) -> tuple[np.ndarray, Any]:
    """``keys`` as int64 or float64 and the bound to compare with: exact for integers, widened
    for floats so that rounding never makes a row inactive that the engine's
    ``end - start <= eps`` would keep."""
    if keys.dtype.kind in "iub" and isinstance(eps, int) and abs(eps) < 1 << 62:
        if keys.dtype.kind != "u" or (keys.size and int(keys[-1]) < 1 << 62):
            return keys.astype(np.int64, copy=False), eps
    f = keys.astype(np.float64, copy=False)
    try:
        e = float(eps)
    except OverflowError:  # an integer bound beyond the floats: every row is near
        return f, math.inf
    top = float(np.max(np.abs(f[[0, -1]]))) if f.size else 0.0
    if not math.isfinite(e) or not math.isfinite(top):
        return f, math.inf
    return f, e + abs(e) * 2.0 ** -40 + 4 * float(np.spacing(max(top, abs(e))))


class _Held(NamedTuple):
    """Rows held for the next batch: their distinct classes and each row's index into them,
    element bits, positions, time keys, ``[attr]`` keys, window keys, partition values."""

    classes: list[int]
    inv: np.ndarray
    bits: np.ndarray
    positions: np.ndarray
    tkeys: np.ndarray | None
    wattr: np.ndarray | None
    keys: np.ndarray
    pcols: list[pa.Array]


class Lazy:
    """The lazy-evaluation state of one evaluation: element bits per class, the last window
    key per element, the rows held for the next batch, the report of the last batch.

    ``force``: compute regions for every batch (``lazy=True``); else the planner may feed a
    batch whole (see the module).
    """

    __slots__ = ("_bits", "_elements", "_kills", "_marking", "_seen_to", "_skip", "force",
                 "held", "labels", "last", "report")

    def __init__(self, plan: LazyPlan, cea: CEA, force: bool) -> None:
        self._elements = [guard_fn(m.guard) for m in plan.elements]
        self.force = force
        self._marking = [guard_fn(g) for g in dict.fromkeys(
            t.guard for t in cea.transitions if t.mark)]
        loops: dict[int, list[Any]] = {}
        for t in cea.transitions:
            if not t.mark:
                loops.setdefault(t.src, []).append(t.guard)
        # per state with skip loops: the functions of its loops (an event none lets by changes
        # the run there: a NOT's event)
        self._kills = [[guard_fn(g) for g in dict.fromkeys(gs)] for gs in loops.values()]
        self._bits: dict[int, int] = {}
        self._seen_to = 0  # rows before this position were all looked at
        self._skip = 0  # batches still to feed whole before computing regions again
        #: per element, the window key of its last relevant row (None: none yet)
        self.last: list[Any] = [None] * len(plan.elements)
        self.held: _Held | None = None
        self.report: LazyReport | None = None
        #: the elements' labels (``a``, ``x OR y``)
        self.labels = tuple(m.label for m in plan.elements)

    def _class_bits(self, c: int) -> int:
        """Bit 0: the class is relevant; bit ``i + 1``: it satisfies element ``i``."""
        b = self._bits.get(c)
        if b is None:
            rel = any(f(c) for f in self._marking) or any(
                not any(f(c) for f in fs) for fs in self._kills)
            b = int(rel)
            for i, f in enumerate(self._elements):
                if f(c):
                    b |= 2 << i
            if len(self._bits) >= _CLASS_CACHE:
                self._bits = {}
            self._bits[c] = b
        return b

    def oldest_held(self) -> int | None:
        """The position of the first row held (None: none)."""
        h = self.held
        return int(h.positions[0]) if h is not None and h.positions.size else None

    def release(self) -> Rows | None:
        """The held rows, to feed now (before rows fed one by one, or a snapshot)."""
        h = self.held
        self.held = None
        if h is None:
            return None
        return Rows(h.classes, h.inv, h.positions, h.tkeys, h.wattr, h.pcols,
                    np.arange(h.inv.size, dtype=np.int64))

    def select(self, eps: Any, rows: Rows, base: int, end: int) -> Rows | None:
        """The rows of the batch of positions ``base`` to ``end`` - 1 (``rows``: those that
        take part, ``take`` their rows in the batch) to feed, with the held ones before them;
        None: feed the batch as it is."""
        n = int(rows.inv.size)
        blind = base != self._seen_to  # rows went by unseen (fed one by one, or restored)
        self._seen_to = end
        keys_b = rows.wattr if rows.wattr is not None else rows.tkeys
        if eps is None or keys_b is None or not n:
            return self._whole(rows)
        table = np.fromiter((self._class_bits(c) for c in rows.classes), dtype=np.int64,
                            count=len(rows.classes))
        bits = table[rows.inv]
        h = self.held
        keys = keys_b if h is None else np.concatenate((h.keys, keys_b))
        if h is not None:
            bits = np.concatenate((h.bits, bits))
        relevant = (bits & 1).astype(bool)
        total = int(keys.size)
        n_relevant = int(np.count_nonzero(relevant))
        if not self.force and (self._skip or n_relevant * SPARSE < total):
            self._skip = max(self._skip - 1, 0)
            self._seen_to = -1  # the next batch assumes every element near its start
            return self._whole(rows, n_relevant)
        if blind:
            first = keys_b[0].item()
            self.last = [first if v is None else max(v, first) for v in self.last]
        members = [relevant & (bits & (2 << i)).astype(bool) for i in range(len(self.last))]
        before = list(self.last)
        for i, m in enumerate(members):
            hits = np.flatnonzero(m)
            if hits.size:
                v = keys[hits[-1]].item()
                self.last[i] = v if before[i] is None else max(before[i], v)
        r = region(keys, relevant, members, before, eps, keys[-1].item())
        labels = self.labels
        counts = [int(np.count_nonzero(m)) for m in members]
        if not self.force and r.feed.size > EAGER_ABOVE * n_relevant:
            self._skip = PROBE_EVERY - 1
            out = self._whole(rows)
            self.report = LazyReport(False, tuple(labels[i] for i in r.order),
                                     tuple(counts[i] for i in r.order), total, n_relevant,
                                     total, 0)
            return out
        combined = self._combined(rows)
        self.held = None
        if r.held.size:
            used, hinv = np.unique(combined.inv[r.held], return_inverse=True)
            self.held = _Held([combined.classes[k] for k in used.tolist()],
                              hinv.reshape(-1).astype(np.int64), bits[r.held],
                              combined.positions[r.held],
                              _at(combined.tkeys, r.held), _at(combined.wattr, r.held),
                              keys[r.held], _take(combined, r.held))
        self.report = LazyReport(True, tuple(labels[i] for i in r.order),
                                 tuple(counts[i] for i in r.order), total, n_relevant,
                                 int(r.feed.size), int(r.held.size))
        f = r.feed
        return Rows(combined.classes, combined.inv[f], combined.positions[f],
                    _at(combined.tkeys, f), _at(combined.wattr, f), _take(combined, f),
                    np.arange(f.size, dtype=np.int64))

    def _whole(self, rows: Rows, relevant: int = 0) -> Rows | None:
        """Feed everything: the held rows, then the batch (None when nothing is held);
        ``relevant``: how many of them can change a run (0: not counted)."""
        n = int(rows.inv.size)
        h = self.held
        rows_in = n + (0 if h is None else int(h.inv.size))
        self.report = LazyReport(False, (), (), rows_in, relevant, rows_in, 0)
        if h is None:
            return None
        c = self._combined(rows)
        self.held = None
        return Rows(c.classes, c.inv, c.positions, c.tkeys, c.wattr, _take(c, None),
                    np.arange(c.inv.size, dtype=np.int64))

    def _combined(self, rows: Rows) -> _Both:
        """The held rows followed by the batch's, as one set of arrays."""
        h = self.held
        if h is None:
            return _Both(rows.classes, rows.inv, rows.positions, rows.tkeys, rows.wattr,
                         [], rows.pcols, rows.take)
        classes = list(rows.classes)
        at = {c: k for k, c in enumerate(classes)}
        remap = np.empty(len(h.classes), dtype=np.int64)
        for k, c in enumerate(h.classes):
            if c not in at:
                at[c] = len(classes)
                classes.append(c)
            remap[k] = at[c]
        hinv = remap[h.inv]
        return _Both(classes, np.concatenate((hinv, rows.inv.astype(np.int64, copy=False))),
                     np.concatenate((h.positions, rows.positions)),
                     _joined(h.tkeys, rows.tkeys), _joined(h.wattr, rows.wattr),
                     h.pcols, rows.pcols, rows.take)


class _Both(NamedTuple):
    """Held rows (``held_pcols``: their partition values) followed by a batch's rows
    (``pcols`` are the batch's columns, ``take`` the rows of them)."""

    classes: list[int]
    inv: np.ndarray
    positions: np.ndarray
    tkeys: np.ndarray | None
    wattr: np.ndarray | None
    held_pcols: list[pa.Array]
    pcols: list[pa.Array]
    take: np.ndarray


def _at(a: np.ndarray | None, sel: np.ndarray) -> np.ndarray | None:
    return None if a is None else a[sel]


def _joined(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    return None if a is None or b is None else np.concatenate((a, b))


def _take(both: _Both, sel: np.ndarray | None) -> list[pa.Array]:
    """The partition values of rows ``sel`` of ``both`` (None: all), one array per column."""
    m = len(both.held_pcols[0]) if both.held_pcols else 0
    out = []
    for k, col in enumerate(both.pcols):
        if sel is None:
            mine, theirs = np.arange(m), both.take
        else:
            mine, theirs = sel[sel < m], both.take[sel[sel >= m] - m]
        part = col.take(pa.array(theirs))
        if both.held_pcols:
            part = _concat(both.held_pcols[k].take(pa.array(mine)), part)
        out.append(part)
    return out


def _concat(a: pa.Array, b: pa.Array) -> pa.Array:
    """Two arrays of partition values as one (a batch may type a column differently)."""
    if a.type != b.type:
        try:
            b = b.cast(a.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return pa.array(a.to_pylist() + b.to_pylist())
    return pa.concat_arrays([a, b])
