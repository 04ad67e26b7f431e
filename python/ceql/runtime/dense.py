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

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from ..constants import WITHIN_EVENTS
from ..errors import CeqlInputError
from ..ir import nodes as N
from ..predicates.between import Listener
from ..predicates.values import TRUE, norm
from .dense_plan import Cond, DensePlan
from .engine import NO_TAPS, HoldsNothingBack, Taps
from .feeds import factorize, read_batch
from .match import Match
from .partitions import canonical_key
from .state import Core, Evaluation
from .times import column

__all__ = ["DenseEngine"]

_new = object.__new__
_EXACT = 2 ** 53  # integers up to this are exact as floats (so compare exactly with floats)

#: a row kept for the next batch: (position, time key, window key, elements bits, values)
Rec = tuple[int, Any, Any, int, tuple[Any, ...]]


class DenseEngine(HoldsNothingBack):
    """The dense engine (see the module): the :class:`~ceql.runtime.engine.Engine` protocol
    over per-partition tails. ``core`` is built as for CORE's engine but never run: the
    evaluator reads its window bound and caches."""

    __slots__ = ("bits", "core", "key_len", "name", "plan", "tails")

    def __init__(self, core: Core, name: str, plan: DensePlan, key_len: int | None) -> None:
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
                  taps: Taps = NO_TAPS) -> Iterator[list[Match]]:
        mixed = ev.mixed
        watching = not mixed.done
        plain = mixed.plain
        streams, skey, names = ev.streams, ev.stream_key, ev.names
        kept = taps.kept
        pkeys = ev.pkeys
        row_class = ev.atoms.row_class
        clock = ev.clock
        timed = ev.time is not None
        wattr = clock.wattr
        events = ev.wkind == WITHIN_EVENTS
        canonical = ev.parts.canonical
        tails = self.tails
        plan = self.plan
        k = plan.k
        attrs = plan.attrs
        bits_of = self._bits
        # Reads a row as feeds.feed_rows does (stream, key, time), inlined: this loop is the
        # engine's whole per-event cost, and a call per row would be a tenth of it.
        for e in rows:
            pos = ev.offset
            ev.offset += 1
            st = e.get(skey)
            if st is not None:
                if names.tracking_streams:
                    try:
                        if st not in names.seen_streams:
                            names.note_stream(st)
                    except TypeError:  # unhashable: refused just below
                        pass
                if st not in streams:
                    continue
            if pkeys:
                key = tuple(e.get(a) for a in pkeys)
                if any(v is None for v in key):
                    continue
            else:
                key = ()
            if timed:
                tkey, decided = clock.row_time(e, pos)
                if decided:
                    ev.times_decided()
                clock.check_row_time(tkey, pos, e)
            else:
                tkey = pos
            wkey = tkey if events or wattr is None else clock.row_wattr(e, pos)
            c = row_class(e)
            if watching and c not in plain:
                watching = mixed.read_row(c, e, pos)
            if names.missing_mask:
                ev.new_class(c)
            if pkeys:
                ck = canonical(key)
                if ck is None:
                    continue
                key = ck
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
        return all(_cond_holds(c, [r[4] for r in recs], hear) for c in self.plan.conds)

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
                   taps: Taps = NO_TAPS) -> Iterator[list[Match]]:
        read = read_batch(ev, rb, taps)
        if read is None:
            return
        out = self._batch(ev, rb, read[0])
        if out:
            if taps.kept is not None:
                taps.kept.attach(out)
            yield out

    def _batch(self, ev: Evaluation, rb: pa.RecordBatch, rows: Any) -> list[Match]:
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
        cols = _Columns(rb, idx, trecs, plan.attrs)
        out: list[Match] = []
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
                cand = cand[_cond_mask(c, cols, rows_at, ev.between.sink)]
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
                 times: np.ndarray, nt: int) -> list[Match]:
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
            pos_cols.append(p.tolist())
        first = at[0]
        start_t = times[np.maximum(first - nt, 0)].tolist()
        if nt:
            for j in np.flatnonzero(first < nt).tolist():
                start_t[j] = trecs[int(first[j])][1]
        end_t = times[end].tolist()
        codes = sc[cand].tolist()
        clock = ev.clock
        is_ts = clock.is_ts
        form = clock.form() if is_ts else None
        timed = bool(is_ts) or clock.time is not None
        value = clock.value
        key_len = self.key_len
        rkeys = keys if key_len is None else [key[:key_len] for key in keys]
        plan = self.plan
        labels = plan.labels
        marked = [pos_cols[i] for i in plan.marked]
        ends = pos_cols[-1]
        starts = pos_cols[0]
        out: list[Match] = []
        append = out.append
        M = Match
        new = _new
        if is_ts:
            end_t = [value(t) for t in end_t]
        for sp, st, ep, et, code, ps in zip(starts, start_t, ends, end_t, codes,
                                            zip(*marked, strict=True) if marked
                                            else itertools.repeat(()), strict=False):
            mt = new(M)
            mt._start = (sp, sp, sp, None, st)
            mt._end = (ep, et, rkeys[code], form, timed)
            mt.positions = ps
            mt._labels = labels
            append(mt)
        return out

    def _carry(self, ev: Evaluation, order: np.ndarray, sc: np.ndarray, sb: np.ndarray,
               keys: list[tuple[Any, ...]], trecs: list[Rec], positions: np.ndarray,
               times: Any, wkeys: Any, cols: _Columns, nt: int) -> None:
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
    def flush(self, ev: Evaluation) -> Iterator[list[Match]]:
        return iter(())

    def advance(self, ev: Evaluation, key: Any) -> list[Match]:
        return []

    def close(self, ev: Evaluation) -> list[Match]:
        return []

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


