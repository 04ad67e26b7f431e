"""Output batches bounded by rows and by bytes: the limits a task reads, the bytes of Arrow rows,
and where to cut a run of output rows.

Spark hands every batch a Python task yields to the JVM whole, which allocates it at once; one
batch of a huge answer (2^15 matches of a few kB each) is a gigabyte and ends the executor. So
MATCH_CEQL, MATCH_SPASEQ and match_stream build their output batch by batch, each at most
``spark.sql.execution.arrow.maxRecordsPerBatch`` rows and about
``spark.ceql.output.maxBatchBytes`` bytes (:data:`ceql.spark.conf.OUTPUT_MAX_BATCH_BYTES`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.constants import CONF_OUTPUT_MAX_BATCH_BYTES
from ceql.spark.conf import OUTPUT_MAX_BATCH_BYTES
from ceql.spark.errors import MatchCeqlError

__all__ = ["MAX_RECORDS_CONF", "MAX_SPARK_BYTES_CONF", "BatchLimits", "TooLarge", "cuts",
           "parse_bytes", "row_bytes", "shown_bytes", "shown_query"]

#: Spark's cap on the rows of an Arrow batch (its default 10 000; 0 or less: no cap)
MAX_RECORDS_CONF = "spark.sql.execution.arrow.maxRecordsPerBatch"
#: Spark's cap on the bytes of an Arrow batch (unset by default); the lower of it and ceql's holds
MAX_SPARK_BYTES_CONF = "spark.sql.execution.arrow.maxBytesPerBatch"
_DEFAULT_RECORDS = 10_000
_UNBOUNDED = 2**31 - 1

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "p": 1 << 50, "pb": 1 << 50}
_SIZE = re.compile(r"\s*(\d+)\s*([a-z]*)\s*")


def parse_bytes(text: str, key: str = CONF_OUTPUT_MAX_BATCH_BYTES) -> int:
    """A size as Spark's byte settings read it (``1048576``, ``512k``, ``64m``, ``1g``; a bare
    number is bytes); a positive number of bytes."""
    m = _SIZE.fullmatch(text.lower())
    if m is None or m.group(2) not in _UNITS or int(m.group(1)) <= 0:
        raise MatchCeqlError(
            f"{key} is {text!r}, which is not a size: write a positive number of bytes, "
            "optionally with a unit (1048576, 512k, 64m, 1g).")
    return int(m.group(1)) * _UNITS[m.group(2)]


def shown_query(text: str, most: int = 200) -> str:
    """A query's text on one line, cut to ``most`` characters, for a message."""
    line = " ".join(text.split())
    return line if len(line) <= most else line[:most - 3] + "..."


