"""The loops that feed events to an evaluation: rows one by one, or Arrow batches column-wise.

Both read each event's partition key, time key and class, skip inert events, run Algorithm 1
(:class:`~ceql.runtime.algorithm.Runs`) and enumerate what it accepts. Batches compute classes,
times and partition codes with Arrow/NumPy, then run each partition's events as a segment that
jumps from one non-inert event to the next; CONSUME BY ANY, which crosses partitions, runs a
batch's events in stream order instead.
"""

from __future__ import annotations

import reprlib
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence
from operator import attrgetter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..constants import CONSUME_ANY, WITHIN_ATTR, WITHIN_EVENTS
from ..errors import CeqlError, CeqlInputError, CeqlTypeError
from .engine import NO_TAPS, Taps
from .lazy import Rows
from .match import Match
from .partitions import Partition, canonical_key
from .state import Core, Evaluation
from .times import column, show_event

__all__ = ["factorize", "feed_arrow", "feed_rows", "not_an_event", "not_events", "read_batch",
           "row_error", "run_rows", "with_released"]

_MISSING = object()
_end_position = attrgetter("end_position")


# ---------------------------------------------------------------------- rows

def feed_rows(ev: Evaluation, core: Core, rows: Iterable[Mapping[str, Any]],
              taps: Taps = NO_TAPS, reads: bool = False) -> Iterator[Sequence[Match]]:
    """Evaluate mappings one by one with the base engine ``core``; yield the matches in stream
    order, in chunks (with their events when kept: ``taps.kept``). While the evaluation
    listens for strings met with numbers (``ev.mixed``), a row whose class may hide one is
    looked into; ``taps.edges`` sees every row first; ``reads``: the engine's ``step`` takes
    the row (the register runtime reads its values).

    A row inert for a partition that does not exist creates none: it would only count in it,
    and a partition with no run and the initial strategy state starts over like a new one.
    """
    mixed = ev.mixed
    watching = not mixed.done
    plain = mixed.plain
    streams = ev.streams
    skey = ev.stream_key
    names = ev.names  # (types are noticed by class, where inertness is computed)
    seen_streams = names.seen_streams
    stracking = names.tracking_streams
    kept = taps.kept.rows if taps.kept is not None else None
    attach = taps.kept.attach if taps.kept is not None else None
    pkeys = ev.pkeys
    row_class = ev.atoms.row_class
    clock = ev.clock
    timed = ev.time is not None
    wattr = clock.wattr
    events = ev.wkind == WITHIN_EVENTS
    parts = ev.parts
    by_key = parts.by_key
    inertness = core.inert
    inert = inertness.inert
    fresh = inertness.fresh
    step = core.runs.step
    emit = core.enum.emit
    edges = taps.edges
    since = ev.since_sweep
    due, next_key, floor = ev.sweep_rows, ev.sweep_key, ev.sweep_floor
    wkey: Any = 0
    for e in rows:
        pos = ev.offset
        ev.offset += 1
        st = e.get(skey)
        if st is not None:
            if stracking:
                try:
                    if st not in seen_streams:
                        stracking = names.note_stream(st)
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
        if not events:
            wkey = clock.row_wattr(e, pos) if wattr is not None else tkey
        since += 1
        if since >= due or (next_key is not None and wkey >= next_key and since >= floor):
            ev.sweep(wkey)
            since = 0
            due, next_key, floor = ev.sweep_rows, ev.sweep_key, ev.sweep_floor
        c = row_class(e)
        if watching and c not in plain:
            watching = mixed.read_row(c, e, pos)
        if edges is not None:
            if pkeys:
                ck = parts.canonical(key)
                if ck is None:
                    continue
                key = ck
            released = edges.see_row(key, pos, wkey, c, e)
            if released:
                yield released  # their events were attached when they began to wait
        P = by_key.get(key)
        if P is None:
            if inert(fresh, c) and not parts.nan_seen:
                continue
            ck = parts.canonical(key)  # a NaN of another object: NaN equals NaN
            if ck is None:
                continue
            P = by_key.get(ck) if ck is not key else None
            if P is None:
                if inert(fresh, c):
                    continue
                P = parts.get(ck)
        sub = P.n
        P.n = sub + 1
        if events:
            wkey = sub
        if inert(P.signature(), c):
            continue
        if kept is not None:
            kept[pos] = e
        if reads:
            accs = step(P, c, pos, sub, wkey, tkey, e)  # type: ignore[call-arg]
        else:
            accs = step(P, c, pos, sub, wkey, tkey)
        if accs:
            ev.since_sweep = since
            if attach is None:
                yield from emit(P, accs, pos, wkey, tkey)
            else:
                for chunk in emit(P, accs, pos, wkey, tkey):
                    attach(chunk)
                    yield chunk
    ev.since_sweep = since