def _cond_holds(c: Cond, vals: list[tuple[Any, ...]], hear: Listener | None) -> bool:
    """Whether condition ``c`` holds for every choice, the elements' values being ``vals``
    (``hear``: the evaluation's listener for values that never compare, if it listens)."""
    check = c.check
    slots = c.slots
    for choice in c.choices:
        recs = []
        for q, el in enumerate(choice):
            v = vals[el]
            recs.append(tuple(v[s] for s in slots[q]))
        if check(tuple(recs), (), hear) != TRUE:
            return False
    return True


class _Columns:
    """The attributes conditions read, for the rows of a batch and the rows carried into it
    (rows ``0 .. nt - 1`` are carried, ``nt + i`` is the batch's row ``idx[i]``)."""

    def __init__(self, rb: pa.RecordBatch, idx: np.ndarray, trecs: list[Rec],
                 attrs: tuple[str, ...]) -> None:
        self.rb = rb
        self.idx = idx
        self.trecs = trecs
        self.nt = len(trecs)
        self.attrs = attrs
        self._arrays: dict[int, tuple[np.ndarray, np.ndarray] | None] = {}
        self._cols: dict[int, pa.Array | None] = {}

    def _col(self, a: int) -> pa.Array | None:
        if a not in self._cols:
            col = column(self.rb, self.attrs[a], None)
            if col is not None and pa.types.is_dictionary(col.type):
                col = col.dictionary_decode()
            self._cols[a] = col
        return self._cols[a]

    def python(self, rows: list[int]) -> list[tuple[Any, ...]]:
        """Normalized values of batch rows ``rows`` (indices into ``idx``), one tuple each."""
        if not self.attrs:
            return [()] * len(rows)
        if not rows:
            return []
        take = pa.array(self.idx[rows])
        per = []
        for a in range(len(self.attrs)):
            col = self._col(a)
            per.append([None] * len(rows) if col is None else
                       [norm(v) for v in col.take(take).to_pylist()])
        return list(zip(*per, strict=True))

    def values(self, rows: np.ndarray) -> list[tuple[Any, ...]]:
        """Normalized values of extended rows ``rows`` (carried ones first), one tuple each."""
        nt = self.nt
        rl = rows.tolist()
        new = [r - nt for r in rl if r >= nt]
        got = iter(self.python(new))
        return [self.trecs[r][4] if r < nt else next(got) for r in rl]

    def array(self, a: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Attribute ``a`` over the extended rows as numbers (floats, or integers where an
        integer beyond 2**53 makes floats inexact) and where they are valid; None when some
        value is not a number (or the integers are too large to compare with floats)."""
        if a in self._arrays:
            return self._arrays[a]
        got = self._array(a)
        self._arrays[a] = got
        return got

    def _array(self, a: int) -> tuple[np.ndarray, np.ndarray] | None:
        col = self._col(a)
        m = int(self.idx.size)
        if col is None or pa.types.is_null(col.type):
            vals = np.zeros(m, dtype=np.float64)
            valid = np.zeros(m, dtype=bool)
        else:
            t = col.type
            if not (pa.types.is_integer(t) or pa.types.is_floating(t)) or t == pa.uint64():
                return None
            sel = col.take(pa.array(self.idx))
            valid = np.asarray(sel.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            if pa.types.is_floating(t):
                vals = np.asarray(sel.cast(pa.float64()).fill_null(0.0)
                                  .to_numpy(zero_copy_only=False), dtype=np.float64)
                valid &= ~np.isnan(vals)
            else:
                vals = np.asarray(sel.cast(pa.int64()).fill_null(0)
                                  .to_numpy(zero_copy_only=False), dtype=np.int64)
                if not vals.size or max(-int(vals.min()), int(vals.max())) <= _EXACT:
                    vals = vals.astype(np.float64)  # exact: compares with floats as Python
        if self.nt:
            tv = [r[4][a] for r in self.trecs]
            if any(v is not None and type(v) not in (int, float) for v in tv):
                return None
            tvalid = np.asarray([v is not None for v in tv], dtype=bool)
            big = any(type(v) is int and abs(v) > _EXACT for v in tv)
            if big and vals.dtype.kind == "f":
                if valid.any() or any(type(v) is float for v in tv):
                    return None
                vals = vals.astype(np.int64)  # (no number in the batch: integers then)
            if vals.dtype.kind == "i":
                if any(type(v) is float or (type(v) is int and abs(v) >= 2 ** 63)
                       for v in tv):
                    return None
                tarr = np.asarray([0 if v is None else v for v in tv], dtype=np.int64)
            else:
                tarr = np.asarray([0.0 if v is None else v for v in tv], dtype=np.float64)
            vals = np.concatenate([tarr, vals])
            valid = np.concatenate([tvalid, valid])
        return vals, valid


def _cond_mask(c: Cond, cols: _Columns, rows_at: list[np.ndarray],
               hear: Listener | None) -> np.ndarray:
    """Per candidate (its elements' extended rows ``rows_at``): whether ``c`` holds."""
    if c.vector:
        got = _vector_mask(c, cols, rows_at)
        if got is not None:
            return got
    # value by value, as the register runtime decides it
    vals = [cols.values(r) for r in rows_at]
    n = rows_at[0].size
    return np.fromiter((_cond_holds(c, [v[j] for v in vals], hear) for j in range(n)), dtype=bool,
                       count=n)


def _vector_mask(c: Cond, cols: _Columns, rows_at: list[np.ndarray]) -> np.ndarray | None:
    """:func:`_cond_mask` on arrays (None: a column is not numbers)."""
    qi = {v: i for i, v in enumerate(c.quantified)}
    ok = np.ones(rows_at[0].size, dtype=bool)
    for choice in c.choices:

        def operand(e: N.Expr, choice: tuple[int, ...] = choice) -> Any:
            if isinstance(e, N.Literal):
                return e.value
            assert isinstance(e, N.Attr)
            got = cols.array(cols.attrs.index(e.name))
            if got is None:
                raise _NotNumbers
            vals, valid = got
            r = rows_at[choice[qi[c.var if e.var is None else e.var]]]
            return vals[r], valid[r]

        try:
            t, _ = _tri(c.pred, operand)
        except _NotNumbers:
            return None
        ok &= t
    return ok


class _NotNumbers(Exception):
    """A column a condition reads is not numbers (or not exactly comparable as such)."""


def _tri(p: N.Pred, operand: Callable[[N.Expr], Any]) -> tuple[np.ndarray, np.ndarray]:
    """``p`` in 3-valued logic as two arrays: where it is TRUE, where it is FALSE."""
    if isinstance(p, N.PAnd):
        lt, lf = _tri(p.left, operand)
        rt, rf = _tri(p.right, operand)
        return lt & rt, lf | rf
    if isinstance(p, N.POr):
        lt, lf = _tri(p.left, operand)
        rt, rf = _tri(p.right, operand)
        return lt | rt, lf & rf
    if isinstance(p, N.PNot):
        t, f = _tri(p.operand, operand)
        return f, t
    assert isinstance(p, N.Compare)
    a, b = operand(p.left), operand(p.right)
    valid: Any = True
    if isinstance(a, tuple):
        a, va = a
        valid = va
    elif (type(a) is int and abs(a) > _EXACT) or a != a:
        raise _NotNumbers  # (a NaN literal is NULL)
    if isinstance(b, tuple):
        b, vb = b
        valid = valid & vb
    elif (type(b) is int and abs(b) > _EXACT) or b != b:
        raise _NotNumbers
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype != b.dtype:
        raise _NotNumbers  # integers beyond 2**53 against floats
    if not isinstance(a, np.ndarray) and not isinstance(b, np.ndarray):
        raise _NotNumbers  # (two literals: left to Python)
    for x, y in ((a, b), (b, a)):
        if isinstance(x, np.ndarray) and x.dtype.kind == "i" and type(y) is float:
            raise _NotNumbers  # an integer column against a float: Python compares exactly
    op = p.op
    if op == "=" or op == "==":
        r = a == b
    elif op in ("!=", "<>"):
        r = a != b
    elif op == "<":
        r = a < b
    elif op == "<=":
        r = a <= b
    elif op == ">":
        r = a > b
    else:
        r = a >= b
    r = np.asarray(r, dtype=bool)
    return r & valid, ~r & valid
