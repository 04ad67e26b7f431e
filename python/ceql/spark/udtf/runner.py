"""Run one MATCH_CEQL partition: feed Arrow batches to the engine, turn matches into rows.

A :class:`MatchRunner` lives in one task for one partition of the input (or for the whole
input when Spark gives the task a single partition). It keeps the batches of rows a later match
may still report — from the start of the engine's oldest live run on
(:meth:`ceql.Evaluator.oldest_live_position`), and within the query's WITHIN where there is
one — and builds Arrow batches in the output schema that :mod:`ceql.spark.udtf.ceql_plan` derived.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import ceql
from ceql.constants import (
    COLUMN_MATCH_END,
    COLUMN_MATCH_ID,
    COLUMN_MATCH_START,
    COLUMN_VARIABLE,
    CONF_OUTPUT_MAX_BATCH_BYTES,
    INTERNAL_STREAM_COLUMN,
    INTERNAL_TYPE_COLUMN,
    ROWS_EVENTS,
    TIME_UNIT_PER_SECOND,
)
from ceql.runtime import (
    MatchArrays,
    arrays_of,
    concat_arrays,
    cut_arrays,
    flat_positions,
    no_gc,
)
from ceql.spark.errors import MatchCeqlError, TieOrderWarning
from ceql.spark.notices import key_of, said, say
from ceql.spark.udtf.batching import (
    BatchLimits,
    TooLarge,
    cuts,
    row_bytes,
    shown_bytes,
    shown_query,
)
from ceql.spark.udtf.ceql_plan import INTERNAL_TIME_COLUMN, MatchSpec, bound_columns
from ceql.spark.udtf.ids import ids_of, partition_seeds
from ceql.spark.udtf.ties import TieWatch, tie_message
from ceql.spark.udtf.times import read_times, shown_row, spark_shape

__all__ = ["MatchRunner"]

@functools.lru_cache(maxsize=64)
def _tie_key(spec: MatchSpec) -> str:
    """The key of the query's tie warning (one runner per partition key: computed once)."""
    return key_of(repr(spec), TieOrderWarning.__name__)


#: batches of at most this many rows are evaluated row by row
SMALL_BATCH = 16
#: at most about this many events of matches are taken from the engine before their output
#: rows are built (with at most a batch's rows of matches)
CHUNK_POSITIONS = 1 << 18
#: bytes an output row takes beyond its events' values (ids, times, offsets), and per event
_PER_MATCH = 64
_PER_EVENT = 8


class RunnerState(NamedTuple):
    """What a :class:`MatchRunner` needs to continue (a stream's key state keeps it)."""

    engine: bytes                   # the evaluator's snapshot
    kept: list[pa.RecordBatch]      # rows a later match may still report
    base: int                       # engine position of the first kept row
    fed: int                        # rows fed to the engine so far
    where: str                      # the partition, as messages name it
    watching: bool                  # whether ties are still watched for
    last: pa.RecordBatch | None     # the watch's last row


