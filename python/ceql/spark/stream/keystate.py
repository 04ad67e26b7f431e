"""One key of a stream — MATCH_CEQL's or MATCH_RECOGNIZE's: rows held until the watermark passes
them, the engine between micro-batches, and when the key must wake up.

The engine is the plan's :class:`EngineKind`: :class:`CeqlEngine` (a
:class:`~ceql.spark.udtf.runner.MatchRunner`) or MATCH_RECOGNIZE's
(:class:`ceql.spark.stream.recognize.RecognizeEngine`); either is a :class:`StreamEngine` —
rows fed in order, time advanced, the time it waits for — and the state codec saves it.

Pure Python over Arrow (no Spark session): the streaming operator
(:mod:`ceql.spark.stream.operator`) keeps one :class:`KeyState` per group key in Spark's state
store (as bytes of :mod:`ceql.spark.stream.state_codec`'s format), and calls it with each
micro-batch's rows and watermark; tests drive it directly with random cuts and compare with the
batch runner.

Times are compared on one scale, microseconds since the epoch (:data:`TIME_US`, a column Spark
computes beside the rows, and the watermark): a row is *late* when its time is below the
watermark as it arrives, and held rows are evaluated, in time order, once the watermark passes
them. Rows not yet passed all have later times than those evaluated, so the engine reads each
key's rows in exactly the batch order (by :attr:`StreamPlan.order` and ``tie_break``, then by
arrival).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, NamedTuple, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.constants import (
    INTERNAL_PREFIX,
    STRATEGY_ALL,
    STRATEGY_ANY,
    STRATEGY_STRICT,
    TIME_UNIT_PER_SECOND,
)
from ceql.spark.errors import MatchCeqlError
from ceql.spark.udtf.batching import BatchLimits
from ceql.spark.udtf.ceql_plan import MatchSpec
from ceql.spark.udtf.runner import MatchRunner

__all__ = ["TIME_US", "CeqlEngine", "EngineKind", "KeyState", "SortKey", "StreamEngine",
           "StreamPlan", "stream_plan", "time_us_of"]

#: The column with each row's event time in microseconds since the epoch (LONG).
TIME_US = INTERNAL_PREFIX + "us"
_ARRIVAL = INTERNAL_PREFIX + "arrival"
_NULL = INTERNAL_PREFIX + "null_"
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


class StreamEngine(Protocol):
    """A key's engine between micro-batches: rows fed in order, time moved on."""

    @property
    def fed(self) -> int:
        """How many rows the engine has evaluated."""
        ...

    def feed(self, rb: pa.RecordBatch, limits: BatchLimits | None = None
             ) -> Iterator[pa.RecordBatch]:
        """Evaluate the next rows; yield the output rows they make final."""
        ...

    def advance(self, time: Any, limits: BatchLimits | None = None
                ) -> Iterator[pa.RecordBatch]:
        """No row still to come is older than ``time``: yield the output rows that makes
        final."""
        ...

    def waiting_until(self) -> Any:
        """The time after which :meth:`advance` makes an output final (None: nothing waits)."""
        ...


class EngineKind(Protocol):
    """What the keys of a stream run (shipped from the driver to every task)."""

    @property
    def label(self) -> str:
        """The table function messages name (``MATCH_CEQL``, ``MATCH_RECOGNIZE_TABLE``)."""
        ...

    @property
    def time(self) -> str:
        """The time column, as the input spells it."""
        ...

    def start(self) -> StreamEngine:
        """A new engine, before any row."""
        ...


@dataclass(frozen=True)
class CeqlEngine:
    """MATCH_CEQL's engine kind: a :class:`~ceql.spark.udtf.runner.MatchRunner` of ``spec``."""

    spec: MatchSpec
    label: str = "MATCH_CEQL"

    @property
    def time(self) -> str:
        """The query's time column."""
        return self.spec.time

    def start(self) -> MatchRunner:
        """A runner from the start."""
        return MatchRunner(self.spec)


class SortKey(NamedTuple):
    """A column ordering the held rows after the time (MATCH_RECOGNIZE's later ORDER BY
    keys), as Spark orders it."""

    column: str
    descending: bool = False
    nulls_first: bool = True