def chain_rows(ev: Evaluation, rows: Iterable[Mapping[str, Any]]
               ) -> Iterator[tuple[int, tuple[Any, ...], Any, Any, int, Mapping[str, Any]]]:
    """What the chain engines read of each row fed one by one, as :func:`feed_rows` does
    (the row counted, the streams and types it carries noticed, its time checked): for each
    row that takes part (stream in FROM or none, every partition value present), its
    position, canonical partition key, time key, window key (the time key for a window in
    events) and class, and the row."""
    mixed = ev.mixed
    watching = not mixed.done
    plain = mixed.plain
    streams, skey, names = ev.streams, ev.stream_key, ev.names
    pkeys = ev.pkeys
    row_class = ev.atoms.row_class
    clock = ev.clock
    timed = ev.time is not None
    wattr = clock.wattr
    events = ev.wkind == WITHIN_EVENTS
    canonical = ev.parts.canonical
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
        yield pos, key, tkey, wkey, c, e


def not_events(rows: Any) -> CeqlTypeError | None:
    """The error for a batch of events that is not one (None if it may be): a mapping, a
    string, something not iterable, a data frame."""
    if isinstance(rows, Mapping | str | bytes | bytearray) or not isinstance(rows, Iterable):
        one = " (one event? put it in a list)" if isinstance(rows, Mapping) else ""
        return CeqlTypeError(
            "Events must be an iterable of mappings (e.g. a list of dicts) or a pyarrow "
            f"RecordBatch/Table, not {type(rows).__name__}{one}.")
    if type(rows).__name__ == "DataFrame" and hasattr(rows, "columns"):
        return CeqlTypeError(
            "Events must be an iterable of mappings or a pyarrow RecordBatch/Table, not a "
            "DataFrame (iterating one gives its column names): pass "
            "pyarrow.Table.from_pandas(df) or df.to_dict('records').")
    return None


def row_error(ev: Evaluation, rows: Any, base: int, exc: Exception) -> CeqlError | None:
    """What was wrong with ``rows`` (fed from position ``base``) when :func:`feed_rows` raised
    ``exc`` (an ``AttributeError``, ``TypeError`` or ``OverflowError``); None if the events are
    not to blame.

    Diagnosed only after the fact, so the loop pays nothing for it. The loop counts an event
    (``ev.offset``) before it reads it, so the culprit is the last event counted.
    """
    wrong = not_events(rows)
    if wrong is not None:
        return wrong
    pos = ev.offset - 1
    e: Any = _MISSING
    if isinstance(rows, Sequence) and 0 <= pos - base < len(rows):
        e = rows[pos - base]
    elif isinstance(exc, AttributeError) and exc.name == "get":
        e = exc.obj
    if isinstance(exc, OverflowError):
        return _overflow(ev, pos, e)
    if e is _MISSING:
        if isinstance(exc, TypeError) and str(exc).startswith("unhashable type"):
            return CeqlInputError(
                f"Event {pos} has a stream or partition value that cannot be a key ({exc}); "
                "use numbers, strings, booleans or timestamps there.")
        return None
    if not isinstance(e, Mapping):
        return not_an_event(e, pos)
    st = e.get(ev.stream_key)
    if st is not None and not _hashable(st):
        return CeqlInputError(
            f"Event {pos} has {reprlib.repr(st)} in stream attribute {ev.stream_key!r}: a "
            f"stream is a name (a string), not of type {type(st).__name__}.")
    for a in ev.pkeys:
        v = e.get(a)
        if not _hashable(v):
            return CeqlInputError(
                f"Event {pos} has {reprlib.repr(v)} in partition attribute {a!r}: a partition "
                "value must be a number, string, boolean or timestamp, not of type "
                f"{type(v).__name__}.")
    return None


