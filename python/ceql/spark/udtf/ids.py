"""``match_id``: a 64-bit hash of what a match is, so that nothing counts matches.

MATCH_CEQL names a match by its partition key, its events (:attr:`ceql.Match.positions`), each
by its row's values and with the variables it binds, and the first and last events of its
interval (a projection may leave them out). Rows, not positions: a stream does not keep a key's
positions once the key has been idle, and rows no variable can use (dropped before the engine
on one path, kept on another) would move them. So a batch task and a stream give a match the
same id, whatever they kept, and a stream keeps nothing per key for it — an idle key's state
can go. Two matches whose events are equal rows (every column, the time too) under the same
variables are indistinguishable, and share their id.

A row's hash is a sum over its non-NULL columns (a missing column is a NULL one), so the order
of the columns does not matter; numbers, times (µs) and dates (days) are hashed as the float64
of their value, so an integer column and a DOUBLE one holding the same values agree.

MATCH_SPASEQ numbers its matches per partition instead (:func:`ordinal_match_id`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import ceql
from ceql.runtime import MatchArrays, arrays_of, canonical_key

__all__ = ["ids_of", "match_ids", "ordinal_match_id", "partition_seed",
           "partition_seeds", "row_hashes"]

_START = np.uint64(0x5354415254)    # "START": the interval's first event
_END = np.uint64(0x454E44)          # "END": its last
_STRING = np.uint64(0x535452)       # text and bytes, apart from numbers
_P = np.uint64(0x100000001B3)       # the string hash's multiplier (FNV's prime)


def _hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")


def partition_seed(partition: Sequence[Any]) -> int:
    """A 64-bit hash of a partition key's values (empty without partitioning)."""
    return _hash64(json.dumps(list(partition), default=str, separators=(",", ":")))


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


def _number_keys(values: pa.Array) -> Any:
    """A column of numbers, times or dates as the bits of their float64 values."""
    t = values.type
    if pa.types.is_timestamp(t):
        values = pc.cast(pc.cast(values, pa.timestamp("us", tz=t.tz)), pa.int64())
    elif pa.types.is_date(t):
        values = pc.cast(pc.cast(values, pa.date32()), pa.int32())
    elif pa.types.is_boolean(t):
        values = pc.cast(values, pa.int8())
    if values.null_count:
        values = pc.fill_null(values, pa.scalar(0).cast(values.type, safe=False))
    floats = pc.cast(values, pa.float64(), safe=False)  # beyond 2**53: rounded, still a hash
    return (floats.to_numpy(zero_copy_only=False) + 0.0).view(np.uint64)  # -0.0 as 0.0


def _string_keys(values: pa.Array) -> Any:
    """A column of text or bytes hashed by its UTF-8 bytes (vectorised: a polynomial per
    value, then mixed with its length)."""
    if pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type):
        values = pc.cast(values, pa.large_binary())
        width: Any = np.int64
    else:
        values = pc.cast(values, pa.binary())
        width = np.int32
    n = len(values)
    offsets = np.frombuffer(values.buffers()[1], dtype=width)[values.offset:values.offset + n + 1]
    offsets = offsets.astype(np.int64)
    data = values.buffers()[2]
    raw = (np.frombuffer(data, dtype=np.uint8) if data is not None
           else np.zeros(0, np.uint8))[offsets[0]:offsets[-1]].astype(np.uint64)
    starts, lengths = offsets[:-1] - offsets[0], np.diff(offsets)
    out = np.zeros(n, np.uint64)
    if len(raw):
        within = np.arange(len(raw), dtype=np.int64) - np.repeat(starts, lengths)
        with np.errstate(over="ignore"):
            weighted = raw * np.power(_P, within.astype(np.uint64))
            full = lengths > 0
            out[full] = np.add.reduceat(weighted, starts[full])
    with np.errstate(over="ignore"):
        return _mix(out ^ _STRING) + lengths.astype(np.uint64)


def _column_keys(values: pa.Array) -> Any:
    t = values.type
    if any(f(t) for f in (pa.types.is_integer, pa.types.is_floating, pa.types.is_timestamp,
                          pa.types.is_date, pa.types.is_decimal, pa.types.is_boolean)):
        return _number_keys(values)
    if any(f(t) for f in (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary,
                          pa.types.is_large_binary)):
        return _string_keys(values)
    # anything else (lists, structs, …): by the JSON text of each value
    return np.array([_hash64(json.dumps(v, default=str, sort_keys=True))
                     for v in values.to_pylist()], np.uint64)


