"""Chains with ``;`` evaluated on whole columns, as a join: a base engine for queries whose
pattern is a chain of single events joined by ``;`` and ``:``, with conditions between its
events, a WITHIN, and every complex event kept (:func:`~ceql.runtime.dense_plan.join_plan`
says which qualify).

A complex event of such a chain is one row per element, in stream order within one substream
(``:``: the next row of the substream), the last no later than the window after the first,
each row passing its element's guard and the conditions between elements holding. Per Arrow
batch (rows fed one by one are gathered into batches of up to :data:`ROWS`), the matches
ending at the batch's rows are found backwards: the rows that can be the last element are the
partial chains; for each element before it, from the last to the first, each partial chain is
extended by every row that can be that element, lies before the element after it (``:``: is
the row just before it in the substream) and within the window of the end, and has the keys
of the partial chain — its partition, and the values of equalities with elements already
bound (``c[src = b.dst]``: a hash join). Each element's rows are sorted by those keys once,
so the extensions of all partial chains are found by one vectorized binary search; then the
conditions that read only bound elements decide on the extended chains
(:func:`~ceql.runtime.candidates.cond_mask`: array comparisons where they compare numbers,
else value by value as the register runtime decides). A batch costs time linear in those
candidates — the chains the guards, partitions, equalities, order and window allow — and in
its output, with a logarithmic factor for the searches; candidates are extended in slices of
at most :data:`SLICE` so that memory stays bounded.

State: the rows that can be an element before the last and lie within the window of the
newest row (for a window in events or a ``:``, with their substream positions, and per
partition the next position), with their time and window keys, elements, partition and the
values the conditions read; plain data in snapshots.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..constants import CONSUME_ANY, CONSUME_NONE, WITHIN_EVENTS
from ..errors import CeqlInputError
from ..ir import nodes as N
from ..predicates.values import K_BOOL, K_NUM, K_STR, kind, norm
from .candidates import EXACT, Columns, cond_mask, matches_of
from .dense_plan import ChainPlan, Cond
from .engine import NO_TAPS, HoldsNothingBack, Taps
from .enumeration import CHUNK
from .feeds import chain_rows, factorize, read_batch
from .match import Match
from .partitions import canonical_key
from .state import Core, Evaluation

__all__ = ["ROWS", "SLICE", "JoinEngine"]

ROWS = 65_536  #: rows fed one by one are evaluated in batches of at most this many
SLICE = 1 << 21  #: partial chains extended at a time, at most (memory stays bounded)
_BIG = 2 ** 62  # integer keys below this subtract without overflow in int64
_HASHED = frozenset({K_NUM, K_STR, K_BOOL})  # kinds equal only to equal Python values


class _Rows(NamedTuple):
    """Rows of a chain's evaluation, in stream order: carried ones, or a batch's."""

    pos: np.ndarray  #: positions
    tk: np.ndarray  #: time keys (the positions when untimed)
    wk: np.ndarray  #: window keys (substream positions for a window in events)
    rank: np.ndarray  #: substream positions (zeros when nothing reads them)
    bits: np.ndarray  #: the elements each can be (bit ``i``: element ``i``)
    alt: np.ndarray  #: which alternative of each element it is (mixed radix, see ``radix``)
    code: np.ndarray  #: partition of each row: its key's index in ``table``
    table: list[tuple[Any, ...]]  #: partition keys (canonical, each once)
    vals: list[tuple[Any, ...]] | None  #: the values conditions read (None: in the batch)


class _Step(NamedTuple):
    """Extending partial chains by element ``i``."""

    i: int
    gap: bool  #: ``;`` (True) or ``:`` between element ``i`` and ``i + 1``
    #: equalities usable as join keys: (attribute of element ``i``, bound element, its attribute)
    keys: tuple[tuple[int, int, int], ...]
    conds: tuple[Cond, ...]  #: the conditions decided once element ``i`` is bound


class JoinEngine(HoldsNothingBack):
    """The join engine (see the module): the :class:`~ceql.runtime.engine.Engine` protocol
    over the rows a chain can still reach back to. ``core`` is built as for CORE's engine but
    never run: the evaluator reads its window bound and caches."""

    __slots__ = ("alts", "bits", "carry", "consume", "consumed", "consumed_by", "core",
                 "counts", "key_len", "name", "newest", "plan", "radix", "ranked", "steps")

    def __init__(self, core: Core, name: str, plan: ChainPlan, key_len: int | None,
                 events: bool, consume: str) -> None:
        self.core = core
        self.name = name
        self.plan = plan
        self.key_len = key_len  # how much of the key matches report (an implied key is not)
        self.bits: dict[int, int] = {}  # class → the elements it can be
        self.alts: dict[int, int] = {}  # class → its alternative of each element
        #: per element, the place value of its alternative in a row's ``alt``
        self.radix = tuple(int(np.prod([len(a) for a in plan.alts[:i]], dtype=np.int64))
                           for i in range(plan.k))
        #: substream positions are read (a window in events, or a ``:``)
        self.ranked = events or not all(plan.gaps)
        self.carry: _Rows | None = None
        self.counts: dict[tuple[Any, ...], int] = {}  # next substream position per partition
        self.newest: Any = None  # the window key of the newest row (a window in time)
        self.steps = _steps(plan)
        self.consume = consume
        self.consumed = -1  #: CONSUME BY ANY: the position of the last output
        #: CONSUME BY PARTITION: per partition, the position of its last output
        self.consumed_by: dict[tuple[Any, ...], int] = {}

    def _bits(self, c: int) -> int:
        b = self.bits.get(c)
        if b is None:
            b = 0
            alt = 0
            for i, (g, alts) in enumerate(zip(self.plan.guards, self.plan.alts, strict=True)):
                if g(c):
                    b |= 1 << i
                    if len(alts) > 1:
                        alt += self.radix[i] * next(j for j, (h, _) in enumerate(alts) if h(c))
            self.bits[c] = b
            self.alts[c] = alt
        return b

    # ------------------------------------------------------------------ rows
    def feed_rows(self, ev: Evaluation, rows: Iterable[Mapping[str, Any]],
                  taps: Taps = NO_TAPS) -> Iterator[Sequence[Match]]:
        kept = taps.kept
        attrs = self.plan.attrs
        bits_of = self._bits
        ranked = self.ranked
        events = ev.wkind == WITHIN_EVENTS
        counts = self.counts
        got: list[list[Any]] = [[], [], [], [], [], [], [], []]
        pos_l, tk_l, wk_l, rank_l, bits_l, keys_l, vals_l, alt_l = got
        alts = self.alts
        newest = self.newest
        try:
            for pos, key, tkey, wkey, c, e in chain_rows(ev, rows):
                if ranked:
                    r = counts.get(key, 0)
                    counts[key] = r + 1
                    if events:
                        wkey = r
                else:
                    r = 0
                newest = wkey
                b = bits_of(c)
                if not b:
                    continue
                if kept is not None:
                    kept.rows[pos] = e
                pos_l.append(pos)
                tk_l.append(tkey)
                wk_l.append(wkey)
                rank_l.append(r)
                bits_l.append(b)
                alt_l.append(alts[c])
                keys_l.append(key)
                vals_l.append(tuple(norm(e.get(a)) for a in attrs) if attrs else ())
                if len(pos_l) >= ROWS:
                    yield from _attached(self._rows_batch(ev, got, newest), taps)
        except Exception:
            # a row refused: the rows before it are evaluated (as if fed alone) first
            yield from _attached(self._rows_batch(ev, got, newest), taps)
            raise
        yield from _attached(self._rows_batch(ev, got, newest), taps)

    def _rows_batch(self, ev: Evaluation, got: list[list[Any]],
                    newest: Any) -> Iterator[Sequence[Match]]:
        pos_l, tk_l, wk_l, rank_l, bits_l, keys_l, vals_l, alt_l = got
        self.newest = newest
        if not pos_l:
            self._prune(ev, self.carry)
            return iter(())
        code_of: dict[tuple[Any, ...], int] = {}
        code = np.fromiter((code_of.setdefault(kk, len(code_of)) for kk in keys_l),
                           dtype=np.int64, count=len(keys_l))
        new = _Rows(np.asarray(pos_l, dtype=np.int64), _keys(tk_l), _keys(wk_l),
                    np.asarray(rank_l, dtype=np.int64), np.asarray(bits_l, dtype=np.int64),
                    np.asarray(alt_l, dtype=np.int64), code, list(code_of), list(vals_l))
        for x in got:
            x.clear()
        return self._evaluate(ev, new, None, None)

    # ------------------------------------------------------------------ Arrow batches
    def feed_arrow(self, ev: Evaluation, rb: pa.RecordBatch,
                   taps: Taps = NO_TAPS) -> Iterator[Sequence[Match]]:
        read = read_batch(ev, rb, taps)
        if read is None:
            return
        cls_list, inv, positions, tkeys, wattr, pcols, idx = read[0]
        cbits = np.fromiter((self._bits(c) for c in cls_list), dtype=np.int64,
                            count=len(cls_list))
        bits = cbits[inv]
        alt = np.fromiter((self.alts[c] for c in cls_list), dtype=np.int64,
                          count=len(cls_list))[inv]
        m = int(idx.size)
        if ev.pkeys:
            codes, keys = factorize(pcols, idx)
        else:
            codes, keys = np.zeros(m, dtype=np.int64), [()]
        times: np.ndarray = tkeys if tkeys is not None else positions
        rank = np.zeros(m, dtype=np.int64)
        if self.ranked:
            rank = self._ranks(codes, keys)
        events = ev.wkind == WITHIN_EVENTS
        wkeys = rank if events else (wattr if wattr is not None else times)
        self.newest = wkeys[-1].item() if not events else None
        sel = np.flatnonzero(bits)
        if not sel.size:
            self._prune(ev, self.carry)
            return
        new = _Rows(positions[sel], _keys(times[sel]), _keys(wkeys[sel]), rank[sel], bits[sel],
                    alt[sel], codes[sel], keys, None)
        yield from _attached(self._evaluate(ev, new, rb, idx[sel]), taps)

    def _ranks(self, codes: np.ndarray, keys: list[tuple[Any, ...]]) -> np.ndarray:
        """Substream positions of a batch's rows (partition ``codes``), counted on."""
        m = codes.size
        order = np.argsort(codes, kind="stable")
        sc = codes[order]
        first = np.flatnonzero(np.append(True, sc[1:] != sc[:-1]))
        sizes = np.diff(np.append(first, m))
        counts = self.counts
        base = np.asarray([counts.get(keys[c], 0) for c in sc[first].tolist()], dtype=np.int64)
        within = np.arange(m) - np.repeat(first, sizes)
        rank = np.empty(m, dtype=np.int64)
        rank[order] = np.repeat(base, sizes) + within
        for c, b, s in zip(sc[first].tolist(), base.tolist(), sizes.tolist(), strict=True):
            counts[keys[c]] = b + s
        return rank

    # ------------------------------------------------------------------ the join
    def _evaluate(self, ev: Evaluation, new: _Rows, rb: pa.RecordBatch | None,
                  idx: np.ndarray | None) -> Iterator[Sequence[Match]]:
        """The carried rows updated for rows ``new`` (the rows of batch ``rb`` at ``idx``, or
        rows fed one by one with their values); the matches ending at them, enumerated as the
        caller reads them."""
        old = self.carry
        x = new if old is None else _concat(old, new)
        nt = 0 if old is None else old.pos.size
        if rb is None:
            cols = Columns(None, np.zeros(0, dtype=np.int64), x.vals or [], self.plan.attrs)
        else:
            assert idx is not None
            cols = Columns(rb, idx, old.vals or [] if old is not None else [], self.plan.attrs)
        k = self.plan.k
        ends = np.flatnonzero(x.bits >> (k - 1) & 1)
        ends = ends[ends >= nt]
        elems = {s.i: np.flatnonzero(x.bits >> s.i & 1) for s in self.steps}
        floor: np.ndarray | None = None
        if self.consume != CONSUME_NONE and ends.size:
            ends, floor = self._consumed(x, elems, ends, ev.eps)
        self._keep(ev, x, cols)  # (before the caller reads: it may stop early)
        if not ends.size:
            return iter(())
        return self._chunks(ev, x, cols, elems, ends, floor)

    def _chunks(self, ev: Evaluation, x: _Rows, cols: Columns, elems: dict[int, np.ndarray],
                ends: np.ndarray, floor: np.ndarray | None) -> Iterator[Sequence[Match]]:
        """The complex events ending at rows ``ends``, in chunks of at most
        :data:`~ceql.runtime.enumeration.CHUNK`: by end, then the positions of the elements
        from the last to the first (equal projections once)."""
        plan = self.plan
        key_len = self.key_len
        rkeys = x.table if key_len is None else [kk[:key_len] for kk in x.table]
        project = len(plan.marked) < plan.k
        seen: set[tuple[int, ...]] = set()
        seen_end = -1
        for chain in self._walk(0, [ends], floor, x, cols, elems, ev.eps, ev.between.sink):
            pos = [x.pos[c] for c in chain]
            marked = [pos[i] for i in plan.marked]
            first, last = chain[0], chain[-1]
            if project:  # a SELECT list: equal (start, end, positions) once
                keep = []
                for j, key in enumerate(zip(pos[-1].tolist(), pos[0].tolist(),
                                            *(p.tolist() for p in marked), strict=True)):
                    if key[0] != seen_end:
                        seen, seen_end = set(), key[0]
                    if key not in seen:
                        seen.add(key)
                        keep.append(j)
                sel = np.asarray(keep, dtype=np.int64)
                pos = [p[sel] for p in pos]
                marked = [p[sel] for p in marked]
                first, last = first[sel], last[sel]
            each = self._labels(x, chain, sel if project else None)
            for a in range(0, first.size, CHUNK):
                b = a + CHUNK
                yield matches_of(ev, pos[0][a:b], x.tk[first[a:b]], pos[-1][a:b],
                                 x.tk[last[a:b]], x.code[last[a:b]], rkeys,
                                 [p[a:b] for p in marked], plan.labels,
                                 None if each is None else (each[0][a:b], each[1]))

    def _labels(self, x: _Rows, chain: list[np.ndarray], sel: np.ndarray | None
                ) -> tuple[np.ndarray, Callable[[int], tuple[frozenset[str], ...]]] | None:
        """Each chain's variables of its marked elements, where an element has alternatives
        (``(BUY OR SELL) AS b``: ``BUY`` or ``SELL`` with ``b``), as a code per chain and the
        labels of a code; None: ``plan.labels``."""
        plan = self.plan
        if all(len(plan.alts[i]) == 1 for i in plan.marked):
            return None
        combo = np.zeros(chain[0].size, dtype=np.int64)
        place = 1
        for i in plan.marked:
            n = len(plan.alts[i])
            combo += place * ((x.alt[chain[i]] // self.radix[i]) % n)
            place *= n
        if sel is not None:
            combo = combo[sel]
        table: dict[int, tuple[frozenset[str], ...]] = {}

        def labels_of(c: int) -> tuple[frozenset[str], ...]:
            lab = table.get(c)
            if lab is None:
                rest, parts = c, []
                for i in plan.marked:
                    n = len(plan.alts[i])
                    parts.append(plan.alts[i][rest % n][1])
                    rest //= n
                lab = table[c] = tuple(parts)
            return lab

        return combo, labels_of

    def _walk(self, d: int, at: list[np.ndarray], floor: np.ndarray | None, x: _Rows,
              cols: Columns, elems: dict[int, np.ndarray], eps: Any,
              hear: Any) -> Iterator[list[np.ndarray]]:
        """Complete chains (rows per element) from partial chains ``at`` after ``d`` steps,
        depth first and in order, a slice at a time."""
        if d == len(self.steps):
            yield at
            return
        s = self.steps[d]
        for part, pf in self._extend(s, x, x.code, cols, elems[s.i], at, floor, eps, hear):
            yield from self._walk(d + 1, part, pf, x, cols, elems, eps, hear)

    def _extend(self, s: _Step, x: _Rows, code: np.ndarray, cols: Columns, rows: np.ndarray,
                at: list[np.ndarray], floor: np.ndarray | None, eps: Any, hear: Any
                ) -> Iterator[tuple[list[np.ndarray], np.ndarray | None]]:
        """Partial chains ``at`` (rows of elements ``i + 1 .. k - 1``) extended by element
        ``i = s.i`` (candidate ``rows``; none before row ``floor``, if given): the chains that
        pass, in slices."""
        i = s.i
        nxt = at[0]  # element i + 1
        end = at[-1]
        # group of each candidate row and of each partial chain: partition, equality keys
        if s.keys:
            G, g = _key_groups(s, code, cols, rows, at, i)
        else:
            G, g = code[rows], code[end]
        order = np.argsort(G, kind="stable")
        G, R = G[order], rows[order]
        hi = _search(G, R, g, nxt)
        lo = _search(G, np.zeros(0), g, None)  # each group's first row
        if floor is not None:
            lo = np.maximum(lo, _search(G, R, g, floor))
        if not s.gap:
            lo = np.maximum(lo, _search(G, x.rank[R], g, x.rank[nxt] - 1))
            hi = np.minimum(hi, _search(G, x.rank[R], g, x.rank[nxt]))
        if eps is not None:
            bound = _lower(x.wk[end], eps)
            if bound is not None:
                lo = np.maximum(lo, _search(G, x.wk[R], g, bound))
        cnt = np.maximum(hi - lo, 0)
        csum = np.cumsum(cnt)
        total = int(csum[-1]) if csum.size else 0
        for first in range(0, total, SLICE):  # the candidates a slice at a time
            flat = np.arange(first, min(first + SLICE, total), dtype=np.int64)
            rep = np.searchsorted(csum, flat, side="right")
            off = flat - (csum[rep] - cnt[rep])
            chain = [R[lo[rep] + off], *(p[rep] for p in at)]
            fl = None if floor is None else floor[rep]
            ok = self._passes(s, x, cols, chain, eps, hear)
            if ok is not None:
                chain = [p[ok] for p in chain]
                fl = None if fl is None else fl[ok]
            if chain[0].size:
                yield chain, fl

    def _passes(self, s: _Step, x: _Rows, cols: Columns, chain: list[np.ndarray], eps: Any,
                hear: Any) -> np.ndarray | None:
        """Which extended chains (rows of elements ``s.i ..``) pass the window, if the first
        element is bound now, and the conditions decided at this step (None: all)."""
        ok: np.ndarray | None = None
        if s.i == 0 and eps is not None:
            ok = _within(x.wk[chain[-1]], x.wk[chain[0]], eps)
        k = self.plan.k
        for c in s.conds:
            sub = np.arange(chain[0].size) if ok is None else np.flatnonzero(ok)
            if not sub.size:
                break
            full = [chain[j - s.i][sub] if j >= s.i else chain[-1][sub] for j in range(k)]
            got = cond_mask(c, cols, full, hear)
            if ok is None:
                ok = got
            else:
                ok[sub] = got
        return ok

    def _consumed(self, x: _Rows, elems: dict[int, np.ndarray], ends: np.ndarray, eps: Any
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Under CONSUME BY ANY or PARTITION (a chain without conditions between events): the
        ends that output, and for each the first row its complex events may start at.

        An end outputs when some chain ends there starting after the last output (of any
        partition, or of its own): when its latest start does. The latest start is found
        greedily — each element the latest row before the next — and the ends are then
        decided in order."""
        code, keys = x.code, x.table
        cur = ends
        ok = np.ones(ends.size, dtype=bool)
        for s in self.steps:
            rows = elems[s.i]
            G = code[rows]
            order = np.argsort(G, kind="stable")
            G, R = G[order], rows[order]
            g = code[ends]
            first = _search(G, np.zeros(0), g, None)
            if s.gap:
                j = _search(G, R, g, cur) - 1
            else:
                j = _search(G, x.rank[R], g, x.rank[cur] - 1)
            ok &= (j >= first) & (j < R.size)
            j = np.clip(j, 0, max(R.size - 1, 0))
            if R.size:
                ok &= G[j] == g
                if not s.gap:
                    ok &= x.rank[R[j]] == x.rank[cur] - 1
                cur = np.where(ok, R[j], cur)
            else:
                ok[:] = False
        if eps is not None:
            ok &= _within(x.wk[ends], x.wk[cur], eps)
        latest = x.pos[cur].tolist()
        picked: list[int] = []
        floors: list[int] = []
        if self.consume == CONSUME_ANY:
            c = self.consumed
            for n, (e, s0, good) in enumerate(zip(x.pos[ends].tolist(), latest, ok.tolist(),
                                                  strict=True)):
                if good and s0 > c:
                    picked.append(n)
                    floors.append(c)
                    c = e
            self.consumed = c
        else:
            by = self.consumed_by
            table = keys
            for n, (e, s0, good, kc) in enumerate(zip(x.pos[ends].tolist(), latest,
                                                      ok.tolist(), code[ends].tolist(),
                                                      strict=True)):
                if good:
                    kk = table[kc]
                    c = by.get(kk, -1)
                    if s0 > c:
                        picked.append(n)
                        floors.append(c)
                        by[kk] = e
        sel = np.asarray(picked, dtype=np.int64)
        floor = np.searchsorted(x.pos, np.asarray(floors, dtype=np.int64), side="right")
        return ends[sel], floor.astype(np.int64)

    # ------------------------------------------------------------------ the rows kept
    def _keep(self, ev: Evaluation, x: _Rows, cols: Columns) -> None:
        """Carry the rows that can be an element before the last and lie within the window
        of every later row."""
        early = (1 << (self.plan.k - 1)) - 1
        keep = (x.bits & early) != 0
        keep &= self._alive(ev, x)
        rows = np.flatnonzero(keep)
        self._carry(None if not rows.size else _taken(x, rows, cols.values(rows)))

    def _carry(self, carry: _Rows | None) -> None:
        """Keep ``carry``, and the substream positions of its partitions only (a partition
        without rows kept starts counting again: only differences are read)."""
        self.carry = carry
        if self.ranked:
            live = set() if carry is None else set(carry.table)
            self.counts = {kk: n for kk, n in self.counts.items() if kk in live}

    def _alive(self, ev: Evaluation, x: _Rows) -> np.ndarray:
        """Which rows ``x`` a later row can still reach back to: within the window, and after
        the last output where outputs consume."""
        alive = self._window_alive(ev, x)
        if self.consume == CONSUME_ANY:
            alive &= x.pos > self.consumed
        elif self.consume != CONSUME_NONE and self.consumed_by:
            by = self.consumed_by
            last = np.asarray([by.get(kk, -1) for kk in x.table], dtype=np.int64)
            alive &= x.pos > last[x.code]
        return alive

    def _window_alive(self, ev: Evaluation, x: _Rows) -> np.ndarray:
        """Which rows ``x`` a later row can still reach back to within the window."""
        eps = ev.eps
        if eps is None:
            return np.ones(x.pos.size, dtype=bool)
        if ev.wkind == WITHIN_EVENTS:
            nxt = np.asarray([self.counts.get(kk, 0) for kk in x.table], dtype=np.int64)
            return _within(nxt[x.code], x.wk, eps)
        newest = self.newest
        if newest is None:
            return np.ones(x.pos.size, dtype=bool)
        return _within(np.full(x.pos.size, newest, dtype=x.wk.dtype)
                       if x.wk.dtype != object else _objects([newest] * x.pos.size), x.wk, eps)

    def _prune(self, ev: Evaluation, carry: _Rows | None) -> None:
        """A batch without rows of the chain: drop the carried rows it left behind."""
        if carry is None:
            return
        keep = np.flatnonzero(self._alive(ev, carry))
        if keep.size == carry.pos.size:
            return
        vals = carry.vals or []
        self._carry(None if not keep.size else _taken(carry, keep,
                                                      [vals[r] for r in keep.tolist()]))

    # ------------------------------------------------------------------ the rest
    def oldest_live(self, pos: int) -> int:
        if self.carry is not None and self.carry.pos.size:
            return min(pos, int(self.carry.pos.min()))
        return pos

    def save(self, parts: dict[str, Any]) -> None:
        parts["barriers"] = {}
        c = self.carry
        rows = [] if c is None else [
            list(r) for r in zip(c.pos.tolist(), c.tk.tolist(), c.wk.tolist(), c.rank.tolist(),
                                 c.bits.tolist(), [c.table[j] for j in c.code.tolist()],
                                 c.vals or [], c.alt.tolist(), strict=True)]
        parts["join"] = {"rows": rows, "counts": list(self.counts.items()),
                         "newest": self.newest, "consumed": self.consumed,
                         "consumed_by": list(self.consumed_by.items())}

    def load(self, payload: dict[str, Any]) -> None:
        data = payload.get("join")
        if data is None:
            if payload.get("partitions") or payload.get("dense"):
                raise CeqlInputError(
                    "The snapshot was taken by a ceql that evaluated this query with another "
                    "engine (its runs are not the rows this one keeps): restore it with that "
                    "ceql version, or start the evaluation again.")
            return
        damaged = CeqlInputError("The ceql snapshot is damaged (a row of a chain is not what a "
                                 "snapshot holds); take a new one.")
        if not isinstance(data, dict) or not isinstance(data.get("rows"), list | tuple):
            raise damaged
        cols: list[list[Any]] = [[], [], [], [], [], [], [], []]
        for r in data["rows"]:
            if not (isinstance(r, list | tuple) and len(r) == 8 and isinstance(r[0], int)
                    and isinstance(r[3], int) and isinstance(r[4], int)
                    and isinstance(r[5], list | tuple) and isinstance(r[6], list | tuple)
                    and isinstance(r[7], int)):
                raise damaged
            for j, v in enumerate(r):
                cols[j].append(v)
        pos, tk, wk, rank, bits, keys, vals, alt = cols
        code_of: dict[tuple[Any, ...], int] = {}
        code = [code_of.setdefault(_key(kk), len(code_of)) for kk in keys]
        self.carry = None if not pos else _Rows(
            np.asarray(pos, dtype=np.int64), _keys(tk), _keys(wk),
            np.asarray(rank, dtype=np.int64), np.asarray(bits, dtype=np.int64),
            np.asarray(alt, dtype=np.int64), np.asarray(code, dtype=np.int64), list(code_of),
            [tuple(v) for v in vals])
        try:
            self.counts = {_key(kk): int(n) for kk, n in data.get("counts", [])}
            self.consumed = int(data.get("consumed", -1))
            self.consumed_by = {_key(kk): int(n) for kk, n in data.get("consumed_by", [])}
        except (TypeError, ValueError):
            raise damaged from None
        self.newest = data.get("newest")


def _attached(chunks: Iterator[Sequence[Match]], taps: Taps) -> Iterator[Sequence[Match]]:
    """``chunks``, each handed to the kept rows first (their events attached)."""
    for chunk in chunks:
        if taps.kept is not None:
            taps.kept.attach(chunk)
        yield chunk


def _key(k: Any) -> tuple[Any, ...]:
    key = tuple(k)
    return canonical_key(key) or key  # (a decoded NaN is a new object)


def _steps(plan: ChainPlan) -> tuple[_Step, ...]:
    """How the chain is extended backwards: per element from ``k - 2`` to ``0``, its gap,
    its equality keys and the conditions decided once it is bound."""
    k = plan.k
    steps = []
    for i in range(k - 2, -1, -1):
        keys = []
        conds = []
        for c in plan.conds:
            elems = {e for ch in c.choices for e in ch}
            if min(elems) != i:
                continue
            conds.append(c)
            eq = _equality(c, plan.attrs, i)
            if eq is not None:
                keys.append(eq)
        steps.append(_Step(i, plan.gaps[i], tuple(keys), tuple(conds)))
    return tuple(steps)


def _equality(c: Cond, attrs: tuple[str, ...], i: int) -> tuple[int, int, int] | None:
    """``(attribute of element i, element j > i, its attribute)`` when ``c`` is an equality of
    an attribute of element ``i`` and one of a later element (usable as a join key)."""
    p = c.pred
    if not (isinstance(p, N.Compare) and p.op in ("=", "==") and len(c.choices) == 1
            and isinstance(p.left, N.Attr) and isinstance(p.right, N.Attr)):
        return None
    (choice,) = c.choices
    elem = dict(zip(c.quantified, choice, strict=True))
    left = elem.get(p.left.var or c.var)
    right = elem.get(p.right.var or c.var)
    if left is None or right is None:
        return None
    if left == i and right > i:
        return attrs.index(p.left.name), right, attrs.index(p.right.name)
    if right == i and left > i:
        return attrs.index(p.right.name), left, attrs.index(p.left.name)
    return None


def _key_groups(s: _Step, code: np.ndarray, cols: Columns, rows: np.ndarray,
                at: list[np.ndarray], i: int) -> tuple[np.ndarray, np.ndarray]:
    """Group numbers of candidate ``rows`` and of partial chains ``at`` (see
    :func:`_groups_arrow`, else :func:`_groups_python`)."""
    got = _groups_arrow(s, code, cols, rows, at, i)
    return got if got is not None else _groups_python(s, code, cols, rows, at, i)


def _groups_arrow(s: _Step, code: np.ndarray, cols: Columns, rows: np.ndarray,
                  at: list[np.ndarray], i: int) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`_groups_python` on Arrow arrays, where both sides of each equality are
    integers, floats (NaN is NULL, -0.0 is 0.0), texts or booleans of one type; else None."""
    n = rows.size
    G = code[rows]
    g = code[at[-1]]
    for a, j, b in s.keys:
        left, right = cols.arrow(a), cols.arrow(b)
        if left is None or right is None:
            return None
        left, right = left.take(pa.array(rows)), right.take(pa.array(at[j - i - 1]))
        both = _comparable(left, right)
        if both is None:
            return None
        enc = pc.dictionary_encode(pa.concat_arrays(list(both)))
        idx = np.asarray(enc.indices.fill_null(-1).to_numpy(zero_copy_only=False),
                         dtype=np.int64)
        size = len(enc.dictionary) + 1
        both_g = np.concatenate([G, g])
        if int(both_g.max(initial=0)) >= (1 << 62) // size:
            both_g = np.unique(both_g, return_inverse=True)[1].reshape(-1).astype(np.int64)
        both_g = np.where((idx < 0) | (both_g < 0), -1, both_g * size + idx)
        G, g = both_g[:n], both_g[n:]
    g = np.where(g < 0, -2, g)  # (a NULL: never equal, not even to another NULL)
    return G, g


def _comparable(x: pa.Array, y: pa.Array) -> tuple[pa.Array, pa.Array] | None:
    """``x`` and ``y`` in one type whose equal values are the value model's equal ones, or
    None."""
    tx, ty = x.type, y.type
    if pa.types.is_dictionary(tx) or pa.types.is_dictionary(ty):
        return None
    text = (pa.types.is_string(tx) or pa.types.is_large_string(tx)) and (
        pa.types.is_string(ty) or pa.types.is_large_string(ty))
    if text or (pa.types.is_boolean(tx) and pa.types.is_boolean(ty)):
        return x.cast(pa.large_string()) if text else x, y.cast(pa.large_string()) if text \
            else y
    num = [pa.types.is_integer(t) or pa.types.is_floating(t) for t in (tx, ty)]
    if not all(num):
        return None
    if pa.types.is_integer(tx) and pa.types.is_integer(ty) and tx != pa.uint64() \
            and ty != pa.uint64():
        return x.cast(pa.int64()), y.cast(pa.int64())
    out = []
    for v in (x, y):
        if pa.types.is_integer(v.type):
            lo, hi = pc.min_max(v).values()
            if lo.is_valid and max(-lo.as_py(), hi.as_py()) > EXACT:
                return None  # (beyond 2**53 an integer and a float compare exactly in Python)
        f = v.cast(pa.float64())
        f = pc.add(pc.if_else(pc.is_nan(f), pa.scalar(None, pa.float64()), f), 0.0)
        out.append(f)
    return out[0], out[1]


def _groups_python(s: _Step, code: np.ndarray, cols: Columns, rows: np.ndarray,
                   at: list[np.ndarray], i: int) -> tuple[np.ndarray, np.ndarray]:
    """Group numbers of candidate rows and of partial chains: equal when partition and the
    values of every equality key are equal (-1: a NULL, never equal). A value of another kind
    (a time, which may equal a text) leaves the keys out: partition only."""
    groups: dict[tuple[Any, ...], int] = {}
    setdefault = groups.setdefault
    mine = [cols.column(a) for a, _, _ in s.keys]
    theirs = [(at[j - i - 1], cols.column(b)) for _, j, b in s.keys]
    rl = rows.tolist()
    G = np.empty(len(rl), dtype=np.int64)
    for n, r in enumerate(rl):
        vs = tuple(col[r] for col in mine)
        if None in vs:
            G[n] = -1
            continue
        if any(kind(v) not in _HASHED for v in vs):
            return code[rows], code[at[-1]]
        G[n] = setdefault((int(code[r]), *vs), len(groups))
    end = at[-1].tolist()
    cols_at = [(rs.tolist(), col) for rs, col in theirs]
    g = np.empty(len(end), dtype=np.int64)
    for n, e in enumerate(end):
        vs = tuple(col[rs[n]] for rs, col in cols_at)
        if None in vs:
            g[n] = -2
            continue
        if any(kind(v) not in _HASHED for v in vs):
            return code[rows], code[at[-1]]
        g[n] = groups.get((int(code[e]), *vs), -2)
    return G, g


def _search(G: np.ndarray, X: np.ndarray, g: np.ndarray, x: Any) -> np.ndarray:
    """Per query ``(g, x)``: the first index at which ``(G, X)`` (sorted lexicographically)
    is at least it; ``x`` None: the first index of group ``g``."""
    lo = np.searchsorted(G, g, side="left")
    if x is None:
        return lo
    if X.size and x.size:
        one = _one_key(G, X, g, x)
        if one is not None:  # one search over (group, value) as one sortable integer
            return np.searchsorted(one[0], one[1], side="left")
    hi = np.searchsorted(G, g, side="right")
    n = X.size
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = (lo + hi) // 2
        less = np.zeros(lo.size, dtype=bool)
        at = np.flatnonzero(open_)
        less[at] = np.asarray(X[np.minimum(mid[at], n - 1)] < x[at], dtype=bool)
        lo = np.where(open_ & less, mid + 1, lo)
        hi = np.where(open_ & ~less, mid, hi)


def _one_key(G: np.ndarray, X: np.ndarray, g: np.ndarray, x: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray] | None:
    """``(G, X)`` and ``(g, x)`` as integers in the same lexicographic order: the group
    times the span of the values, plus the value (integers) or its rank among all of them
    (floats without NaN); None where that does not fit in 62 bits or the values are other."""
    kx, kq = X.dtype.kind, x.dtype.kind
    if kx == kq == "i":
        low = min(int(X.min()), int(x.min()))
        span = max(int(X.max()), int(x.max())) - low + 1
        vx, vq = X.astype(np.int64) - low, x.astype(np.int64) - low
    elif kx == kq == "f" and not (np.isnan(X).any() or np.isnan(x).any()):
        values, ranks = np.unique(np.concatenate([X, x]), return_inverse=True)
        ranks = ranks.reshape(-1)
        span = int(values.size)
        vx, vq = ranks[:X.size], ranks[X.size:]
    else:
        return None
    first = min(int(G.min()), int(g.min()))
    groups = max(int(G.max()), int(g.max())) - first + 1
    if groups * span >= 1 << 62:
        return None
    return ((G.astype(np.int64) - first) * span + vx,
            (np.asarray(g, np.int64) - first) * span + vq)


def _lower(w_end: np.ndarray, eps: Any) -> np.ndarray | None:
    """A lower bound of the window keys of rows within ``eps`` of ``w_end`` (loose by a few
    ulps for floats; exact checks follow), or None when keys are not plain numbers."""
    if w_end.dtype.kind == "i":
        return np.asarray(w_end - math.floor(eps))
    if w_end.dtype.kind == "f":
        return np.asarray(w_end - eps - (np.abs(w_end) + abs(eps)) * 2.0 ** -40)
    return None


def _within(hi: np.ndarray, lo: np.ndarray, eps: Any) -> np.ndarray:
    """``hi - lo <= eps``, exactly as Python computes it on the keys."""
    if hi.dtype.kind != lo.dtype.kind and hi.size and any(
            a.dtype.kind == "i" and max(-int(a.min()), int(a.max())) > EXACT for a in (hi, lo)):
        hi, lo = _objects(hi.tolist()), _objects(lo.tolist())
    if hi.dtype == object or lo.dtype == object:
        return np.fromiter((h - x <= eps for h, x in zip(hi.tolist(), lo.tolist(),
                                                           strict=True)),
                           dtype=bool, count=hi.size)
    if hi.dtype.kind == "i" and lo.dtype.kind == "i":
        return np.asarray((hi - lo) <= math.floor(eps), dtype=bool)
    return np.asarray((hi - lo) <= eps, dtype=bool)


def _objects(values: list[Any]) -> np.ndarray:
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


def _keys(values: Any) -> np.ndarray:
    """Time or window keys as an array that computes exactly as Python does on them: int64
    (integers below 2**62), float64 (floats, integers up to 2**53 among them), else objects."""
    if isinstance(values, np.ndarray):
        if values.dtype.kind == "i" and (not values.size or (
                int(values.max()) < _BIG and int(values.min()) > -_BIG)):
            return values.astype(np.int64, copy=False)
        if values.dtype.kind == "f":
            return values.astype(np.float64, copy=False)
        values = values.tolist()
    types = {type(v) for v in values}
    if types <= {int} and all(-_BIG < v < _BIG for v in values):
        return np.asarray(values, dtype=np.int64)
    if types <= {int, float} and all(type(v) is float or -EXACT <= v <= EXACT
                                     for v in values):
        return np.asarray(values, dtype=np.float64)
    return _objects(list(values))


def _concat(a: _Rows, b: _Rows) -> _Rows:
    """Carried rows ``a`` followed by new rows ``b`` (partitions numbered as ``b``'s, then
    those only ``a`` has)."""
    index = {kk: j for j, kk in enumerate(b.table)}
    table = list(b.table)
    remap = np.fromiter((index.get(kk, -1) for kk in a.table), dtype=np.int64,
                        count=len(a.table))
    for j in np.flatnonzero(remap < 0).tolist():
        remap[j] = len(table)
        table.append(a.table[j])
    return _Rows(np.concatenate([a.pos, b.pos]), _joined(a.tk, b.tk), _joined(a.wk, b.wk),
                 np.concatenate([a.rank, b.rank]), np.concatenate([a.bits, b.bits]),
                 np.concatenate([a.alt, b.alt]), np.concatenate([remap[a.code], b.code]), table,
                 None if b.vals is None else (a.vals or []) + b.vals)


def _taken(x: _Rows, rows: np.ndarray, vals: list[tuple[Any, ...]]) -> _Rows:
    """Rows ``rows`` of ``x`` (with their values ``vals``), partitions renumbered."""
    used, code = np.unique(x.code[rows], return_inverse=True)
    return _Rows(x.pos[rows], x.tk[rows], x.wk[rows], x.rank[rows], x.bits[rows], x.alt[rows],
                 code.reshape(-1).astype(np.int64), [x.table[j] for j in used.tolist()], vals)


def _joined(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype == b.dtype and a.dtype != object:
        return np.concatenate([a, b])
    return _keys([*a.tolist(), *b.tolist()])