def shown_bytes(n: float) -> str:
    """``n`` bytes in words: ``812 B``, ``4.0 kB``, ``1.29 GB`` (powers of 1024)."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} B"


@dataclass(frozen=True)
class BatchLimits:
    """At most ``rows`` rows and about ``bytes`` bytes per output batch."""

    rows: int = _DEFAULT_RECORDS
    bytes: int = parse_bytes(str(OUTPUT_MAX_BATCH_BYTES.default))

    @classmethod
    def read(cls, get: Callable[[str], str | None]) -> BatchLimits:
        """The limits from settings read by ``get`` (None: unset, Spark's or ceql's default)."""
        rows_text = get(MAX_RECORDS_CONF)
        rows = int(rows_text) if rows_text else _DEFAULT_RECORDS
        ceql_text = get(CONF_OUTPUT_MAX_BATCH_BYTES)
        size = (parse_bytes(ceql_text) if ceql_text
                else parse_bytes(str(OUTPUT_MAX_BATCH_BYTES.default)))
        spark_text = get(MAX_SPARK_BYTES_CONF)
        if spark_text:
            size = min(size, parse_bytes(spark_text, MAX_SPARK_BYTES_CONF))
        return cls(rows if rows > 0 else _UNBOUNDED, size)

    @classmethod
    def of_task(cls) -> BatchLimits:
        """The limits of the running Spark task: Spark runs each query with the session's SQL
        settings as the job's local properties, which its Python tasks read; the defaults
        outside a task."""
        from pyspark import TaskContext

        ctx = TaskContext.get()
        if ctx is None:
            return cls()
        return cls.read(ctx.getLocalProperty)


class TooLarge(MatchCeqlError):
    """Row ``index`` alone is larger than the byte budget (``size`` bytes); the callers say
    which match that is in their own words."""

    def __init__(self, index: int, size: int, budget: int) -> None:
        super().__init__(f"output row {index} needs about {shown_bytes(size)}, more than "
                         f"{CONF_OUTPUT_MAX_BATCH_BYTES} = {shown_bytes(budget)} allows")
        self.index = index
        self.size = size


def cuts(sizes: Any, limits: BatchLimits) -> list[tuple[int, int]]:
    """Consecutive ``(start, stop)`` slices covering rows of ``sizes`` bytes each, every slice
    at most ``limits.rows`` rows and ``limits.bytes`` bytes, as long as the limits allow
    (greedy); raises :class:`TooLarge` for a row larger than ``limits.bytes`` alone."""
    sizes = np.asarray(sizes, np.int64)
    n = len(sizes)
    total = np.zeros(n + 1, np.int64)
    np.cumsum(sizes, out=total[1:])
    out: list[tuple[int, int]] = []
    start = 0
    while start < n:
        stop = int(np.searchsorted(total, total[start] + limits.bytes, side="right")) - 1
        stop = min(stop, start + limits.rows, n)
        if stop == start:
            raise TooLarge(start, int(sizes[start]), limits.bytes)
        out.append((start, stop))
        start = stop
    return out


def row_bytes(a: pa.Array | pa.ChunkedArray) -> Any:
    """The bytes each row of ``a`` takes in an Arrow batch (an int64 array): its values,
    offsets and nested children; validity bits are left out."""
    if isinstance(a, pa.ChunkedArray):
        parts = [row_bytes(c) for c in a.chunks]
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)
    n = len(a)
    t = a.type
    if n == 0:
        return np.zeros(0, np.int64)
    if pa.types.is_null(t):
        return np.zeros(n, np.int64)
    if pa.types.is_dictionary(t):
        idx = a.indices
        values = row_bytes(a.dictionary)
        taken = values[pc.fill_null(idx, 0).to_numpy(zero_copy_only=False).astype(np.int64)]
        return taken + idx.type.bit_width // 8
    if (pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t)
            or pa.types.is_large_binary(t)):
        lengths = pc.fill_null(pc.binary_length(a), 0).to_numpy(zero_copy_only=False)
        return lengths.astype(np.int64) + (8 if pa.types.is_large_string(t)
                                           or pa.types.is_large_binary(t) else 4)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        offsets = a.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
        child = row_bytes(a.values[int(offsets[0]):int(offsets[-1])])
        total = np.zeros(len(child) + 1, np.int64)
        np.cumsum(child, out=total[1:])
        offsets = offsets - offsets[0]
        return total[offsets[1:]] - total[offsets[:-1]] + (8 if pa.types.is_large_list(t) else 4)
    if pa.types.is_fixed_size_list(t):
        k = t.list_size
        child = row_bytes(a.values[a.offset * k:(a.offset + n) * k])
        return child.reshape(n, k).sum(axis=1) if k else np.zeros(n, np.int64)
    if pa.types.is_struct(t):
        out = np.zeros(n, np.int64)
        for i in range(t.num_fields):
            out += row_bytes(a.field(i))
        return out
    if pa.types.is_boolean(t):
        return np.ones(n, np.int64)
    try:
        width = t.bit_width // 8
    except ValueError:  # a type without a fixed width ceql does not list: its average
        width = -(-a.nbytes // n)
    return np.full(n, width, np.int64)