def _overflow(ev: Evaluation, pos: int, e: Any) -> CeqlInputError | None:
    """The error for an integer time or window value beyond what a float holds, met with a
    float one (Python cannot subtract them)."""
    names = [a for a in (ev.time, ev.clock.wattr) if a is not None]
    if not names:
        return None
    shown = f" ({show_event(e)})" if e is not _MISSING else ""
    return CeqlInputError(
        f"Event {pos}{shown}: its {' or '.join(map(repr, names))} cannot be compared with the "
        "others: an integer beyond about 1.8e308 and a float do not subtract. Use numbers "
        "within the float range, or integers only.")


def _hashable(v: object) -> bool:
    try:
        hash(v)  # not just Hashable: Decimal('sNaN') is one, yet refuses
    except TypeError:
        return False
    return True


def not_an_event(e: object, pos: int) -> CeqlInputError:
    """The error for event ``pos``, ``e``, which is not a mapping."""
    return CeqlInputError(
        f"Event {pos} is of type {type(e).__name__}, not a mapping: give each event as a dict "
        "of its attributes, e.g. {'type': 'A', 'price': 10}.")


# ---------------------------------------------------------------------- Arrow batches

def feed_arrow(ev: Evaluation, core: Core, rb: pa.RecordBatch,
               taps: Taps = NO_TAPS) -> Iterator[Sequence[Match]]:
    """Evaluate one Arrow record batch with the base engine ``core``; yield the matches in
    stream order, in chunks (with their events when kept: ``taps.kept``)."""
    kept = taps.kept
    if kept is None:
        yield from _feed_arrow(ev, core, rb, taps)
        return
    attach = kept.attach
    for chunk in _feed_arrow(ev, core, rb, taps):
        attach(chunk)
        yield chunk


def with_released(out: list[Match], released: list[tuple[int, Match]]) -> list[Match]:
    """``out`` (by end position) with each released complex event placed before the matches
    ending at the position that released it."""
    merged: list[Match] = []
    i = 0
    n = len(out)
    for r, m in released:
        while i < n and out[i].end_position < r:
            merged.append(out[i])
            i += 1
        merged.append(m)
    merged += out[i:]
    return merged


def _feed_arrow(ev: Evaluation, core: Core, rb: pa.RecordBatch,
                taps: Taps) -> Iterator[Sequence[Match]]:
    n = rb.num_rows
    base = ev.offset
    read = read_batch(ev, rb, taps)
    if read is None:
        return
    rows, classes = read
    _, _, positions, tkeys, wkeys_attr, pcols, idx = rows
    edges = taps.edges
    if edges is not None:  # before any row runs: the NOTs' events of the whole batch
        ecodes, ekeys = factorize(pcols, idx) if ev.pkeys else (None, None)
        ewk = None
        if ev.wkind != WITHIN_EVENTS:
            ewk = (wkeys_attr if wkeys_attr is not None else tkeys if tkeys is not None
                   else positions)
        edges.see_batch(base, n, positions, np.asarray(classes)[idx], ecodes, ekeys, ewk, rb)
        edge_end = (positions, ewk)
    now: Any = 0  # the window key of the batch's last row that takes part (for sweeping)
    if ev.wkind != WITHIN_EVENTS:
        last = wkeys_attr if wkeys_attr is not None else tkeys if tkeys is not None else positions
        now = last[-1:].tolist()[0]
    if taps.lazy is not None:  # only the rows that can be in a match (see runtime/lazy.py)
        rows = taps.lazy.select(ev.eps, rows, base, base + n) or rows
    yield from run_rows(ev, core, rows)
    if edges is not None:
        edges.end_batch(*edge_end)
    ev.since_sweep += int(idx.size)
    if ev.sweep_due(now):
        ev.sweep(now)