class MatchRunner:
    """The engine over one partition's rows, fed batch by batch (time order)."""

    def __init__(self, spec: MatchSpec, state: RunnerState | None = None) -> None:
        """A runner of ``spec`` from the start, or continuing where ``state`` was saved
        (:meth:`saved`)."""
        self._spec = spec
        with warnings.catch_warnings():  # analyze said them once, on the driver
            warnings.simplefilter("ignore", ceql.CeqlWarning)
            query = ceql.compile(spec.query)
        self._ev = (query.evaluator(time=spec.engine_time, type_key=spec.type_key,
                                    stream_key=spec.stream_key, time_unit=spec.time_unit)
                    if state is None else query.restore(state.engine))
        self._kept: list[pa.RecordBatch] = []
        self._sizes: list[Any] = []  # per kept batch: its rows' bytes (row_bytes), or None
        self._base = 0  # engine position of the first kept row
        self._fed = 0   # rows fed to the engine so far
        self._where = ""
        # rows of equal time that nothing orders: said once per query (see _notices); rows
        # of two partition keys (one task reading several) are ordered by the engine's keys
        self._tie_key = _tie_key(spec)
        self._ties = (TieWatch(spec.engine_time, (*spec.partition, *spec.tie_columns))
                      if spec.tie_columns is not None and not said(self._tie_key) else None)
        if spec.window_seconds is not None:
            per_s = 1_000_000 if spec.time_is_temporal else TIME_UNIT_PER_SECOND[spec.time_unit]
            self._horizon: float | None = spec.window_seconds * per_s
        else:
            self._horizon = None
        if state is not None:
            self._kept = list(state.kept)
            self._sizes = [None] * len(self._kept)
            self._base, self._fed, self._where = state.base, state.fed, state.where
            self._ties = (TieWatch(spec.engine_time, (*spec.partition, *spec.tie_columns),
                                   state.last)
                          if state.watching and spec.tie_columns is not None else None)

    def saved(self) -> RunnerState:
        """What :class:`MatchRunner` needs to continue exactly (between feeds)."""
        return RunnerState(self._ev.snapshot(), list(self._kept), self._base, self._fed,
                           self._where, self._ties is not None,
                           None if self._ties is None else self._ties.last)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # a pickled stream checkpoint of ceql before key state format 1 (read by
        # _state_codec's allow-listed unpickler); the sizes are a cache, recomputed
        state.pop("_ordinals", None)  # older still: ids were counted
        self.__dict__.update(state)
        self._sizes = [None] * len(self._kept)

    # ------------------------------------------------------------------ input
    def _prepare(self, rb: pa.RecordBatch) -> pa.RecordBatch:
        spec = self._spec
        if spec.partition:
            valid = None
            for c in spec.partition:
                v = pc.is_valid(rb.column(c))
                valid = v if valid is None else pc.and_(valid, v)
            if valid is not None and pc.all(valid).as_py() is False:
                rb = rb.filter(valid)  # NULL keys belong to no partition (SEMANTICS.md)
            if spec.spark_partitioned and rb.num_rows and not self._where:
                key = {c: rb.column(c)[0].as_py() for c in spec.partition}
                self._where = f" in partition {key!r}"
        if rb.num_rows == 0:
            return rb
        t = rb.column(spec.time)
        if t.null_count:
            raise MatchCeqlError(
                f"MATCH_CEQL: the time column {spec.time!r} is NULL in {t.null_count} "
                f"row(s){self._where}; every event needs a time. Filter them out first "
                f"(WHERE {spec.time} IS NOT NULL)."
            )
        if spec.time_format is not None:
            rb = self._read_times(rb)
        if spec.type_fill == "table":
            rb = rb.append_column(INTERNAL_TYPE_COLUMN, pa.repeat(pa.scalar(spec.table_name,
                                                                   pa.string()), rb.num_rows))
        elif spec.type_fill == "stream":
            i = rb.schema.get_field_index(spec.type_key)
            filled = pc.coalesce(rb.column(i), rb.column(INTERNAL_STREAM_COLUMN))
            rb = rb.set_column(i, rb.schema.field(i), filled)
        return rb

    def _read_times(self, rb: pa.RecordBatch) -> pa.RecordBatch:
        """``rb`` with the times read from the text of the time column (option time_format)."""
        spec = self._spec
        assert spec.time_format is not None
        shape = spark_shape(spec.time_pattern) if spec.time_pattern is not None else None
        read = read_times(rb.column(spec.time), spec.time_format, shape)
        if read.times is None:
            i = read.bad_row
            assert i is not None
            raise MatchCeqlError(
                f"MATCH_CEQL{self._where}: the time column {spec.time!r} holds "
                f"{rb.column(spec.time)[i].as_py()!r}, which does not match time_format "
                f"{spec.time_pattern!r} (read as strptime's {spec.time_format!r}); the row: "
                f"{shown_row(rb, i)}.")
        return rb.append_column(INTERNAL_TIME_COLUMN, read.times)

    def feed(self, rb: pa.RecordBatch, limits: BatchLimits | None = None
             ) -> Iterator[pa.RecordBatch]:
        """Evaluate the next rows of the partition; yield the output rows they complete, in
        batches within ``limits`` (the task's: :meth:`BatchLimits.of_task`), built as the
        engine enumerates the matches. Consume it whole before the next call."""
        rb = self._prepare(rb)
        if rb.num_rows == 0:
            return
        if self._ties is not None:
            self._watch_ties(rb)
        self._kept.append(rb)
        self._sizes.append(None)
        self._fed += rb.num_rows
        # A few rows (a partition key with few events: one runner each) cost less as rows
        # than the Arrow path's fixed cost per batch; both give the same matches.
        yield from self._batches(
            self._engine(self._ev.feed_chunks(rb.to_pylist() if rb.num_rows <= SMALL_BATCH
                                              else rb)), limits)
        self._forget()

    def _engine(self, chunks: Iterator[Sequence[ceql.Match]]
                ) -> Iterator[Sequence[ceql.Match]]:
        """``chunks``, the engine's errors (bad data) told as MATCH_CEQL's."""
        try:
            yield from chunks
        except ceql.CeqlError as e:
            raise MatchCeqlError(f"MATCH_CEQL{self._where}: {self._spark_words(str(e))}") from None

    def _watch_ties(self, rb: pa.RecordBatch) -> None:
        assert self._ties is not None
        spec = self._spec
        tied = self._ties.find(rb)
        if tied is None:
            return
        self._ties = None
        assert spec.tie_columns is not None
        say(self._tie_key, TieOrderWarning,
            tie_message(self._where, spec.time, tied[0].get(spec.engine_time),
                        spec.tie_columns, tied, (*spec.partition, spec.engine_time)))

    def close(self, limits: BatchLimits | None = None) -> Iterator[pa.RecordBatch]:
        """The partition's rows ended: the output rows of the matches that waited for time
        to pass (a trailing NOT), in batches within ``limits`` (as :meth:`feed`)."""
        yield from self._batches([self._ev.close()], limits)

    def advance(self, time: Any, limits: BatchLimits | None = None) -> Iterator[pa.RecordBatch]:
        """No row still to come is older than ``time`` (a stream's watermark): the output rows
        of the matches that makes final (a trailing NOT waits for time to pass), in batches
        within ``limits`` (as :meth:`feed`)."""
        try:
            matches = self._ev.advance(time)
        except ceql.CeqlError as e:
            raise MatchCeqlError(f"MATCH_CEQL{self._where}: {self._spark_words(str(e))}") from None
        yield from self._batches([matches], limits)
        self._forget()

    def waiting_until(self) -> Any:
        """The time after which the first match waiting for time to pass is final (None: no
        match waits); see :meth:`ceql.Evaluator.waiting_until`."""
        return self._ev.waiting_until()

    @property
    def fed(self) -> int:
        """How many rows the engine has evaluated."""
        return self._fed

    def _spark_words(self, message: str) -> str:
        """An engine message as a MATCH_CEQL user reads it: the time column by its own name,
        and Spark's ordering instead of Python's ``sort=True``."""
        spec = self._spec
        if spec.engine_time != spec.time:
            message = message.replace(repr(spec.engine_time), repr(spec.time))
        return message.replace(
            "Sort the events by time first (Query.run(..., sort=True) does it), or fix the data.",
            "MATCH_CEQL reads each partition in time order (ties by tie_break): fix the data so "
            "that it does not go back in that order.")

    @property
    def retained_rows(self) -> int:
        """How many input rows the runner holds for matches still to come."""
        return sum(b.num_rows for b in self._kept)

    def _forget(self) -> None:
        """Drop kept batches whose rows no later match can include: those before the oldest
        run the engine still holds, or (WITHIN) out of every later match's window — unless a
        match waits for a trailing NOT: it is reported later with its events, however old the
        rows read since make them look (rows of other streams move no window)."""
        low = self._ev.oldest_live_position()
        waiting = self._ev.waiting > 0
        while self._kept:
            first = self._kept[0]
            if self._base + first.num_rows > low and (waiting
                                                      or not self._outside_window(first)):
                break
            self._base += first.num_rows
            self._kept.pop(0)
            self._sizes.pop(0)

    def _outside_window(self, first: pa.RecordBatch) -> bool:
        """Whether WITHIN keeps every row of ``first`` out of any later match."""
        spec = self._spec
        if self._horizon is not None:
            last = _time_number(self._kept[-1].column(spec.engine_time)[-1])
            return _time_number(first.column(spec.engine_time)[-1]) < last - self._horizon
        if spec.window_events is not None:
            return self._base + int(first.num_rows) <= self._fed - spec.window_events - 1
        return False

    # ------------------------------------------------------------------ output
    def _batches(self, chunks: Iterable[Sequence[ceql.Match]], limits: BatchLimits | None
                 ) -> Iterator[pa.RecordBatch]:
        """The output rows of the engine's chunks of matches in batches within ``limits``:
        matches are taken from the engine as arrays (:func:`ceql.runtime.arrays_of`; no object
        per match where the engine gives none) a chunk at a time (at most a batch's rows, and
        about :data:`CHUNK_POSITIONS` events), each chunk cut by the rows' sizes before any of
        its values is copied.

        The cyclic collector is off while the engine and this code work, as in
        :meth:`ceql.Evaluator.feed` (it would rescan the engine's many young objects at every
        batch), and on while Spark's code consumes a batch."""
        if limits is None:
            limits = BatchLimits.of_task()
        for arrays in _taken(chunks, limits.rows):
            with no_gc():
                slices, build = self._plan(arrays, limits)
            for start, stop in slices:
                with no_gc():
                    rb = build(start, stop)
                yield rb

    def _row_sizes(self) -> Any:
        """The bytes of each kept row's event columns (cached per kept batch)."""
        columns = self._spec.event_columns
        for i, rb in enumerate(self._kept):
            if self._sizes[i] is None:
                sizes = np.full(rb.num_rows, _PER_EVENT, np.int64)
                for c in columns:
                    sizes += row_bytes(rb.column(c))
                self._sizes[i] = sizes
        return np.concatenate(self._sizes) if len(self._sizes) > 1 else self._sizes[0]

    def _plan(self, matches: MatchArrays, limits: BatchLimits
              ) -> tuple[list[tuple[int, int]], Callable[[int, int], pa.RecordBatch]]:
        """The output rows of ``matches`` as slices within ``limits`` (by the rows' sizes,
        before any value is copied) and the function that builds the batch of a slice."""
        spec = self._spec
        table = pa.Table.from_batches(self._kept)
        base = self._base
        flat, offsets = flat_positions(matches)
        flat -= base
        per_event = self._row_sizes()[flat]
        overhead = _PER_MATCH + 16 * len(spec.bounds)
        if spec.rows == ROWS_EVENTS:
            sizes = per_event + overhead
        else:
            total = np.zeros(len(flat) + 1, np.int64)
            np.cumsum(per_event, out=total[1:])
            sizes = total[offsets[1:]] - total[offsets[:-1]] + overhead
        try:
            slices = cuts(sizes, limits)
        except TooLarge as e:
            owner = (int(np.searchsorted(offsets, e.index, side="right")) - 1
                     if spec.rows == ROWS_EVENTS else e.index)
            raise self._too_large(matches, owner, table, e.size, limits) from None
        fixed = self._match_columns(matches, table)
        events = table.select(list(spec.event_columns))
        names = list(spec.output_names)
        if spec.rows == ROWS_EVENTS:
            types = table.column(spec.type_key)
            rows = _event_rows(matches, flat, offsets, spec.variables, types)

            def build_events(start: int, stop: int) -> pa.RecordBatch:
                cols = _event_slice(rows, start, stop, fixed, events)
                return pa.RecordBatch.from_arrays([cols[n] for n in names], names=names)

            return slices, build_events

        def build_matches(start: int, stop: int) -> pa.RecordBatch:
            cols = {k: v.slice(start, stop - start) for k, v in fixed.items()}
            cols.update(_variable_lists(cut_arrays(matches, start, stop), spec.variables,
                                        base, events))
            return pa.RecordBatch.from_arrays([cols[n] for n in names], names=names)

        return slices, build_matches

    def _match_columns(self, matches: MatchArrays, table: pa.Table) -> dict[str, pa.Array]:
        """The columns with one value per match: its id, start, end, bounds and partition."""
        spec = self._spec
        base = self._base
        starts = pa.array(matches.starts - base, pa.int64())
        ends = pa.array(matches.ends - base, pa.int64())
        parts = {c: _flat(table.column(c).take(ends)) for c in spec.partition}
        seeds = partition_seeds(list(parts.values()), len(matches))
        events = table.select(list(spec.event_columns))
        ids = ids_of(seeds, matches, events, base)  # what each match is: nothing counted
        time = table.column(spec.engine_time)
        cols: dict[str, pa.Array] = {
            COLUMN_MATCH_ID: pa.array(ids, pa.int64()),
            COLUMN_MATCH_START: _flat(time.take(starts)),
            COLUMN_MATCH_END: _flat(time.take(ends)),
        }
        for c in spec.bounds:
            first, last = bound_columns(c)
            cols[first] = _flat(table.column(c).take(starts))
            cols[last] = _flat(table.column(c).take(ends))
        if spec.rows != ROWS_EVENTS:
            cols.update(parts)
        return cols

    def _too_large(self, matches: MatchArrays, i: int, table: pa.Table, size: int,
                   limits: BatchLimits) -> MatchCeqlError:
        """The error for match ``i`` of ``matches``, whose one output row exceeds the byte
        budget."""
        spec = self._spec
        end = int(matches.ends[i]) - self._base
        key = {c: table.column(c)[end].as_py() for c in spec.partition}
        time = table.column(spec.engine_time)
        where = f" in partition {key!r}" if key else ""
        one = ("one of its rows (an event's)" if spec.rows == ROWS_EVENTS
               else "its one output row")
        instead = ("" if spec.rows == ROWS_EVENTS
                   else ", or rows => 'events' (a row per event of a match)")
        return MatchCeqlError(
            f"MATCH_CEQL: a match of the query {shown_query(spec.query)!r}{where} (from "
            f"{time[int(matches.starts[i]) - self._base].as_py()!r} to "
            f"{time[end].as_py()!r}, {int(matches.lengths()[i])} events) needs about "
            f"{shown_bytes(size)} for {one}, more than an output batch may hold "
            f"({CONF_OUTPUT_MAX_BATCH_BYTES} = {shown_bytes(limits.bytes)}). Raise "
            f"{CONF_OUTPUT_MAX_BATCH_BYTES} (e.g. SET {CONF_OUTPUT_MAX_BATCH_BYTES}=1g) if "
            "the executors have that memory to spare, or make the matches smaller: a shorter "
            f"WITHIN, SELECT fewer variables{instead}.")