@dataclass(frozen=True)
class StreamPlan:
    """What every key of one streaming query shares (built once, on the driver)."""

    engine: EngineKind
    timestamp: bool                 # the time column is a TIMESTAMP (else a number)
    us_per_unit: Fraction           # a numeric time's unit, in microseconds
    window_us: Fraction | None      # WITHIN in time, in microseconds (None: not in time)
    tie_break: tuple[str, ...]      # columns ordering rows of equal time
    columns: tuple[str, ...]        # the input columns the engine reads
    buckets: int = 0                # keys hashed into this many entries (0: one per key)
    #: whether an engine idle past its window may be dropped: not under NEXT, LAST and MAX,
    #: which rank matches before WITHIN applies, so that runs older than the window still
    #: decide which of the later matches is selected
    drop_idle: bool = True
    #: the watermark's delay (ms) when it is the stream's only watermark (else None): a key's
    #: a key's rows are then released once a row ``delay`` later has arrived (in a micro-batch
    #: that calls the key), a micro-batch before Spark's watermark (computed from earlier
    #: micro-batches) gets there
    delay_ms: int | None = None
    #: columns ordering rows of equal time before ``tie_break`` (nulls placed as each says)
    order: tuple[SortKey, ...] = ()

    def time_value(self, us: int) -> Any:
        """The engine's time for ``us`` microseconds: a datetime, or a number in the unit
        (rounded down: a promise about later rows must not overshoot)."""
        if self.timestamp:
            return _EPOCH + _dt.timedelta(microseconds=us)
        exact = Fraction(us) / self.us_per_unit
        if exact.denominator == 1:
            return int(exact)
        f = float(exact)
        return f if Fraction(f) <= exact else float(np.nextafter(f, -np.inf))

    def to_us(self, value: Any) -> Fraction:
        """An engine time as microseconds (exact)."""
        if isinstance(value, _dt.datetime):
            return Fraction((value - _EPOCH) // _dt.timedelta(microseconds=1))
        return Fraction(value) * self.us_per_unit


def time_us_of(plan: StreamPlan, times: pa.Array) -> pa.Array:
    """:data:`TIME_US` for a time column, as Spark computes it (numbers: rounded down)."""
    if plan.timestamp:
        return pc.cast(pc.cast(times, pa.timestamp("us", tz="UTC")), pa.int64())
    values = np.asarray(times.to_numpy(zero_copy_only=False), dtype=np.float64)
    return pa.array(np.floor(values * float(plan.us_per_unit)).astype(np.int64))


def _watermark_us(watermark_ms: int) -> int | None:
    """The watermark in microseconds; None before the first one (Spark starts at 0)."""
    return watermark_ms * 1000 if watermark_ms > 0 else None


class KeyState:
    """A key's rows and engine between micro-batches (kept in Spark's state store)."""

    __slots__ = ("arrivals", "buckets", "held", "last_us", "late", "newest_us", "released_us",
                 "runner", "timers")

    def __init__(self, buckets: int = 0) -> None:
        self.buckets = buckets  # the plan's: a checkpoint must be read with the same
        self.runner: StreamEngine | None = None
        self.held: pa.Table | None = None  # rows the watermark has not passed yet
        self.arrivals = 0                  # rows held so far (their arrival order)
        self.last_us: int | None = None    # the time of the last row evaluated
        self.late = 0                      # late rows seen (not evaluated)
        #: the event-time timers (ms) registered for this key and not fired yet, ascending
        self.timers: tuple[int, ...] = ()
        #: the newest time of a row Spark has read (of this key, or of the micro-batch)
        self.newest_us: int | None = None
        self.released_us: int | None = None  # rows before this time are evaluated

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        # a pickled checkpoint of ceql before key state format 1 (see _state_codec)
        slots: tuple[str, ...] = self.__slots__
        if len(state) == len(slots) + 1:  # an older checkpoint: match ordinals, now unused
            slots = (*slots[:6], "ordinals", *slots[6:])
        for k, v in zip(slots, state, strict=True):
            if k != "ordinals":
                setattr(self, k, v)
        if not isinstance(self.timers, tuple):  # an older checkpoint: one timer or None
            self.timers = () if self.timers is None else (int(self.timers),)

    @property
    def idle(self) -> bool:
        """Whether nothing remains (no row held, no engine): the key's state can go, and a
        row of it arriving later starts afresh (late or not by Spark's watermark, which is
        past :attr:`released_us` from the next micro-batch on)."""
        return self.runner is None and self.held is None

    @property
    def held_rows(self) -> int:
        """How many rows wait for the watermark."""
        return 0 if self.held is None else self.held.num_rows

    def accept(self, plan: StreamPlan, rb: pa.RecordBatch, watermark_ms: int) -> pa.RecordBatch:
        """Hold the rows of ``rb`` (its :data:`TIME_US` column filled); return the late ones
        (older than the watermark, or than the rows evaluated already: never evaluated, counted
        in :attr:`late`). With one watermark in the query the two agree; with several (a union
        of streams) Spark's is their minimum, which may lag what a key has released."""
        us = rb.column(TIME_US)
        if us.null_count:
            raise MatchCeqlError(
                f"{plan.engine.label}: the time column {plan.engine.time!r} is NULL in "
                f"{us.null_count} row(s) of the stream; every event needs a time. Filter them "
                f"out first (.where(col({plan.engine.time!r}).isNotNull())).")
        w = _watermark_us(watermark_ms)
        if self.released_us is not None and (w is None or self.released_us > w):
            w = self.released_us
        late = rb.slice(0, 0)
        if w is not None:
            is_late = pc.less(us, w)
            if pc.any(is_late).as_py():
                late = rb.filter(is_late)
                rb = rb.filter(pc.invert(is_late))
                self.late += late.num_rows
        if rb.num_rows:
            newest = int(pc.max(rb.column(TIME_US)).as_py())
            if self.newest_us is None or newest > self.newest_us:
                self.newest_us = newest
            kept = rb.select([*plan.columns, TIME_US])
            order = pa.array(np.arange(self.arrivals, self.arrivals + rb.num_rows, dtype=np.int64))
            self.arrivals += rb.num_rows
            table = pa.Table.from_batches([kept.append_column(_ARRIVAL, order)])
            self.held = table if self.held is None else pa.concat_tables([self.held, table])
        return late.select(list(plan.columns))

    def saw(self, us: int) -> None:
        """Note that Spark has read a row of time ``us`` (µs) in this micro-batch, of any key:
        its watermark for every later micro-batch is then at least that less the delay."""
        if self.newest_us is None or us > self.newest_us:
            self.newest_us = us

    def bound_us(self, plan: StreamPlan, watermark_ms: int) -> int | None:
        """Rows before this time (µs) are complete: Spark's watermark, or, with
        :attr:`StreamPlan.delay_ms`, the watermark its newest row promises for every
        later micro-batch (Spark's is the newest time in ms less the delay, over all rows, so a
        later row older than that is late; :meth:`saw` tells of the micro-batch's other keys'
        rows) — whichever is later; None before either."""
        w = _watermark_us(watermark_ms)
        if plan.delay_ms is not None and self.newest_us is not None:
            promised = (self.newest_us // 1000 - plan.delay_ms) * 1000
            if promised > 0 and (w is None or promised > w):
                return promised
        return w

    def release(self, plan: StreamPlan, watermark_ms: int, limits: BatchLimits | None = None
                ) -> Iterator[pa.RecordBatch]:
        """Evaluate the held rows before :meth:`bound_us`, move the engine's time on to it,
        and drop the engine once the key is idle past its window; yield the output rows, in
        batches within ``limits`` (the task's when None) as the engine finds them (consume it
        whole before saving the state)."""
        w = self.bound_us(plan, watermark_ms)
        if w is None:
            return
        if self.released_us is None or w > self.released_us:
            self.released_us = w
        if self.held is not None:
            held = self._sorted(plan, self.held)
            us = held.column(TIME_US).to_numpy()
            cut = int(np.searchsorted(us, w, side="left"))
            self.held = held.slice(cut) if cut < held.num_rows else None
            if cut:
                ready = held.slice(0, cut)
                if self.runner is None:
                    self.runner = plan.engine.start()
                for rb in ready.select(list(plan.columns)).combine_chunks().to_batches():
                    yield from self.runner.feed(rb, limits)
                self.last_us = int(us[cut - 1])
        runner = self.runner
        if runner is not None and plan.window_us is not None:
            if runner.fed:
                yield from runner.advance(plan.time_value(w), limits)
            if (plan.drop_idle and self.held is None and runner.waiting_until() is None
                    and self.last_us is not None and w > self.last_us + plan.window_us + 1):
                # every later row is beyond the window of every row seen: a new engine gives
                # the same matches with the same ids (they name events by time), so the key
                # is idle and its state goes
                self.runner = None

    @staticmethod
    def _sorted(plan: StreamPlan, held: pa.Table) -> pa.Table:
        """``held`` in the order the engine reads: time, :attr:`StreamPlan.order`,
        ``tie_break``, arrival."""
        first = TIME_US if plan.timestamp else plan.engine.time
        if not plan.order:
            return held.sort_by([(c, "ascending") for c in (first, *plan.tie_break, _ARRIVAL)])
        keys: list[tuple[str, str]] = [(first, "ascending")]
        table = held
        for i, k in enumerate(plan.order):  # nulls placed per key by a flag column before it
            flag = f"{_NULL}{i}"
            table = table.append_column(flag, pc.is_null(held.column(k.column)))
            keys += [(flag, "descending" if k.nulls_first else "ascending"),
                     (k.column, "descending" if k.descending else "ascending")]
        keys += [(c, "ascending") for c in (*plan.tie_break, _ARRIVAL)]
        return held.take(pc.sort_indices(table, sort_keys=keys))

    def wake_ms(self, plan: StreamPlan) -> int | None:
        """The event-time timer (ms) for this key's next work — a held row to evaluate, a
        waiting match to release, an engine to drop — or None when nothing waits. PySpark's
        transformWithStateInPandas fires a timer once the watermark reaches it, which is when
        that work is due; after :meth:`release` it is above the watermark released to (a timer
        at or below it would be deleted as fired without its call)."""
        due: list[Fraction] = []
        if self.held is not None:
            due.append(Fraction(int(pc.min(self.held.column(TIME_US)).as_py())))
        runner = self.runner
        if runner is not None:
            waiting = runner.waiting_until()
            if waiting is not None:
                due.append(plan.to_us(waiting))
            if (plan.drop_idle and plan.window_us is not None and self.last_us is not None
                    and self.held is None):
                due.append(self.last_us + plan.window_us + 1)
        if not due:
            return None
        # work at `due` µs is done at a watermark w (ms) with w * 1000 > due
        return int(min(due) // 1000) + 1

    def fired(self, ms: int) -> None:
        """Note that Spark fired this key's timer at ``ms`` (and deletes it after the call)."""
        self.timers = tuple(t for t in self.timers if t != ms)

    def reschedule(self, plan: StreamPlan) -> int | None:
        """The timer to register for :meth:`wake_ms`, or None when a registered one comes no
        later (its call reschedules in turn). Timers are never deleted: deleting costs a
        round trip to the JVM and a RocksDB write a micro-batch (≈2–15 ms a call here) while a
        timer that fires early costs one call doing nothing more than rescheduling, and in a
        steady stream the key's next work moves later every micro-batch, so the timer then
        fires every other micro-batch instead of being moved in each."""
        due = self.wake_ms(plan)
        if due is None or (self.timers and self.timers[0] <= due):
            return None
        self.timers = (due, *self.timers)
        return due


def stream_plan(spec: MatchSpec, strategy: str, *, timestamp: bool,
                tie_break: tuple[str, ...] = (), buckets: int = 0,
                delay_ms: int | None = None) -> StreamPlan:
    """The :class:`StreamPlan` of a query planned as ``spec`` under selection ``strategy``
    (the compiled query's ``ast.strategy``), its time column a TIMESTAMP or a number in
    ``spec.time_unit``; with ``buckets``, one state entry holds the keys of a hash bucket, so
    its engine separates them itself (as a batch task with several keys). ``delay_ms``: the
    delay of the stream's only watermark (see :attr:`StreamPlan.delay_ms`)."""
    if buckets and spec.spark_partitioned:
        spec = replace(spec, spark_partitioned=False, window_events=None)
    else:
        buckets = 0
    per_second = 1 if timestamp else TIME_UNIT_PER_SECOND[spec.time_unit]
    seconds = spec.window_seconds
    window = (Fraction(seconds) * 1_000_000
              if seconds is not None and seconds != float("inf") else None)
    return StreamPlan(engine=CeqlEngine(spec), timestamp=timestamp,
                      us_per_unit=Fraction(1_000_000) / Fraction(per_second),
                      window_us=window, tie_break=tie_break, columns=spec.event_columns,
                      buckets=buckets,
                      drop_idle=strategy in (STRATEGY_ALL, STRATEGY_ANY, STRATEGY_STRICT),
                      delay_ms=delay_ms)