def read_batch(ev: Evaluation, rb: pa.RecordBatch, taps: Taps) -> tuple[Rows, Any] | None:
    """Read one Arrow batch for a base engine: the rows that take part (stream in FROM,
    partition values present) with their classes, positions, times (order checked), window
    attribute values and partition columns, and every row's class; None when no row takes
    part. Counts the batch's rows (``ev.offset``) and hands it to ``taps.kept``."""
    n = rb.num_rows
    base = ev.offset
    if n == 0:
        return None
    seen = ev.names
    # which rows take part: stream in FROM (or none), partition values all present
    keep = np.ones(n, dtype=bool)
    scol = column(rb, ev.stream_key, "the stream")
    if scol is not None and scol.null_count < n:
        try:
            names = scol.cast(pa.string())
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
            raise CeqlInputError(
                f"Column {ev.stream_key!r}, the stream of each event, has type {scol.type} "
                f"(events {base} to {base + n - 1}): a stream is a name (a string).") from None
        if seen.tracking_streams:
            seen.note_streams_column(names)
        in_from = pc.is_in(names, value_set=pa.array(sorted(ev.streams)))
        keep &= np.asarray(pc.or_kleene(in_from, pc.is_null(scol)).fill_null(True)
                           .to_numpy(zero_copy_only=False), dtype=bool)
    pcols: list[pa.Array] = []
    for a in ev.pkeys:
        col = column(rb, a, "PARTITION BY")
        if col is None:
            keep[:] = False
            break
        if pa.types.is_nested(col.type):
            raise CeqlInputError(
                f"Column {a!r}, which PARTITION BY reads, has type {col.type} (events {base} to "
                f"{base + n - 1}): a partition value must be a number, string, boolean or "
                "timestamp.")
        pcols.append(col)
        keep &= np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), dtype=bool)
        if ev.parts.nan_null[len(pcols) - 1] and pa.types.is_floating(col.type):
            keep &= ~np.asarray(pc.is_nan(col).fill_null(False).to_numpy(zero_copy_only=False),
                               dtype=bool)
    idx = np.flatnonzero(keep)
    ev.offset += n
    if taps.kept is not None:
        taps.kept.add_batch(base, rb)
    if idx.size == 0:
        return None
    # times (checked for order over the rows that take part)
    clock = ev.clock
    tkeys: np.ndarray | None = None
    if ev.time is not None:
        tkeys, decided = clock.arrow_times(rb, idx, base)
        if decided:
            ev.times_decided()
    wkeys_attr: np.ndarray | None = None
    if ev.wkind == WITHIN_ATTR:
        wkeys_attr = clock.arrow_wattr(rb, idx, base)
    if not ev.mixed.done:
        ev.mixed.check_batch(rb, idx, base)
    classes = ev.atoms.batch_classes(rb)
    uniq, inv = np.unique(np.asarray(classes)[idx], return_inverse=True)
    cls_list = [int(x) for x in uniq.tolist()]
    if seen.missing_mask:
        seen.note_classes(cls_list)
        if seen.missing_mask and seen.sampling:
            types = column(rb, ev.type_key, None)
            if types is not None and idx.size < n:
                types = types.take(pa.array(idx))
            seen.note_types_column(types, int(idx.size))
    inv = inv.reshape(-1)
    positions = idx + base
    return Rows(cls_list, inv, positions, tkeys, wkeys_attr, pcols, idx), classes


