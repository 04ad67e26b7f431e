"""Arrow input as the rows the MATCH_RECOGNIZE engines read (one mapping per row, pyarrow's
values): ``to_pylist``, except that a timestamp column with a time zone is read as integers and
made into datetimes here — pyarrow builds each such value through the zone, several times
slower than reading the row itself, and Spark sends every TIMESTAMP that way."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa

from ..runtime.times import tzinfo_named

__all__ = ["arrow_rows"]

_UTC_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_PER_UNIT = {"s": 1_000_000, "ms": 1_000, "us": 1}
#: zone names that are UTC all year (a wall clock that moves as the time does)
_UTC_NAMES = frozenset({
    "UTC", "Etc/UTC", "Etc/UCT", "UCT", "Etc/Universal", "Universal", "Etc/Zulu", "Zulu",
    "GMT", "Etc/GMT", "Etc/GMT+0", "Etc/GMT-0", "Etc/GMT0", "GMT0", "GMT+0", "GMT-0",
    "Etc/Greenwich", "Greenwich"})


def arrow_rows(data: Any) -> list[dict[str, object]]:
    """The rows of a pyarrow Table or RecordBatch, as ``data.to_pylist()`` gives them."""
    schema: pa.Schema = data.schema
    zoned = [i for i, f in enumerate(schema)
             if pa.types.is_timestamp(f.type) and f.type.tz is not None
             and f.type.unit in _PER_UNIT]
    if not zoned:
        rows: list[dict[str, object]] = data.to_pylist()
        return rows
    table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
    plain = table
    for i in zoned:
        plain = plain.set_column(i, schema.field(i).name, table.column(i).cast(pa.int64()))
    rows = plain.to_pylist()
    for i in zoned:
        field = schema.field(i)
        name = field.name
        times = _datetimes(table.column(i).cast(pa.int64()).to_pylist(), field.type)
        for row, t in zip(rows, times, strict=True):
            row[name] = t
    return rows


def _datetimes(counts: list[int | None], kind: pa.TimestampType) -> list[dt.datetime | None]:
    """Counts of ``kind``'s unit since the epoch as datetimes in its zone (pyarrow's values)."""
    zone = tzinfo_named(kind.tz)
    per = _PER_UNIT[kind.unit]
    step = dt.timedelta
    if kind.tz in _UTC_NAMES or isinstance(zone, dt.timezone):
        # a fixed offset: the epoch on that wall clock plus the time
        epoch = _UTC_EPOCH.astimezone(zone)
        return [None if c is None else epoch + step(0, 0, c * per) for c in counts]
    return [None if c is None else (_UTC_EPOCH + step(0, 0, c * per)).astimezone(zone)
            for c in counts]
