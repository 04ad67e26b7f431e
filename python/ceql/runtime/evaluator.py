"""CORE's evaluation algorithm (Algorithm 1) over the tECS, with PARTITION BY, WITHIN,
CONSUME BY and LIMIT, fed row by row or in Arrow batches.

Per partition the evaluator keeps the active deterministic states in an insertion-ordered
dict (state → union-list). An event whose class leaves every active state where it is,
without marking, and starts no run is *inert*: it is skipped without touching the tECS. Batches
find the next non-inert event with NumPy, so only events that can move a run cost Python work.
"""

from __future__ import annotations

import datetime as _dt
import gc
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CeqlError, CeqlInputError
from .match import Ending, Match
from .tecs import insert, merge
from .times import UNITS, exact, from_micros, to_micros, tzinfo_named

if TYPE_CHECKING:
    from ..query import Query

__all__ = ["Evaluator"]

_MISSING = object()
_CHUNK = 2048  # matches enumerated ahead of the consumer
_new = object.__new__
_end_position = attrgetter("end_position")


class _Part:
    """The state of one partition's evaluation."""

    __slots__ = ("T", "epoch", "fifo", "g", "key", "n", "sig")

    def __init__(self, key: tuple[Any, ...], g: int, windowed: bool, epoch: int) -> None:
        self.key = key
        self.T: dict[int, list[Any]] = {}
        self.g = g
        self.n = 0  # events of this partition so far (substream positions)
        self.sig: tuple[int, frozenset[int]] | None = None
        self.fifo: deque[tuple[Any, list[Any]]] | None = deque() if windowed else None
        self.epoch = epoch