def run_rows(ev: Evaluation, core: Core, rows: Rows) -> Iterator[Sequence[Match]]:
    """Run rows of the batch (rows ``take`` of partition columns ``pcols``), per partition."""
    cls_list, inv, positions, tkeys, wkeys_attr, pcols, take = rows
    if not ev.pkeys:
        yield from _run_segment(ev, core, ev.parts.get(()), cls_list, inv, positions, tkeys,
                                wkeys_attr)
    elif ev.parts.by_key or (moves := _moves_fresh(core, cls_list)[inv]).any():
        codes, keys = factorize(pcols, take)
        sel = _runnable(ev, core, codes, keys, moves if not ev.parts.by_key else None,
                        cls_list, inv)
        if sel is not None:
            codes, inv, positions = codes[sel], inv[sel], positions[sel]
            tkeys = tkeys[sel] if tkeys is not None else None
            wkeys_attr = wkeys_attr[sel] if wkeys_attr is not None else None
        if codes.size:
            run = _run_interleaved if ev.consume == CONSUME_ANY else _run_grouped
            yield from run(ev, core, codes, keys, cls_list, inv, positions, tkeys, wkeys_attr)


def _moves_fresh(core: Core, cls_list: list[int]) -> np.ndarray:
    """Per event class: whether it moves a partition that has seen nothing."""
    inert, fresh = core.inert.inert, core.inert.fresh
    return np.fromiter((not inert(fresh, c) for c in cls_list), dtype=bool,
                       count=len(cls_list))


def _runnable(ev: Evaluation, core: Core, codes: np.ndarray, keys: list[tuple[Any, ...]],
              moves: np.ndarray | None, cls_list: list[int],
              inv: np.ndarray) -> np.ndarray | None:
    """Which rows to run (None: all): not those of a key without a partition before the key's
    first row that moves a fresh one (``moves``, per row, if known); they would only count in
    it (see :func:`feed_rows`)."""
    by_key = ev.parts.by_key
    if by_key:
        missing = np.fromiter((k not in by_key for k in keys), dtype=bool, count=len(keys))
        if not missing.any():
            return None
    else:
        missing = np.ones(len(keys), dtype=bool)
    if moves is None:
        moves = _moves_fresh(core, cls_list)[inv]
    moving = np.flatnonzero(moves)
    first = np.full(len(keys), codes.size, dtype=np.int64)
    if moving.size:
        moved, at = np.unique(codes[moving], return_index=True)
        first[moved] = moving[at]
    sel = ~missing[codes] | (np.arange(codes.size) >= first[codes])
    return None if sel.all() else sel


def factorize(pcols: list[pa.Array], idx: np.ndarray) -> tuple[np.ndarray,
                                                                list[tuple[Any, ...]]]:
    """Partition code per kept row, and the canonical key of each code (vectorized)."""
    take = pa.array(idx)
    codes = np.zeros(idx.size, dtype=np.int64)
    dicts: list[pa.Array] = []
    for col in pcols:
        enc = pc.dictionary_encode(col.take(take))
        if isinstance(enc, pa.ChunkedArray):
            enc = enc.combine_chunks()
        codes = codes * max(len(enc.dictionary), 1) + np.asarray(
            enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        dicts.append(enc.dictionary)
    uniq, inv = np.unique(codes, return_inverse=True)
    columns: list[list[Any]] = []
    for d in reversed(dicts):
        size = max(len(d), 1)
        columns.append(d.take(pa.array(uniq % size)).to_pylist())
        uniq = uniq // size
    columns.reverse()
    keys: list[tuple[Any, ...]] = list(zip(*columns, strict=True))
    codes = inv.reshape(-1).astype(np.int64)
    if any(pa.types.is_floating(d.type) for d in dicts):
        # NaN must equal NaN (one object), and Arrow tells 0.0 from -0.0, Python not
        keys = [canonical_key(k) or () for k in keys]
        if len(set(keys)) < len(keys):
            first: dict[tuple[Any, ...], int] = {}
            merged = np.array([first.setdefault(k, len(first)) for k in keys], dtype=np.int64)
            codes, keys = merged[codes], list(first)
    return codes, keys


def _run_grouped(ev: Evaluation, core: Core, codes: np.ndarray, keys: list[tuple[Any, ...]],
                 cls_list: list[int], inv: np.ndarray, positions: np.ndarray,
                 tkeys: np.ndarray | None, wattr: np.ndarray | None) -> Iterator[Sequence[Match]]:
    """Partitions are independent: run each one's events as a segment, then merge."""
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=len(keys))).tolist()
    out: list[Match] = []
    start = 0
    for k, end in zip(keys, bounds, strict=True):
        if end == start:
            continue  # every row of the key was left out (see _runnable)
        sel = order[start:end]
        start = end
        for chunk in _run_segment(
                ev, core, ev.parts.get(k), cls_list, inv[sel], positions[sel],
                tkeys[sel] if tkeys is not None else None,
                wattr[sel] if wattr is not None else None):
            out.extend(chunk)
    if out:
        out.sort(key=_end_position)
        yield out


