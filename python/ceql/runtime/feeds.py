"""The loops that feed events to an evaluation: rows one by one, or Arrow batches column-wise.

Both read each event's partition key, time key and class, skip inert events, run Algorithm 1
(:class:`~ceql.runtime.algorithm.Runs`) and enumerate what it accepts. Batches compute classes,
times and partition codes with Arrow/NumPy, then run each partition's events as a segment that
jumps from one non-inert event to the next; CONSUME BY ANY, which crosses partitions, runs a
batch's events in stream order instead.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping
from operator import attrgetter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..constants import CONSUME_ANY, WITHIN_ATTR, WITHIN_EVENTS
from .match import Match
from .partitions import Partition
from .state import Evaluation

__all__ = ["SWEEP_EVERY", "feed_arrow", "feed_rows"]

SWEEP_EVERY = 4096  #: relevant rows between two sweeps of expired partitions (row path)
_MISSING = object()
_end_position = attrgetter("end_position")


# ---------------------------------------------------------------------- rows

def feed_rows(ev: Evaluation, rows: Iterable[Mapping[str, Any]]) -> Iterator[list[Match]]:
    """Evaluate mappings one by one; yield the matches in stream order, in chunks."""
    streams = ev.streams
    skey = ev.stream_key
    pkeys = ev.pkeys
    row_class = ev.atoms.row_class
    clock = ev.clock
    timed = ev.time is not None
    wattr = clock.wattr
    events = ev.wkind == WITHIN_EVENTS
    parts = ev.parts
    inert = ev.inert.inert
    step = ev.runs.step
    emit = ev.enum.emit
    for e in rows:
        pos = ev.offset
        ev.offset += 1
        st = e.get(skey)
        if st is not None and st not in streams:
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
            clock.check_row_time(tkey, pos)
        else:
            tkey = pos
        P = parts.get(key)
        sub = P.n
        P.n += 1
        if events:
            wkey: Any = sub
        elif wattr is not None:
            wkey = clock.row_wattr(e, pos)
        else:
            wkey = tkey
        c = row_class(e)
        if inert(P.signature(), c):
            continue
        accs = step(P, c, pos, sub, wkey, tkey)
        if accs:
            yield from emit(P, accs, pos, wkey, tkey)
        ev.since_sweep += 1
        if ev.since_sweep >= SWEEP_EVERY:
            ev.since_sweep = 0
            ev.sweep(wkey)


# ---------------------------------------------------------------------- Arrow batches

def _column(rb: pa.RecordBatch, name: str | None) -> pa.Array | None:
    i = rb.schema.get_field_index(name) if name is not None else -1
    return None if i < 0 else rb.column(i)


def feed_arrow(ev: Evaluation, rb: pa.RecordBatch) -> Iterator[list[Match]]:
    """Evaluate one Arrow record batch; yield the matches in stream order, in chunks."""
    n = rb.num_rows
    base = ev.offset
    if n == 0:
        return
    # which rows take part: stream in FROM (or none), partition values all present
    keep = np.ones(n, dtype=bool)
    scol = _column(rb, ev.stream_key)
    if scol is not None and scol.null_count < n:
        in_from = pc.is_in(scol.cast(pa.string()), value_set=pa.array(sorted(ev.streams)))
        keep &= np.asarray(pc.or_kleene(in_from, pc.is_null(scol)).fill_null(True)
                           .to_numpy(zero_copy_only=False), dtype=bool)
    pcols: list[pa.Array] = []
    for a in ev.pkeys:
        col = _column(rb, a)
        if col is None:
            keep[:] = False
            break
        pcols.append(col)
        keep &= np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), dtype=bool)
    idx = np.flatnonzero(keep)
    ev.offset += n
    if idx.size == 0:
        return
    # times (checked for order over the rows that take part)
    clock = ev.clock
    tkeys: np.ndarray | None = None
    if ev.time is not None:
        tkeys, decided = clock.arrow_times(_column(rb, ev.time), rb.schema.names, idx, base)
        if decided:
            ev.times_decided()
    wkeys_attr: np.ndarray | None = None
    if ev.wkind == WITHIN_ATTR:
        wkeys_attr = clock.arrow_wattr(_column(rb, clock.wattr), idx, base)
    classes = ev.atoms.batch_classes(rb)
    uniq, inv = np.unique(np.asarray(classes)[idx], return_inverse=True)
    cls_list = [int(x) for x in uniq.tolist()]
    inv = inv.reshape(-1)
    positions = idx + base
    if not ev.pkeys:
        yield from _run_segment(ev, ev.parts.get(()), cls_list, inv, positions, tkeys,
                                wkeys_attr)
    else:
        codes, keys = _factorize(pcols, idx)
        run = _run_interleaved if ev.runs.consume == CONSUME_ANY else _run_grouped
        yield from run(ev, codes, keys, cls_list, inv, positions, tkeys, wkeys_attr)
    last = tkeys[-1] if tkeys is not None else positions[-1]
    ev.sweep(wkeys_attr[-1] if wkeys_attr is not None else
             (last if ev.wkind != WITHIN_EVENTS else 0))


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


def _run_grouped(ev: Evaluation, codes: np.ndarray, keys: list[tuple[Any, ...]],
                 cls_list: list[int], inv: np.ndarray, positions: np.ndarray,
                 tkeys: np.ndarray | None, wattr: np.ndarray | None) -> Iterator[list[Match]]:
    """Partitions are independent: run each one's events as a segment, then merge."""
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=len(keys))).tolist()
    out: list[Match] = []
    start = 0
    for k, end in zip(keys, bounds, strict=True):
        sel = order[start:end]
        start = end
        for chunk in _run_segment(
                ev, ev.parts.get(k), cls_list, inv[sel], positions[sel],
                tkeys[sel] if tkeys is not None else None,
                wattr[sel] if wattr is not None else None):
            out.extend(chunk)
    if out:
        out.sort(key=_end_position)
        yield out