def _taken(chunks: Iterable[Sequence[ceql.Match]], rows: int) -> Iterator[MatchArrays]:
    """The engine's matches as arrays, in pieces of at most ``rows`` matches that hold about
    :data:`CHUNK_POSITIONS` events (a piece ends with the match that reaches it)."""
    pending: list[MatchArrays] = []
    count = events = 0
    for chunk in chunks:
        if not len(chunk):
            continue
        with no_gc():
            a = arrays_of(chunk)
        pending.append(a)
        count += len(a)
        events += int(a.lengths().sum())
        while pending and (count >= rows or events >= CHUNK_POSITIONS):
            whole = concat_arrays(pending)
            ends = np.cumsum(whole.lengths())
            stop = min(rows, int(np.searchsorted(ends, CHUNK_POSITIONS)) + 1, len(whole))
            yield cut_arrays(whole, 0, stop)
            pending = [cut_arrays(whole, stop, len(whole))] if stop < len(whole) else []
            count = len(whole) - stop
            events = int(ends[-1] - ends[stop - 1])
    if pending:
        yield concat_arrays(pending)


class _EventRows(NamedTuple):
    """The rows of ``rows => 'events'`` for a chunk of matches: per row its kept row, the
    index of its match and the variable shown (an index into ``names``, -1: none)."""

    rows: Any
    owner: Any
    shown: Any
    names: list[str]