def _run_interleaved(ev: Evaluation, core: Core, codes: np.ndarray, keys: list[tuple[Any, ...]],
                     cls_list: list[int], inv: np.ndarray, positions: np.ndarray,
                     tkeys: np.ndarray | None,
                     wattr: np.ndarray | None) -> Iterator[Sequence[Match]]:
    """CONSUME BY ANY crosses partitions, so events run in stream order. Only events whose
    class could move the start state or a state active in *some* partition are looked at one
    by one (with strategies whose global state never changes)."""
    n = codes.size
    partitions = ev.parts
    by_key = partitions.by_key
    # a key's partition is created at its first row (see _runnable) when it has none
    parts: list[Partition | None] = [by_key.get(k) for k in keys]
    # substream position of every row: partition's count so far + rank in this batch
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes, minlength=len(keys))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n, dtype=np.int64) - np.repeat(starts, counts)
    base_n = np.asarray([0 if P is None else P.n for P in parts], dtype=np.int64)
    subs = (rank + base_n[codes]).tolist()
    count_l = counts.tolist()
    for P, c in zip(parts, count_l, strict=True):
        if P is not None:
            P.n += c
    code_l = codes.tolist()
    pos_l = positions.tolist()
    t_l = tkeys.tolist() if tkeys is not None else pos_l
    w_l = wattr.tolist() if wattr is not None else None
    events = ev.wkind == WITHIN_EVENTS
    inertness = core.inert
    # (register runs change their states in place: the active-state counts would not see it)
    filtering = ev.dfa.constant_global and core.plan is None
    active: dict[int, int] = {}
    for P in parts:
        if P is not None and P.epoch == partitions.epoch:
            for d in P.states:
                active[d] = active.get(d, 0) + 1
    cache: dict[frozenset[int], list[int] | None] = {}
    g0 = ev.dfa.g0
    inv_l = inv.tolist()
    step = core.runs.step
    emit = core.enum.emit
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
        code = code_l[j]
        P = parts[code]
        if P is None:
            P = parts[code] = partitions.get(keys[code])
            P.n = count_l[code]
        c = cls_list[inv_l[j]]
        epoch = partitions.epoch
        if P.epoch != epoch:
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


def _run_segment(ev: Evaluation, core: Core, P: Partition, cls_list: list[int], inv: np.ndarray,
                 positions: np.ndarray, tkeys: np.ndarray | None,
                 wattr: np.ndarray | None) -> Iterator[Sequence[Match]]:
    """Run one partition's events of a batch, skipping inert ones with NumPy."""
    n = len(inv)
    sub0 = P.n
    P.n += n
    events = ev.wkind == WITHIN_EVENTS
    # non-inert event indices per active-state signature, as Python lists for bisect
    cache: dict[tuple[int, frozenset[int]], list[int] | None] = {}
    i = 0
    ncls = len(cls_list)
    inert = core.inert.inert
    step = core.runs.step
    emit = core.enum.emit
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