def _run_interleaved(ev: Evaluation, codes: np.ndarray, keys: list[tuple[Any, ...]],
                     cls_list: list[int], inv: np.ndarray, positions: np.ndarray,
                     tkeys: np.ndarray | None,
                     wattr: np.ndarray | None) -> Iterator[list[Match]]:
    """CONSUME BY ANY crosses partitions, so events run in stream order. Only events whose
    class could move the start state or a state active in *some* partition are looked at one
    by one (with strategies whose global state never changes)."""
    n = codes.size
    partitions = ev.parts
    parts = [partitions.get(k) for k in keys]
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
    events = ev.wkind == WITHIN_EVENTS
    inertness = ev.inert
    filtering = ev.dfa.constant_global
    active: dict[int, int] = {}
    for P in parts:
        if P.epoch == partitions.epoch:
            for d in P.states:
                active[d] = active.get(d, 0) + 1
    cache: dict[frozenset[int], list[int] | None] = {}
    g0 = ev.dfa.g0
    inv_l = inv.tolist()
    step = ev.runs.step
    emit = ev.enum.emit
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
                    inert = np.fromiter((inertness.inert(sig, c) for c in cls_list),
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
        epoch = partitions.epoch
        P.catch_up(epoch)
        psig = P.sig
        if psig is None:
            psig = P.sig = (P.g, frozenset(P.states))
        table = inertness.tables.get(psig)
        is_inert = table.get(c) if table is not None else None
        if is_inert is None:
            is_inert = inertness.inert(psig, c)
        if is_inert:
            continue
        old = P.states
        sub = subs[j]
        wkey = sub if events else (w_l[j] if w_l is not None else t_l[j])
        accs = step(P, c, pos_l[j], sub, wkey, t_l[j])
        if filtering:
            if partitions.epoch != epoch:  # consumption emptied every partition
                active = {}
            else:
                for d in old:
                    left = active[d] - 1
                    if left:
                        active[d] = left
                    else:
                        del active[d]
                for d in P.states:
                    active[d] = active.get(d, 0) + 1
            gsig = None
        if accs:
            yield from emit(P, accs, pos_l[j], wkey, t_l[j])


def _run_segment(ev: Evaluation, P: Partition, cls_list: list[int], inv: np.ndarray,
                 positions: np.ndarray, tkeys: np.ndarray | None,
                 wattr: np.ndarray | None) -> Iterator[list[Match]]:
    """Run one partition's events of a batch, skipping inert ones with NumPy."""
    n = len(inv)
    sub0 = P.n
    P.n += n
    events = ev.wkind == WITHIN_EVENTS
    # non-inert event indices per active-state signature, as Python lists for bisect
    cache: dict[tuple[int, frozenset[int]], list[int] | None] = {}
    i = 0
    ncls = len(cls_list)
    inert = ev.inert.inert
    step = ev.runs.step
    emit = ev.enum.emit
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
            sig = P.sig = (P.g, frozenset(P.states))
        rel: Any = cache.get(sig, _MISSING)
        if rel is _MISSING:
            isinert = np.fromiter((inert(sig, c) for c in cls_list), dtype=bool, count=ncls)
            rel = np.flatnonzero(~isinert[inv]).tolist() if isinert.any() else None
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
            yield from emit(P, accs, pos, wkey, tkey)
        i = j + 1
