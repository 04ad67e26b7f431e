"""``match_id``: a 64-bit hash of what identifies a match, so that nothing counts matches.

MATCH_CEQL names a match by its partition key and its events, each with the variables it binds
(:attr:`ceql.Match.positions` and their labels), and by the first and last events of its
interval (a projection may leave them out). An event is named without its position in the
partition, which a stream does not keep once a key has been idle: by its time and its *tie
rank*, how many earlier rows of its partition key share that time (0 unless times tie). A batch
task and a stream read a key's rows in the same order (time, then ``tie_break``), so both give
a match the same id, and a stream keeps nothing per key for it — an idle key's state can go.

MATCH_SPASEQ numbers its matches per partition instead (:func:`ordinal_match_id`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import ceql

__all__ = ["TieRanks", "ids_of", "match_ids", "ordinal_match_id", "partition_seed", "time_keys"]

_START = np.uint64(0x5354415254)  # "START": the interval's first event
_END = np.uint64(0x454E44)        # "END": its last


def partition_seed(partition: Sequence[Any]) -> int:
    """A 64-bit hash of a partition key's values (empty without partitioning)."""
    key = json.dumps(list(partition), default=str, separators=(",", ":"))
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "big")


def _mix(x: Any) -> Any:
    """SplitMix64's finalizer, elementwise over uint64 (wrapping)."""
    with np.errstate(over="ignore"):
        z = np.asarray(x, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def ordinal_match_id(partition: Sequence[Any], ordinal: int) -> int:
    """MATCH_SPASEQ's ``match_id`` of the ``ordinal``-th match (0-based, output order) of a
    partition: a signed 64-bit hash, the same on every run over the same ordered input."""
    seed = (partition_seed(partition) + ordinal) & ((1 << 64) - 1)
    return int(_mix(np.array([seed], np.uint64)).view(np.int64)[0])


def time_keys(times: pa.Array | pa.ChunkedArray) -> Any:
    """Each time as an int64 that is equal exactly when the times are: timestamps in µs,
    dates in days, integers as they are, floating numbers by their bits (-0.0 as 0.0)."""
    t = times.type
    if pa.types.is_timestamp(t):
        times = pc.cast(pc.cast(times, pa.timestamp("us", tz=t.tz)), pa.int64())
    elif pa.types.is_date(t):
        times = pc.cast(pc.cast(times, pa.date32()), pa.int32())
    elif pa.types.is_decimal(t):
        times = pc.cast(times, pa.float64())
    elif not (pa.types.is_integer(t) or pa.types.is_floating(t)):
        raise TypeError(f"match ids: times of type {t} are not comparable")
    if isinstance(times, pa.ChunkedArray):
        times = times.combine_chunks()
    values = times.to_numpy(zero_copy_only=False)
    if values.dtype.kind == "f":
        return (values.astype(np.float64) + 0.0).view(np.int64)
    return values.astype(np.int64)


class TieRanks:
    """The tie rank of each row fed, batch after batch in the engine's order: how many earlier
    rows of its partition key have the same time. Only the counts at the last time read are
    carried from one batch to the next (rows of one time come together, in time order)."""

    __slots__ = ("_carry", "_last", "_one_key", "_partition")

    def __init__(self, partition: Sequence[str], one_key: bool) -> None:
        self._partition = tuple(partition)
        self._one_key = one_key or not partition  # every row of one partition key
        self._last: int | None = None             # the time key of the last row
        self._carry: dict[tuple[Any, ...], int] = {}  # rows at that time, per partition key

    def ranks(self, rb: pa.RecordBatch, keys: Any) -> Any:
        """The tie ranks (int64) of ``rb``'s rows, whose time keys are ``keys``."""
        n = len(keys)
        if n == 0:
            return np.zeros(0, np.int64)
        first = np.ones(n, dtype=bool)
        first[1:] = keys[1:] != keys[:-1]       # a row starting a run of equal times
        idx = np.arange(n, dtype=np.int64)
        if self._one_key:
            rank = idx - np.maximum.accumulate(np.where(first, idx, 0))
        else:
            rank = self._ranks_by_key(rb, first, idx)
        head = int(np.argmax(first[1:])) + 1 if first[1:].any() else n  # end of the first run
        if self._last is not None and int(keys[0]) == self._last and self._carry:
            rank[:head] += self._carries(rb, 0, head)
        tail = n - 1 - int(np.argmax(first[::-1]))  # start of the last run
        carry = {} if self._last != int(keys[-1]) or tail else dict(self._carry)
        for key, r in zip(self._keys(rb, tail, n), rank[tail:].tolist(), strict=True):
            carry[key] = max(carry.get(key, 0), r + 1)
        self._last, self._carry = int(keys[-1]), carry
        return rank

    def _keys(self, rb: pa.RecordBatch, start: int, end: int) -> list[tuple[Any, ...]]:
        if self._one_key:
            return [()] * (end - start)
        part = rb.slice(start, end - start)
        return list(zip(*(part.column(c).to_pylist() for c in self._partition), strict=True))

    def _carries(self, rb: pa.RecordBatch, start: int, end: int) -> Any:
        return np.array([self._carry.get(k, 0) for k in self._keys(rb, start, end)], np.int64)

    def _ranks_by_key(self, rb: pa.RecordBatch, first: Any, idx: Any) -> Any:
        """Ranks when rows of several partition keys share a run of equal times."""
        codes = np.zeros(len(idx), np.int64)
        for c in self._partition:
            enc = pc.dictionary_encode(rb.column(c)).indices.to_numpy(zero_copy_only=False)
            codes = codes * (int(enc.max()) + 1) + enc.astype(np.int64)
        run = np.cumsum(first)
        order = np.lexsort((idx, codes, run))
        group = np.ones(len(idx), dtype=bool)
        group[1:] = (run[order][1:] != run[order][:-1]) | (codes[order][1:] != codes[order][:-1])
        ranked = idx - np.maximum.accumulate(np.where(group, idx, 0))
        rank = np.empty_like(ranked)
        rank[order] = ranked
        return rank


def _event(keys: Any, ranks: Any, tag: Any) -> Any:
    with np.errstate(over="ignore"):
        return _mix(_mix(keys.view(np.uint64) ^ tag) + ranks.astype(np.uint64))


def _label_tag(labels: frozenset[str]) -> int:
    text = "\x00".join(sorted(labels)).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big")


def ids_of(partitions: Sequence[tuple[Any, ...]], matches: Sequence[ceql.Match], keys: Any,
           ranks: Any, base: int = 0) -> Any:
    """The ``match_id``s (int64) of ``matches``, of the partition keys ``partitions``; ``keys``
    and ``ranks`` are the time keys and tie ranks of the rows from engine position ``base``."""
    n = len(matches)
    seeds: dict[tuple[Any, ...], int] = {}
    seed = np.array([seeds.get(p) or seeds.setdefault(p, partition_seed(p)) for p in partitions],
                    np.uint64)
    starts = np.array([m.start_position for m in matches], np.int64) - base
    ends = np.array([m.end_position for m in matches], np.int64) - base
    acc = np.zeros(n, np.uint64)
    groups: dict[tuple[frozenset[str], ...], list[int]] = {}
    for i, m in enumerate(matches):
        groups.setdefault(m._labels, []).append(i)
    tags: dict[frozenset[str], int] = {}
    with np.errstate(over="ignore"):
        for labels, members in groups.items():
            if not labels:
                continue
            tag = np.array([tags.get(ls) or tags.setdefault(ls, _label_tag(ls)) for ls in labels],
                           np.uint64)
            pos = np.array([matches[i].positions for i in members], np.int64) - base
            acc[members] = _event(keys[pos], ranks[pos], tag[None, :]).sum(axis=1,
                                                                           dtype=np.uint64)
        start = _event(keys[starts], ranks[starts], _START)
        end = _event(keys[ends], ranks[ends], _END)
        out = _mix(seed + _mix(start + _mix(end + _mix(acc))))
    return out.view(np.int64)


def match_ids(partition: Sequence[Any], matches: Sequence[ceql.Match],
              times: Sequence[Any] | pa.Array) -> list[int]:
    """The ``match_id``s MATCH_CEQL gives ``matches``, the engine's matches over the rows of
    one partition key (``partition``: its values) whose times, in the order read, are
    ``times``. A signed 64-bit hash of each match's events (by time and tie rank) and their
    variables: the same on every run over the same ordered input, batch or stream."""
    arr = times if isinstance(times, pa.Array) else pa.array(list(times))
    keys = time_keys(arr)
    ranks = TieRanks((), True).ranks(pa.record_batch([arr], names=["t"]), keys)
    key = tuple(partition)
    return [int(i) for i in ids_of([key] * len(matches), matches, keys, ranks)]