def _event_rows(matches: MatchArrays, flat: Any, offsets: Any, variables: Sequence[str],
                types: pa.ChunkedArray) -> _EventRows:
    """One row per (match, event), in order (``flat``: the rows of the matches' events one
    after the other, ``offsets``: where each match's begin). The variable shown for an event
    is the first of its labels (in the order of ``variables``) that is not its event type's
    bare name, or that name when it is the only label."""
    order = {v: i for i, v in enumerate(variables)}
    lengths = np.diff(offsets)
    owner = np.repeat(np.arange(len(matches), dtype=np.int64), lengths)
    shown = np.full(flat.size, -1, np.int64)
    names: list[str] = []
    index: dict[str, int] = {}

    def named(v: str) -> int:
        if v not in index:
            index[v] = len(names)
            names.append(v)
        return index[v]

    kinds: Any = None
    for labels, members, _ in matches.shapes:
        at = offsets[members]
        for k, ls in enumerate(labels):
            if not ls:
                continue
            ranked = sorted(ls, key=lambda v: (order.get(v, len(order)), v))
            rows_k = at + k
            shown[rows_k] = named(ranked[0])
            if len(ranked) > 1:  # the first is shown unless it is the event's type
                if kinds is None:
                    kinds = np.asarray(_flat(types.take(pa.array(flat, pa.int64())))
                                       .to_numpy(zero_copy_only=False), object)
                typed = kinds[rows_k] == ranked[0]
                shown[rows_k[typed]] = named(ranked[1])
    return _EventRows(flat, owner, shown, names)