def row_hashes(rows: pa.Table | pa.RecordBatch) -> Any:
    """A 64-bit hash (uint64) of each row's values, over its non-NULL columns."""
    out = np.zeros(rows.num_rows, np.uint64)
    for name, column in zip(rows.column_names, rows.columns, strict=True):
        values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        if values.null_count == len(values):
            continue
        with np.errstate(over="ignore"):
            h = _mix(_column_keys(values) ^ np.uint64(_hash64(name)))
            if values.null_count:
                h[pc.is_null(values).to_numpy(zero_copy_only=False)] = 0
            out += h
    return out


def ids_of(seeds: np.ndarray, matches: MatchArrays, rows: pa.Table, base: int = 0) -> Any:
    """The ``match_id``s (int64) of ``matches``, whose partition keys' seeds
    (:func:`partition_seed`, uint64) are ``seeds``; ``rows`` holds the events (the columns to
    hash) from engine position ``base`` on."""
    n = len(matches)
    if not n:
        return np.zeros(0, np.int64)
    ends = np.empty((n, 2), np.int64)
    ends[:, 0] = matches.starts
    ends[:, 1] = matches.ends
    ends -= base
    every = np.concatenate([ends.ravel(), *(s.positions.ravel() - base
                                            for s in matches.shapes)])
    unique, where = _distinct(every, rows.num_rows)
    hashed = row_hashes(rows.take(pa.array(unique, pa.int64())))[where]
    edge = hashed[:2 * n].reshape(n, 2)
    acc = np.zeros(n, np.uint64)
    tags: dict[frozenset[str], int] = {}
    at = 2 * n
    with np.errstate(over="ignore"):
        for labels, members, pos in matches.shapes:
            tag = np.array([tags[ls] if ls in tags
                            else tags.setdefault(ls, _hash64("\x00".join(sorted(ls))))
                            for ls in labels], np.uint64)
            mine = hashed[at:at + pos.size].reshape(pos.shape)
            at += pos.size
            acc[members] = _mix(mine ^ tag[None, :]).sum(axis=1, dtype=np.uint64)
        start, end = _mix(edge[:, 0] ^ _START), _mix(edge[:, 1] ^ _END)
        out = _mix(np.asarray(seeds, np.uint64) + _mix(start + _mix(end + _mix(acc))))
    return out.view(np.int64)


def _distinct(rows: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``rows`` (row numbers below ``n``), ascending, and where each
    value of ``rows`` is among them: by a mask over the rows where that is cheaper than a
    sort."""
    if rows.size * 4 < n:
        unique, where = np.unique(rows, return_inverse=True)
        return unique, where.reshape(-1)
    seen = np.zeros(n, bool)
    seen[rows] = True
    rank = np.cumsum(seen, dtype=np.int64) - 1
    return np.flatnonzero(seen), rank[rows]


def partition_seeds(keys: Sequence[pa.Array], n: int) -> Any:
    """The :func:`partition_seed` (uint64) of each of ``n`` rows whose partition key columns
    are ``keys`` (no NULLs): computed once per distinct key."""
    if not keys:
        return np.full(n, partition_seed(()), np.uint64)
    try:
        encoded = [pc.dictionary_encode(k) for k in keys]
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
        values = [tuple(r) for r in zip(*(k.to_pylist() for k in keys), strict=True)]
        seeds: dict[tuple[Any, ...], int] = {}
        return np.array([seeds[v] if v in seeds else seeds.setdefault(
            v, partition_seed(canonical_key(v) or v)) for v in values], np.uint64)
    codes = [np.asarray(e.indices.to_numpy(zero_copy_only=False), np.int64) for e in encoded]
    if len(codes) == 1:  # (one key column: its codes are below its dictionary's length)
        first, where = _distinct(codes[0], len(encoded[0].dictionary))
        unique = first[:, None]
    else:
        unique, where = np.unique(np.column_stack(codes), axis=0, return_inverse=True)
    firsts = [e.dictionary.take(pa.array(unique[:, j])).to_pylist()
              for j, e in enumerate(encoded)]
    per = np.array([partition_seed(canonical_key(v) or v)
                    for v in map(tuple, zip(*firsts, strict=True))], np.uint64)
    return per[where.reshape(-1)]


def match_ids(partition: Sequence[Any], matches: Sequence[ceql.Match],
              rows: Sequence[Mapping[str, Any]] | pa.Table) -> list[int]:
    """The ``match_id``s MATCH_CEQL gives ``matches``, the engine's matches over ``rows``,
    the rows of one partition key (``partition``: its values) in the order read (every column
    of the table MATCH_CEQL reads; a column a row leaves out is NULL)."""
    if isinstance(rows, pa.Table):
        table = rows
    else:
        listed = list(rows)
        names = list(dict.fromkeys(c for r in listed for c in r))
        table = pa.table({c: [r.get(c) for r in listed] for c in names})
    seeds = np.full(len(matches), partition_seed(tuple(partition)), np.uint64)
    return [int(i) for i in ids_of(seeds, arrays_of(matches), table)]
