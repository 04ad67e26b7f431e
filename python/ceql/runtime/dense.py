"""Contiguous chains evaluated on whole columns: a base engine for queries whose pattern is a
``:`` chain of single events (:func:`dense_plan` says which qualify).

Such a pattern has at most one complex event per end position ``j``: the ``k`` consecutive
events of ``j``'s substream that end at ``j``. So every selection strategy keeps it, LIMIT
(at least 1) never cuts, and a match is found by looking back ``k - 1`` rows. Per Arrow batch
the rows are grouped by partition with one stable sort (each partition's rows carried from
the previous batch, at most ``k - 1``, go first); a start ``s`` in the sorted order is a match
when rows ``s .. s + k - 1`` share a partition, row ``s + i`` passes element ``i``'s guard
(its class, as the other engines read it), the window holds and the conditions between the
elements hold. Guards, partition and window are array comparisons of shifted columns;
conditions between elements are too when they compare numeric columns and numbers
(:func:`_vector`), else the compiled condition of the register runtime
(:mod:`ceql.predicates.between`) decides each candidate, so values mean exactly what they
mean there. Rows fed one by one run the same test on each partition's last ``k`` rows.

State: per partition, its last ``k - 1`` rows that can still begin a match (position, time
and window keys, which elements they can be, the values the conditions read), cut after the
last row that can be no element; snapshots hold them as plain data.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ..constants import WITHIN_EVENTS
from ..errors import CeqlInputError
from ..predicates.values import norm
from .candidates import Columns, cond_holds, cond_mask, matches_of
from .dense_plan import ChainPlan
from .engine import NO_TAPS, HoldsNothingBack, Taps
from .feeds import chain_rows, factorize, read_batch
from .match import Match
from .match_arrays import MatchBlock
from .partitions import canonical_key
from .state import Core, Evaluation

__all__ = ["DenseEngine"]

_new = object.__new__

#: a row kept for the next batch: (position, time key, window key, elements bits, values)
Rec = tuple[int, Any, Any, int, tuple[Any, ...]]


class DenseEngine(HoldsNothingBack):
    """The dense engine (see the module): the :class:`~ceql.runtime.engine.Engine` protocol
    over per-partition tails. ``core`` is built as for CORE's engine but never run: the
    evaluator reads its window bound and caches."""

    __slots__ = ("bits", "core", "key_len", "name", "plan", "tails")

    def __init__(self, core: Core, name: str, plan: ChainPlan, key_len: int | None) -> None:
        self.core = core
        self.name = name
        self.plan = plan
        self.key_len = key_len  # how much of the key matches report (an implied key is not)
        self.tails: dict[tuple[Any, ...], list[Rec]] = {}
        self.bits: dict[int, int] = {}  # class → the elements it can be (bit i: element i)

    def _bits(self, c: int) -> int:
        b = self.bits.get(c)
        if b is None:
            b = 0
            for i, g in enumerate(self.plan.guards):
                if g(c):
                    b |= 1 << i
            self.bits[c] = b
        return b

    # ------------------------------------------------------------------ rows
    def feed_rows(self, ev: Evaluation, rows: Iterable[Mapping[str, Any]],
                  taps: Taps = NO_TAPS) -> Iterator[Sequence[Match]]:
        kept = taps.kept
        tails = self.tails
        plan = self.plan
        k = plan.k
        attrs = plan.attrs
        bits_of = self._bits
        for pos, key, tkey, wkey, c, e in chain_rows(ev, rows):
            b = bits_of(c)
            if not b:  # no element: a match neither ends here nor spans it
                tails.pop(key, None)
                continue
            if kept is not None:
                kept.rows[pos] = e
            rec: Rec = (pos, tkey, wkey, b, tuple(norm(e.get(a)) for a in attrs)
                        if attrs else ())
            tail = tails.get(key)
            if tail is None:
                tail = [rec]
            else:
                tail.append(rec)
            if len(tail) >= k:
                last = tail[-k:]
                if self._holds(ev, last):
                    m = self._match(ev, key, [r[0] for r in last], last[0][1], tkey)
                    if kept is not None:
                        kept.attach([m])
                    yield [m]
                del tail[:len(tail) - k + 1]
            if tail:
                tails[key] = tail
            else:
                tails.pop(key, None)

    def _holds(self, ev: Evaluation, recs: list[Rec]) -> bool:
        """Whether the ``k`` rows ``recs`` (consecutive in their partition) are a match."""
        for i, r in enumerate(recs):
            if not r[3] >> i & 1:
                return False
        eps = ev.eps
        if eps is not None:
            if ev.wkind == WITHIN_EVENTS:
                if len(recs) - 1 > eps:
                    return False
            elif recs[-1][2] - recs[0][2] > eps:
                return False
        hear = ev.between.sink
        return all(cond_holds(c, [r[4] for r in recs], hear) for c in self.plan.conds)

    def _match(self, ev: Evaluation, key: tuple[Any, ...], positions: list[int],
               start_t: Any, end_t: Any) -> Match:
        clock = ev.clock
        plan = self.plan
        m = _new(Match)
        sp = positions[0]
        m._start = (sp, sp, sp, None, start_t)
        rkey = key if self.key_len is None else key[:self.key_len]
        if clock.is_ts:
            m._end = (positions[-1], clock.value(end_t), rkey, clock.form(), True)
        else:
            m._end = (positions[-1], end_t, rkey, None, clock.time is not None)
        m.positions = tuple(positions[i] for i in plan.marked)
        m._labels = plan.labels
        return m

    # ------------------------------------------------------------------ Arrow batches
    def feed_arrow(self, ev: Evaluation, rb: pa.RecordBatch,
                   taps: Taps = NO_TAPS) -> Iterator[Sequence[Match]]:
        read = read_batch(ev, rb, taps)
        if read is None:
            return
        out = self._batch(ev, rb, read[0])
        if out:
            if taps.kept is not None:
                taps.kept.attach(out)
            yield out

    def _batch(self, ev: Evaluation, rb: pa.RecordBatch, rows: Any) -> Sequence[Match]:
        cls_list, inv, positions, tkeys, wattr, pcols, idx = rows
        plan = self.plan
        k = plan.k
        m = int(idx.size)
        cbits = np.fromiter((self._bits(c) for c in cls_list), dtype=np.int64,
                            count=len(cls_list))
        bits = cbits[inv]
        if ev.pkeys:
            codes, keys = factorize(pcols, idx)
        else:
            codes, keys = np.zeros(m, dtype=np.int64), [()]
        events = ev.wkind == WITHIN_EVENTS
        times: Any = tkeys if tkeys is not None else positions
        wkeys: Any = None
        if ev.eps is not None and not events:
            wkeys = wattr if wattr is not None else times
        # the rows carried from the previous batch go before each partition's rows
        tails = self.tails
        trecs: list[Rec] = []
        tcodes: list[int] = []
        for code, key in enumerate(keys):
            t = tails.get(key)
            if t:
                trecs += t
                tcodes += [code] * len(t)
        nt = len(trecs)
        if nt:
            code_x = np.concatenate([np.asarray(tcodes, dtype=np.int64), codes])
            bits_x = np.concatenate([np.asarray([r[3] for r in trecs], dtype=np.int64), bits])
        else:
            code_x, bits_x = codes, bits
        order = np.argsort(code_x, kind="stable")
        sc = code_x[order]
        sb = bits_x[order]
        n = nt + m
        cols = Columns(rb, idx, [r[4] for r in trecs], plan.attrs)
        out: Sequence[Match] = []
        if n >= k and not (events and k - 1 > ev.eps):
            span = n - k + 1
            ok = sc[:span] == sc[k - 1:]
            ok &= order[k - 1:] >= nt  # ends at a row of this batch
            for i in range(k):
                ok &= (sb[i:i + span] >> i & 1).astype(bool)
            cand = np.flatnonzero(ok)
            if cand.size and wkeys is not None:
                cand = self._window(ev, cand, order, trecs, wkeys, nt)
            for c in plan.conds:
                if not cand.size:
                    break
                rows_at = [order[cand + e] for e in range(k)]
                cand = cand[cond_mask(c, cols, rows_at, ev.between.sink)]
            if cand.size:
                out = self._matches(ev, cand, order, sc, keys, trecs, positions, times, nt)
        self._carry(ev, order, sc, sb, keys, trecs, positions, times, wkeys, cols, nt)
        return out

    def _window(self, ev: Evaluation, cand: np.ndarray, order: np.ndarray, trecs: list[Rec],
                wkeys: np.ndarray, nt: int) -> np.ndarray:
        """The candidate starts whose span fits the window (a time or an attribute)."""
        eps = ev.eps
        first = order[cand]
        hi = wkeys[order[cand + self.plan.k - 1] - nt]
        tw = [r[2] for r in trecs]
        if wkeys.dtype.kind == "i" and all(type(x) is int for x in tw):
            lo = wkeys[np.maximum(first - nt, 0)]
            if nt and any(abs(x) >= 2 ** 62 for x in tw):
                lo = None
            elif nt:
                lo = np.where(first < nt, np.asarray(tw, dtype=np.int64)[np.minimum(
                    first, nt - 1)], lo)
            if lo is not None and max(abs(int(hi.max())), abs(int(hi.min())),
                                      abs(int(lo.max())), abs(int(lo.min()))) < 2 ** 62:
                got: np.ndarray = cand[(hi - lo) <= math.floor(eps)]
                return got
        # otherwise number by number, as Python subtracts and compares them
        keep = [j for j, (f, h) in enumerate(zip(first.tolist(), hi.tolist(), strict=True))
                if h - (tw[f] if f < nt else wkeys[f - nt].item()) <= eps]
        return cand[np.asarray(keep, dtype=np.int64)]

    def _matches(self, ev: Evaluation, cand: np.ndarray, order: np.ndarray, sc: np.ndarray,
                 keys: list[tuple[Any, ...]], trecs: list[Rec], positions: np.ndarray,
                 times: np.ndarray, nt: int) -> MatchBlock:
        """The matches of starts ``cand`` (in sorted order), by end position."""
        k = self.plan.k
        at = [order[cand + i] for i in range(k)]
        end = at[-1] - nt
        by_end = np.argsort(positions[end], kind="stable")
        cand, end = cand[by_end], end[by_end]
        at = [a[by_end] for a in at]
        pos_cols = []
        tpos = np.asarray([r[0] for r in trecs], dtype=np.int64)
        for a in at:
            p = positions[np.maximum(a - nt, 0)]
            if nt:
                p = np.where(a < nt, tpos[np.minimum(a, nt - 1)], p)
            pos_cols.append(p)
        first = at[0]
        start_t = times[np.maximum(first - nt, 0)].tolist()
        if nt:
            for j in np.flatnonzero(first < nt).tolist():
                start_t[j] = trecs[int(first[j])][1]
        end_t = times[end]
        codes = sc[cand]
        key_len = self.key_len
        rkeys = keys if key_len is None else [key[:key_len] for key in keys]
        plan = self.plan
        return matches_of(ev, pos_cols[0], start_t, pos_cols[-1], end_t, codes, rkeys,
                          [pos_cols[i] for i in plan.marked], plan.labels)

    def _carry(self, ev: Evaluation, order: np.ndarray, sc: np.ndarray, sb: np.ndarray,
               keys: list[tuple[Any, ...]], trecs: list[Rec], positions: np.ndarray,
               times: Any, wkeys: Any, cols: Columns, nt: int) -> None:
        """Keep each partition's last ``k - 1`` rows after its last row that is no element."""
        keep = self.plan.k - 1
        tails = self.tails
        n = sc.size
        if keep == 0 or n == 0:
            return
        last = np.flatnonzero(np.append(sc[1:] != sc[:-1], True))  # each partition's last row
        first = np.append(0, last[:-1] + 1)
        # a row that is no element cuts what comes before it
        at = np.arange(n)
        cut = np.maximum.accumulate(np.where(sb == 0, at, -1))[last]
        lo = np.maximum(np.maximum(last - keep + 1, first), cut + 1)
        counts = last - lo + 1
        total = int(counts.sum())
        rows = np.repeat(lo, counts) + (np.arange(total) - np.repeat(
            np.cumsum(counts) - counts, counts))
        x = order[rows]
        fresh = x >= nt
        new_rows = x[fresh] - nt
        vals = iter(cols.python(new_rows.tolist()))
        pos_l = iter(positions[new_rows].tolist())
        t_l = times[new_rows].tolist()
        w_l = iter(wkeys[new_rows].tolist() if wkeys is not None else t_l)
        t_i = iter(t_l)
        recs = [trecs[xi] if xi < nt else (next(pos_l), next(t_i), next(w_l), b, next(vals))
                for xi, b in zip(x.tolist(), sb[rows].tolist(), strict=True)]
        j = 0
        for code, c in zip(sc[last].tolist(), counts.tolist(), strict=True):
            key = keys[code]
            if c:
                tails[key] = recs[j:j + c]
                j += c
            else:
                tails.pop(key, None)

    # ------------------------------------------------------------------ the rest
    def oldest_live(self, pos: int) -> int:
        for tail in self.tails.values():
            p = tail[0][0]
            if p < pos:
                pos = p
        return pos

    def save(self, parts: dict[str, Any]) -> None:
        parts["barriers"] = {}
        parts["dense"] = [(key, [list(r) for r in tail]) for key, tail in self.tails.items()]

    def load(self, payload: dict[str, Any]) -> None:
        data = payload.get("dense")
        if data is None:
            if payload.get("partitions"):
                raise CeqlInputError(
                    "The snapshot was taken by a ceql that evaluated this query with another "
                    "engine (its runs are not the rows this one keeps): restore it with that "
                    "ceql version, or start the evaluation again.")
            return
        tails: dict[tuple[Any, ...], list[Rec]] = {}
        for key, tail in data:
            recs = []
            for r in tail:
                pos, t, w, b, vals = r
                if not (isinstance(pos, int) and isinstance(b, int)
                        and isinstance(vals, tuple | list)):
                    raise CeqlInputError("The ceql snapshot is damaged (a row of a chain is "
                                         "not what a snapshot holds); take a new one.")
                recs.append((pos, t, w, b, tuple(vals)))
            key = tuple(key)
            tails[canonical_key(key) or key] = recs  # (a decoded NaN is a new object)
        self.tails = tails