class Evaluator:
    """Stateful evaluation of one query over a stream delivered in pieces.

    ``feed`` takes a list of mappings or a ``pyarrow.RecordBatch``/``Table`` and returns the
    matches completed by those events, in stream order; state carries over between calls.
    """

    def __init__(self, query: Query, *, time: str | None = None, type_key: str = "type",
                 stream_key: str = "stream", time_unit: str = "s") -> None:
        if time_unit not in UNITS:
            raise CeqlError(f"Unknown time_unit {time_unit!r}: use one of {', '.join(UNITS)}.")
        self.query = query
        self.time = time
        self.type_key = type_key
        self.stream_key = stream_key
        self.time_unit = time_unit
        self._atoms, self._dfa = query.determinized(type_key, stream_key)
        ast = query.ast
        self._streams = frozenset(ast.streams)
        self._pkeys = ast.partition_by
        self._consume = ast.consume
        self._limit = ast.limit
        w = ast.within
        self._wkind = w.kind if w is not None else None
        self._wattr = w.attr if w is not None else None
        self._wamount = w.amount if w is not None else None
        self._eps: Any = None
        self._time_is_ts: bool | None = None  # decided by the first timed event
        self._tz: _dt.tzinfo | None = None  # timestamps come back as they came in
        self._as_date = False
        if w is not None and w.kind in ("events", "attr"):
            self._eps = exact(w.amount)
        elif w is not None and time is None:
            self._eps = exact(w.amount)  # positions stand for seconds
        self._parts: dict[tuple[Any, ...], _Part] = {}
        self._epoch = 0
        self._offset = 0
        self._last_time: Any = None
        self._last_wattr: Any = None
        self._inert: dict[tuple[int, frozenset[int]], dict[int, bool]] = {}
        self._since_sweep = 0
        self._lcache: dict[tuple[int, ...], tuple[frozenset[str], ...]] = {}

    # ------------------------------------------------------------------ public
    @property
    def events_seen(self) -> int:
        """How many events (rows) have been fed so far."""
        return self._offset

    def feed(self, batch: Any) -> list[Match]:
        """Evaluate the next events; return the matches they complete, in stream order."""
        # The tECS is acyclic, so reference counting frees it; the cyclic collector would
        # only rescan the many young nodes and matches over and over.
        enabled = gc.isenabled()
        gc.disable()
        try:
            out: list[Match] = []
            extend = out.extend
            for chunk in self._chunks(batch):
                extend(chunk)
            return out
        finally:
            if enabled:
                gc.enable()

    def iter_feed(self, batch: Any) -> Iterator[Match]:
        """Like :meth:`feed`, but yield each match as soon as it is enumerated.

        Evaluation pauses while the caller consumes (matches are enumerated ahead in chunks
        of about two thousand); finish (or drop) the iterator before feeding more events.
        """
        for chunk in self._chunks(batch):
            yield from chunk

    def _chunks(self, batch: Any) -> Iterator[list[Match]]:
        """The matches of ``batch`` in stream order, as consecutive non-empty lists."""
        if isinstance(batch, pa.Table):
            for rb in batch.to_batches():
                yield from self._feed_arrow(rb)
        elif isinstance(batch, pa.RecordBatch):
            yield from self._feed_arrow(batch)
        else:
            yield from self._feed_rows(batch)

    # ------------------------------------------------------------------ time handling
    def _decide_time(self, is_ts: bool, where: int) -> None:
        if self._time_is_ts is None:
            self._time_is_ts = is_ts
            if self._wkind == "time" and self.time is not None:
                per_s = 1_000_000 if is_ts else UNITS[self.time_unit]
                assert self._wamount is not None
                self._eps = exact(self._wamount * per_s)
        elif self._time_is_ts != is_ts:
            raise CeqlInputError(
                f"Event {where}: time attribute {self.time!r} mixes timestamps and numbers; "
                "give every event the same kind of time value."
            )

    def _row_time(self, ev: Mapping[str, Any], pos: int) -> Any:
        v = ev.get(self.time, None) if self.time is not None else None
        if v is None or isinstance(v, bool):
            raise CeqlInputError(
                f"Event {pos} has no usable time: attribute {self.time!r} is "
                f"{'missing' if v is None else repr(v)}; every event needs a number or a "
                "timestamp there."
            )
        if isinstance(v, (_dt.date, _dt.datetime)):
            if self._time_is_ts is None:
                self._as_date = not isinstance(v, _dt.datetime)
                self._tz = v.tzinfo if isinstance(v, _dt.datetime) else None
            self._decide_time(True, pos)
            return to_micros(v)
        if isinstance(v, (int, float)) and v == v:
            self._decide_time(False, pos)
            return v
        raise CeqlInputError(
            f"Event {pos} has time {v!r} in attribute {self.time!r}: use a number (seconds, or "
            "the time_unit given) or a datetime."
        )

    def _time_value(self, key: Any) -> Any:
        if self._time_is_ts:
            return from_micros(key, self._tz, self._as_date)
        return key

    def _out_of_order(self, pos: int, prev: Any, now: Any, what: str) -> CeqlInputError:
        if self._time_is_ts and what == "time":
            prev, now = self._time_value(prev), self._time_value(now)
        name = self.time if what == "time" else self._wattr
        return CeqlInputError(
            f"Event {pos} is out of order: {name!r} goes back from {prev!r} to {now!r}. "
            "Sort the events by time first (Query.run(..., sort=True) does it), or fix the data."
        )

    # ------------------------------------------------------------------ partitions
    def _part(self, key: tuple[Any, ...]) -> _Part:
        P = self._parts.get(key)
        if P is None:
            P = _Part(key, self._dfa.g0, self._eps is not None, self._epoch)
            self._parts[key] = P
        return P

    def _sweep(self, now_key: Any) -> None:
        """Drop partitions with nothing left that could ever output."""
        g0 = self._dfa.g0
        eps = self._eps
        timewise = eps is not None and self._wkind != "events"
        dead = []
        for k, P in self._parts.items():
            if P.g != g0:
                continue
            if P.T and timewise and all(now_key - ul[0][1] > eps for ul in P.T.values()):
                P.T = {}
            if not P.T:
                dead.append(k)
        for k in dead:
            del self._parts[k]

    # ------------------------------------------------------------------ inertness
    def _sig(self, P: _Part) -> tuple[int, frozenset[int]]:
        s = P.sig
        if s is None:
            s = P.sig = (P.g, frozenset(P.T))
        return s

    def _inert_for(self, sig: tuple[int, frozenset[int]], c: int) -> bool:
        table = self._inert.get(sig)
        if table is None:
            table = self._inert[sig] = {}
        r = table.get(c)
        if r is None:
            dfa = self._dfa
            g, states = sig
            s = dfa.step(dfa.start(g), c)
            r = (s[0] < 0 and not s[1] and s[2] < 0 and not s[3]
                 and dfa.gstep(g, c) == g
                 and all(dfa.is_inert(d, c) for d in states))
            table[c] = r
        return r

    # ------------------------------------------------------------------ Algorithm 1
    def _step(self, P: _Part, c: int, pos: int, sub: int, wkey: Any,
              tkey: Any) -> list[Any] | None:
        """Read one event; return the accepting tECS nodes to enumerate (None if none)."""
        dfa = self._dfa
        trans = dfa.trans
        eps = self._eps
        fifo = P.fifo
        if P.epoch != self._epoch:  # CONSUME BY ANY fired in another partition
            P.T = {}
            P.epoch = self._epoch
            if fifo:
                fifo.clear()  # nothing in it is reachable any more
        if fifo:
            lim = wkey - eps
            while fifo and fifo[0][0] < lim:
                fifo.popleft()[1][4] = None
        T2: dict[int, list[Any]] = {}
        accs: list[Any] | None = None
        g = P.g
        d = dfa._starts.get(g)
        if d is None:
            d = dfa.start(g)
        # a Step: (marked target, marked accepts, unmarked target, unmarked accepts, label)
        q, acc, q2, acc2, lab = trans[d].get(c) or dfa.step(d, c)
        o: Any
        if q >= 0 or acc or q2 >= 0 or acc2:
            b = (sub, wkey, pos, None, tkey)
            if q >= 0 or acc:
                o = (sub, wkey, pos, b, lab)
                if q >= 0:
                    T2[q] = [o]
                if acc:
                    accs = [o]
            if q2 >= 0:
                t = T2.get(q2)
                if t is None:
                    T2[q2] = [b]
                else:
                    insert(t, b, fifo, wkey)
            if acc2:
                if accs is None:
                    accs = [b]
                else:
                    accs.append(b)
        for p, ul in P.T.items():
            if eps is not None:
                if wkey - ul[0][1] > eps:
                    continue
                while wkey - ul[-1][1] > eps:
                    ul.pop()
            q, acc, q2, acc2, lab = trans[p].get(c) or dfa.step(p, c)
            n = None
            if q >= 0 or acc:
                if len(ul) == 1:
                    n = ul[0]
                elif len(ul) == 2:  # merge() of two, inlined
                    n = ul[0]
                    n = [n[0], n[1], -1, n, ul[1]]
                    if fifo is not None:
                        fifo.append((wkey, n))
                else:
                    n = merge(ul, fifo, wkey)
                o = (n[0], n[1], pos, n, lab)
                if q >= 0:
                    t = T2.get(q)
                    if t is None:
                        T2[q] = [o]
                    elif len(t) == 1:  # what insert() does with a one-node list
                        t.append(o)
                    else:
                        insert(t, o, fifo, wkey)
                if acc:
                    if accs is None:
                        accs = [o]
                    else:
                        accs.append(o)
            if q2 >= 0 or acc2:
                t = T2.get(q2) if q2 >= 0 else None
                if acc2 or t is not None:
                    if n is None:
                        n = ul[0] if len(ul) == 1 else merge(ul, fifo, wkey)
                    if acc2:
                        if accs is None:
                            accs = [n]
                        else:
                            accs.append(n)
                if q2 >= 0:
                    if t is None:
                        T2[q2] = ul
                    elif len(t) == 1:
                        t.append(n)
                    else:
                        insert(t, n, fifo, wkey)
        P.T = T2
        g2 = dfa._gtrans[g].get(c)
        P.g = g2 if g2 is not None else dfa.gstep(g, c)
        P.sig = None
        if accs is None:
            return None
        if eps is not None:
            accs = [a for a in accs if wkey - a[1] <= eps]
            if not accs:
                return None
        if self._consume != "NONE":  # decided before LIMIT cuts, and before enumerating
            P.T = {}
            if fifo:
                fifo.clear()
            if self._consume == "ANY":
                self._epoch += 1
                P.epoch = self._epoch
        return accs

    def _emit(self, P: _Part, accs: list[Any], pos: int, wkey: Any,
              tkey: Any) -> Iterator[list[Match]]:
        """Enumerate the complex events ending at ``pos`` (LIMIT applied), in chunks.

        A depth-first walk of the tECS below each accepting node (left before right, as
        :func:`enumerate_node`), carrying the positions and label ids met so far as tuples
        (latest last), so a match costs its bottom node and one object.
        """
        eps = self._eps if self._eps is not None else float("inf")
        limit = self._limit if self._limit is not None else -1
        if self._time_is_ts:
            end: Ending = (pos, self._time_value(tkey), P.key, (self._tz, self._as_date))
        else:
            end = (pos, tkey, P.key, None)
        lcache = self._lcache
        if len(lcache) > 4096:
            lcache.clear()
        labels = self._dfa.labels
        new = _new
        M = Match
        out: list[Match] = []
        append = out.append
        if limit == 0:
            return
        left = limit  # matches still allowed (-1: no LIMIT)
        cap = _CHUNK if left < 0 else min(_CHUNK, left)
        stack: list[tuple[Any, tuple[int, ...], tuple[int, ...]]] = []
        push = stack.append
        pop = stack.pop
        for node in accs:
            push((node, (), ()))
            while stack:
                n, ps, ls = pop()
                while True:
                    if n[2] < 0:  # union: the right side only if it starts in the window
                        r = n[4]
                        n = n[3]
                        if r is not None and wkey - r[1] <= eps:
                            if n[2] >= 0:  # left a bottom or output: finish it, go right
                                b = n[3]
                                if b is None:
                                    b = n
                                    pl = ps
                                    ll = ls
                                elif b[3] is None:
                                    pl = (n[2],) + ps  # noqa: RUF005 (faster than unpacking)
                                    ll = (n[4],) + ls  # noqa: RUF005
                                else:
                                    push((r, ps, ls))
                                    continue
                                lab = lcache.get(ll)
                                if lab is None:
                                    lab = lcache[ll] = tuple([labels[i] for i in ll])
                                m = new(M)
                                m._start = b
                                m._end = end
                                m.positions = pl
                                m._labels = lab
                                append(m)
                                n = r
                            else:
                                push((r, ps, ls))
                    elif n[3] is None:  # bottom: one complex event
                        lab = lcache.get(ls)
                        if lab is None:
                            lab = lcache[ls] = tuple([labels[i] for i in ls])
                        m = new(M)
                        m._start = n
                        m._end = end
                        m.positions = ps
                        m._labels = lab
                        append(m)
                        break
                    else:  # output: its position and label go before those seen so far
                        ps = (n[2],) + ps  # noqa: RUF005 (faster than unpacking)
                        ls = (n[4],) + ls  # noqa: RUF005
                        n = n[3]
                if len(out) >= cap:
                    if left >= 0:
                        if len(out) >= left:
                            del out[left:]
                            yield out
                            return
                        left -= len(out)
                        cap = min(_CHUNK, left)
                    yield out
                    out = []
                    append = out.append
        if out:
            yield out

    # ------------------------------------------------------------------ row path
    def _feed_rows(self, rows: Iterable[Mapping[str, Any]]) -> Iterator[list[Match]]:
        streams = self._streams
        skey = self.stream_key
        pkeys = self._pkeys
        row_class = self._atoms.row_class
        timed = self.time is not None
        wattr = self._wattr if self._wkind == "attr" else None
        wkind = self._wkind
        for ev in rows:
            pos = self._offset
            self._offset += 1
            st = ev.get(skey)
            if st is not None and st not in streams:
                continue
            if pkeys:
                key = tuple(ev.get(a) for a in pkeys)
                if any(v is None for v in key):
                    continue
            else:
                key = ()
            if timed:
                tkey = self._row_time(ev, pos)
                if self._last_time is not None and tkey < self._last_time:
                    raise self._out_of_order(pos, self._last_time, tkey, "time")
                self._last_time = tkey
            else:
                tkey = pos
            P = self._part(key)
            sub = P.n
            P.n += 1
            if wkind == "events":
                wkey: Any = sub
            elif wattr is not None:
                wkey = ev.get(wattr)
                if wkey is None or isinstance(wkey, bool) or not isinstance(wkey, (int, float)):
                    raise CeqlInputError(
                        f"Event {pos} has no number in attribute {wattr!r}, which WITHIN "
                        f"measures the window on (got {wkey!r})."
                    )
                if self._last_wattr is not None and wkey < self._last_wattr:
                    raise self._out_of_order(pos, self._last_wattr, wkey, "attr")
                self._last_wattr = wkey
            else:
                wkey = tkey
            c = row_class(ev)
            if self._inert_for(self._sig(P), c):
                continue
            accs = self._step(P, c, pos, sub, wkey, tkey)
            if accs:
                yield from self._emit(P, accs, pos, wkey, tkey)
            self._since_sweep += 1
            if self._since_sweep >= 4096:
                self._since_sweep = 0
                self._sweep(wkey)

    # ------------------------------------------------------------------ Arrow path
    def _column(self, rb: pa.RecordBatch, name: str) -> pa.Array | None:
        i = rb.schema.get_field_index(name)
        return None if i < 0 else rb.column(i)

    def _feed_arrow(self, rb: pa.RecordBatch) -> Iterator[list[Match]]:
        n = rb.num_rows
        base = self._offset
        if n == 0:
            return
        # which rows take part: stream in FROM (or none), partition values all present
        keep = np.ones(n, dtype=bool)
        scol = self._column(rb, self.stream_key)
        if scol is not None and scol.null_count < n:
            in_from = pc.is_in(scol.cast(pa.string()), value_set=pa.array(sorted(self._streams)))
            keep &= np.asarray(pc.or_kleene(in_from, pc.is_null(scol)).fill_null(True)
                               .to_numpy(zero_copy_only=False), dtype=bool)
        pcols: list[pa.Array] = []
        for a in self._pkeys:
            col = self._column(rb, a)
            if col is None:
                keep[:] = False
                break
            pcols.append(col)
            keep &= np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), dtype=bool)
        idx = np.flatnonzero(keep)
        self._offset += n
        if idx.size == 0:
            return
        # times (checked for order over the rows that take part)
        tkeys: np.ndarray | None = None
        if self.time is not None:
            tkeys = self._arrow_times(rb, idx, base)
        wkeys_attr: np.ndarray | None = None
        if self._wkind == "attr":
            wkeys_attr = self._arrow_attr_window(rb, idx, base)
        classes = self._atoms.batch_classes(rb)
        uniq, inv = np.unique(np.asarray(classes)[idx], return_inverse=True)
        cls_list = [int(x) for x in uniq.tolist()]
        inv = inv.reshape(-1)
        positions = idx + base
        if not self._pkeys:
            yield from self._run_segment(self._part(()), cls_list, inv, positions, tkeys,
                                         wkeys_attr)
        else:
            codes, keys = self._factorize(pcols, idx)
            run = self._run_interleaved if self._consume == "ANY" else self._run_grouped
            yield from run(codes, keys, cls_list, inv, positions, tkeys, wkeys_attr)
        last = tkeys[-1] if tkeys is not None else positions[-1]
        self._sweep(wkeys_attr[-1] if wkeys_attr is not None else
                    (last if self._wkind != "events" else 0))

    def _arrow_times(self, rb: pa.RecordBatch, idx: np.ndarray, base: int) -> np.ndarray:
        col = self._column(rb, self.time)  # type: ignore[arg-type]
        if col is None:
            raise CeqlInputError(
                f"Event {base} has no usable time: there is no column {self.time!r}; "
                f"columns are {', '.join(rb.schema.names)}."
            )
        t = col.type
        if pa.types.is_timestamp(t) or pa.types.is_date(t):
            if self._time_is_ts is None:
                self._as_date = pa.types.is_date(t)
                tzname = getattr(t, "tz", None)
                self._tz = tzinfo_named(tzname) if tzname else None
            self._decide_time(True, base)
            if pa.types.is_date(t):
                col = col.cast(pa.timestamp("us"))
            col = col.cast(pa.timestamp("us", tz=getattr(t, "tz", None)), safe=False)
            col = col.cast(pa.int64())
        elif pa.types.is_integer(t) or pa.types.is_floating(t):
            self._decide_time(False, base)
        else:
            raise CeqlInputError(
                f"Event {base} has time of type {t} in column {self.time!r}: use a number "
                "(seconds, or the time_unit given) or a timestamp/date column."
            )
        sel = col.take(pa.array(idx))
        if sel.null_count:
            bad = int(idx[np.flatnonzero(np.asarray(pc.is_null(sel)))[0]]) + base
            raise CeqlInputError(
                f"Event {bad} has no usable time: attribute {self.time!r} is missing; every "
                "event needs a number or a timestamp there."
            )
        arr = sel.to_numpy(zero_copy_only=False)
        if arr.dtype.kind == "f" and np.isnan(arr).any():
            bad = int(idx[np.flatnonzero(np.isnan(arr))[0]]) + base
            raise CeqlInputError(f"Event {bad} has time NaN in attribute {self.time!r}.")
        self._check_order(arr, idx, base, "time")
        return np.asarray(arr)

    def _arrow_attr_window(self, rb: pa.RecordBatch, idx: np.ndarray, base: int) -> np.ndarray:
        col = self._column(rb, self._wattr)  # type: ignore[arg-type]
        ok = col is not None and (pa.types.is_integer(col.type) or pa.types.is_floating(col.type))
        sel = col.take(pa.array(idx)) if ok else None  # type: ignore[union-attr]
        if not ok or sel.null_count:  # type: ignore[union-attr]
            bad = base if sel is None else int(
                idx[np.flatnonzero(np.asarray(pc.is_null(sel)))[0]]) + base
            raise CeqlInputError(
                f"Event {bad} has no number in attribute {self._wattr!r}, which WITHIN "
                "measures the window on."
            )
        arr = np.asarray(sel.to_numpy(zero_copy_only=False))  # type: ignore[union-attr]
        self._check_order(arr, idx, base, "attr")
        return arr

    def _check_order(self, arr: np.ndarray, idx: np.ndarray, base: int, what: str) -> None:
        last = self._last_time if what == "time" else self._last_wattr
        if last is not None and arr[0] < last:
            raise self._out_of_order(int(idx[0]) + base, last, arr[0].item(), what)
        if arr.size > 1:
            d = np.flatnonzero(arr[1:] < arr[:-1])
            if d.size:
                k = int(d[0]) + 1
                raise self._out_of_order(int(idx[k]) + base, arr[k - 1].item(), arr[k].item(),
                                         what)
        v = arr[-1].item()
        if what == "time":
            self._last_time = v
        else:
            self._last_wattr = v

    @staticmethod
    def _factorize(pcols: list[pa.Array], idx: np.ndarray) -> tuple[np.ndarray,
                                                                       list[tuple[Any, ...]]]:
        """Partition code per kept row, and the key of each code (vectorized)."""
        take = pa.array(idx)
        codes = np.zeros(idx.size, dtype=np.int64)
        dicts: list[list[Any]] = []
        for col in pcols:
            enc = pc.dictionary_encode(col.take(take))
            if isinstance(enc, pa.ChunkedArray):
                enc = enc.combine_chunks()
            d = enc.dictionary.to_pylist()
            codes = codes * max(len(d), 1) + np.asarray(
                enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
            dicts.append(d)
        uniq, inv = np.unique(codes, return_inverse=True)
        keys: list[tuple[Any, ...]] = []
        for u in uniq.tolist():
            parts = []
            for d in reversed(dicts):
                u, r = divmod(u, max(len(d), 1))
                parts.append(d[r])
            keys.append(tuple(reversed(parts)))
        return inv.reshape(-1).astype(np.int64), keys

    def _run_grouped(self, codes: np.ndarray, keys: list[tuple[Any, ...]], cls_list: list[int],
                     inv: np.ndarray, positions: np.ndarray, tkeys: np.ndarray | None,
                     wattr: np.ndarray | None) -> Iterator[list[Match]]:
        """Partitions are independent: run each one's events as a segment, then merge."""
        order = np.argsort(codes, kind="stable")
        bounds = np.cumsum(np.bincount(codes, minlength=len(keys))).tolist()
        out: list[Match] = []
        start = 0
        for k, end in zip(keys, bounds, strict=True):
            sel = order[start:end]
            start = end
            for chunk in self._run_segment(
                    self._part(k), cls_list, inv[sel], positions[sel],
                    tkeys[sel] if tkeys is not None else None,
                    wattr[sel] if wattr is not None else None):
                out.extend(chunk)
        if out:
            out.sort(key=_end_position)
            yield out

    def _run_interleaved(self, codes: np.ndarray, keys: list[tuple[Any, ...]],
                         cls_list: list[int], inv: np.ndarray, positions: np.ndarray,
                         tkeys: np.ndarray | None,
                         wattr: np.ndarray | None) -> Iterator[list[Match]]:
        """CONSUME BY ANY crosses partitions, so events run in stream order. Only events
        whose class could move the start state or a state active in *some* partition are
        looked at one by one (with ALL-like strategies, whose global state never changes)."""
        n = codes.size
        parts = [self._part(k) for k in keys]
        # substream position of every row: partition's count so far + rank in this batch
        order = np.argsort(codes, kind="stable")
        counts = np.bincount(codes, minlength=len(keys))
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n, dtype=np.int64) - np.repeat(starts, counts)
        base_n = np.asarray([P.n for P in parts], dtype=np.int64)
        subs = (rank + base_n[codes]).tolist()
        for P, c in zip(parts, counts.tolist(), strict=True):
            P.n += c
        code_l = codes.tolist()
        pos_l = positions.tolist()
        t_l = tkeys.tolist() if tkeys is not None else pos_l
        w_l = wattr.tolist() if wattr is not None else None
        events = self._wkind == "events"
        filtering = self._dfa.strategy == "ALL"
        active: dict[int, int] = {}
        for P in parts:
            if P.epoch == self._epoch:
                for d in P.T:
                    active[d] = active.get(d, 0) + 1
        cache: dict[frozenset[int], list[int] | None] = {}
        g0 = self._dfa.g0
        inv_l = inv.tolist()
        inert_tables = self._inert
        step = self._step
        i = 0
        gsig: frozenset[int] | None = None
        looks = skipped = 0
        while i < n:
            rel: list[int] | None = None
            if filtering:
                looks += 1
                if len(cache) > 64 or (looks == 2048 and skipped < 1024):
                    # too many signatures, or too few inert events to pay for the look-ups:
                    # stop filtering (and tracking the active states)
                    filtering = False
                    active = {}
                else:
                    if gsig is None:
                        gsig = frozenset(active)
                    rel = cache.get(gsig, _MISSING)  # type: ignore[arg-type]
                    if rel is _MISSING:
                        sig = (g0, gsig)
                        inert = np.fromiter((self._inert_for(sig, c) for c in cls_list),
                                            dtype=bool, count=len(cls_list))
                        rel = np.flatnonzero(~inert[inv]).tolist() if inert.any() else None
                        cache[gsig] = rel
            if rel is None:
                j = i
            else:
                k = bisect_left(rel, i)
                if k == len(rel):
                    break
                j = rel[k]
                skipped += j - i
            i = j + 1
            P = parts[code_l[j]]
            c = cls_list[inv_l[j]]
            epoch = self._epoch
            if P.epoch != epoch:
                P.T = {}
                P.epoch = epoch
                P.sig = None
                if P.fifo:
                    P.fifo.clear()  # nothing in it is reachable any more
            psig = P.sig
            if psig is None:
                psig = P.sig = (P.g, frozenset(P.T))
            table = inert_tables.get(psig)
            is_inert = table.get(c) if table is not None else None
            if is_inert is None:
                is_inert = self._inert_for(psig, c)
            if is_inert:
                continue
            old = P.T
            sub = subs[j]
            wkey = sub if events else (w_l[j] if w_l is not None else t_l[j])
            accs = step(P, c, pos_l[j], sub, wkey, t_l[j])
            if filtering:
                if self._epoch != epoch:  # consumption emptied every partition
                    active = {}
                else:
                    for d in old:
                        left = active[d] - 1
                        if left:
                            active[d] = left
                        else:
                            del active[d]
                    for d in P.T:
                        active[d] = active.get(d, 0) + 1
                gsig = None
            if accs:
                yield from self._emit(P, accs, pos_l[j], wkey, t_l[j])

    def _run_segment(self, P: _Part, cls_list: list[int], inv: np.ndarray,
                     positions: np.ndarray, tkeys: np.ndarray | None,
                     wattr: np.ndarray | None) -> Iterator[list[Match]]:
        """Run one partition's events of a batch, skipping inert ones with NumPy."""
        n = len(inv)
        sub0 = P.n
        P.n += n
        events = self._wkind == "events"
        # non-inert event indices per active-state signature, as Python lists for bisect
        cache: dict[tuple[int, frozenset[int]], list[int] | None] = {}
        i = 0
        ncls = len(cls_list)
        step = self._step
        # Python lists beat NumPy scalar access once many events need work; sparse
        # workloads keep the arrays and touch only the few events that matter.
        pos_l: Any = positions
        tk_l: Any = tkeys
        wa_l: Any = wattr
        inv_l: Any = inv
        converted = False
        while i < n:
            sig = P.sig
            if sig is None:
                sig = P.sig = (P.g, frozenset(P.T))
            rel: Any = cache.get(sig, _MISSING)
            if rel is _MISSING:
                inert = np.fromiter((self._inert_for(sig, c) for c in cls_list), dtype=bool,
                                    count=ncls)
                rel = np.flatnonzero(~inert[inv]).tolist() if inert.any() else None
                cache[sig] = rel
                if not converted and (rel is None or len(rel) * 16 > n):
                    converted = True
                    pos_l = positions.tolist()
                    tk_l = tkeys.tolist() if tkeys is not None else None
                    wa_l = wattr.tolist() if wattr is not None else None
                    inv_l = inv.tolist()
            if rel is None:
                j = i
            else:
                k = bisect_left(rel, i)
                if k == len(rel):
                    break
                j = rel[k]
            pos = pos_l[j] if converted else int(pos_l[j])
            tkey: Any = pos
            if tk_l is not None:
                tkey = tk_l[j] if converted else tk_l[j].item()
            if events:
                wkey: Any = sub0 + j
            elif wa_l is not None:
                wkey = wa_l[j] if converted else wa_l[j].item()
            else:
                wkey = tkey
            accs = step(P, cls_list[inv_l[j]], pos, sub0 + j, wkey, tkey)
            if accs:
                yield from self._emit(P, accs, pos, wkey, tkey)
            i = j + 1



def make_rows(events: Iterable[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    """Materialize an iterable of events (used when sorting by time)."""
    return list(events)


KeyFn = Callable[[Mapping[str, Any]], Any]