def _event_slice(rows: _EventRows, start: int, stop: int, fixed: dict[str, pa.Array],
                 events: pa.Table) -> dict[str, pa.Array]:
    """The columns of event rows ``start:stop``: the match columns repeated, the variable
    name, the event's columns."""
    idx = pa.array(rows.rows[start:stop], pa.int64())
    who = pa.array(rows.owner[start:stop], pa.int64())
    out = {k: v.take(who) for k, v in fixed.items()}
    shown = rows.shown[start:stop]
    out[COLUMN_VARIABLE] = pa.array([*rows.names, None], pa.string()).take(
        pa.array(np.where(shown < 0, len(rows.names), shown), pa.int64()))
    taken = events.take(idx)
    for name in events.column_names:
        out[name] = _flat(taken.column(name))
    return out


def _variable_lists(matches: MatchArrays, variables: Sequence[str], base: int,
                    events: pa.Table) -> dict[str, pa.Array]:
    """One list<struct> column per variable: each match's events of it, in time order.

    Matches whose events carry equal labels form a shape (:class:`ceql.runtime.MatchArrays`):
    the positions of a shape are one 2-D array, and each variable takes fixed columns of it.
    This is :attr:`ceql.Match.variables` for a whole chunk at once.
    """
    n = len(matches)
    plans = [(members, {v: [k for k, vs in enumerate(labels) if v in vs] for v in variables},
              positions - base)
             for labels, members, positions in matches.shapes]
    out: dict[str, pa.Array] = {}
    for v in variables:
        lengths = np.zeros(n, np.int64)
        for members, cols, _ in plans:
            lengths[members] = len(cols[v])
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat = np.empty(int(offsets[-1]), np.int64)
        for members, cols, positions in plans:
            k = len(cols[v])
            if k:
                slots = offsets[members][:, None] + np.arange(k)
                flat[slots] = positions[:, cols[v]]
        values = _flat(events.take(pa.array(flat, pa.int64())).to_struct_array())
        out[v] = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32), pa.int32()), values)
    return out


def _flat(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    return a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a


def _time_number(s: pa.Scalar) -> float:
    """A time scalar as a number: microseconds for timestamps and dates, else its value."""
    if pa.types.is_timestamp(s.type):
        return float(s.cast(pa.timestamp("us", tz=s.type.tz)).cast(pa.int64()).as_py())
    if pa.types.is_date(s.type):
        return float(s.cast(pa.date32()).cast(pa.int32()).as_py()) * 86_400_000_000
    return float(s.as_py())
