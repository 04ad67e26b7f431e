"""MATCH_RECOGNIZE as the engine of a stream key (:mod:`ceql.spark.stream.keystate`): the body
planned for a streaming DataFrame (:func:`recognize_plan`, on the driver, without a session)
and, per key, the incremental evaluator the query chooses for the key's Arrow schema
(:meth:`ceql.mr.MatchRecognizeQuery.evaluator`: the columnar engine or the row one)
fed the key's rows in ORDER BY order as the watermark passes them, moved on to the watermark
(``advance``: WITHIN windows close), its rows converted to the batch call's output columns.

A key's engine holds its partitions (one, or a hash bucket's several: the evaluator keeps
partitions apart by PARTITION BY itself). Spark's constants of the body (:func:`bind`) are read
from the first row the engine takes and kept with its snapshot, so a restarted engine compiles
the same body.
"""

from __future__ import annotations

import datetime as _dt
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import pyarrow as pa

import ceql
from ceql.constants import MATCH_RECOGNIZE_TABLE
from ceql.frontends.mr import ast as A
from ceql.mr import MatchRecognizeQuery
from ceql.mr.query import Evaluator
from ceql.spark.errors import MatchCeqlError
from ceql.spark.stream.keystate import SortKey, StreamPlan
from ceql.spark.udtf.batching import BatchLimits
from ceql.spark.udtf.mr_plan import MrSpec
from ceql.spark.udtf.mr_runner import MrOutput
from ceql.spark.udtf.mr_split import bind

__all__ = ["RecognizeEngine", "RecognizeRunner", "recognize_plan", "stream_refusal"]

_MICROSECOND = _dt.timedelta(microseconds=1)


@dataclass(frozen=True)
class RecognizeEngine:
    """MATCH_RECOGNIZE's engine kind for :class:`~ceql.spark.stream.keystate.StreamPlan`."""

    spec: MrSpec
    label: str = MATCH_RECOGNIZE_TABLE
    #: compiled bodies by their Spark constants (one per process and constants)
    _queries: dict[tuple[Any, ...], MatchRecognizeQuery] = field(
        default_factory=dict, compare=False, repr=False)

    @property
    def time(self) -> str:
        """The first ORDER BY column: the event time."""
        return self.spec.order[0]

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns the engine reads: the input's, then the hidden ones."""
        return (*self.spec.input_columns, *(alias for _, alias in self.spec.split.select))

    @property
    def constants(self) -> tuple[str, ...]:
        """The hidden columns holding Spark's constants (read from a row, put in the body)."""
        return tuple(h.alias for h in self.spec.split.hidden if h.constant)

    def start(self) -> RecognizeRunner:
        """An engine before any row."""
        return RecognizeRunner(self)

    def query(self, first: Mapping[str, Any]) -> MatchRecognizeQuery:
        """The body compiled with the constants of row ``first``."""
        key = tuple(repr(first.get(c)) for c in self.constants)
        got = self._queries.get(key)
        if got is None:
            with warnings.catch_warnings():  # the driver has said them
                warnings.simplefilter("ignore", ceql.CeqlWarning)
                got = self._queries[key] = MatchRecognizeQuery(bind(self.spec.split, first))
        return got


class RecognizeRunner:
    """A stream key's MATCH_RECOGNIZE evaluator (a
    :class:`~ceql.spark.stream.keystate.StreamEngine`); ``bound`` is the row its constants
    came from (one row of :attr:`RecognizeEngine.constants`), ``snapshot`` the evaluator's."""

    def __init__(self, engine: RecognizeEngine, bound: pa.RecordBatch | None = None,
                 snapshot: bytes | None = None) -> None:
        self._engine = engine
        self._output = MrOutput(engine.spec)
        self._bound = bound
        self._ev: Evaluator | None = None
        if snapshot is not None:
            first = {} if bound is None else bound.to_pylist()[0]
            try:
                self._ev = engine.query(first).restore(snapshot)
            except ceql.CeqlError as e:
                raise MatchCeqlError(f"{MATCH_RECOGNIZE_TABLE}: this checkpoint's key state "
                                     f"cannot continue the query: {e}") from None

    @property
    def fed(self) -> int:
        """How many rows the evaluator has taken."""
        return 0 if self._ev is None else self._ev.rows_seen

    @property
    def bound(self) -> pa.RecordBatch | None:
        """The row the body's constants were read from (None: none taken, or none needed)."""
        return self._bound

    def snapshot(self) -> bytes | None:
        """The evaluator's snapshot (None before the first row)."""
        return None if self._ev is None else self._ev.snapshot()

    def _evaluator(self, rb: pa.RecordBatch) -> Evaluator:
        if self._ev is None:
            constants = self._engine.constants
            first = rb.slice(0, 1)
            self._bound = first.select(list(constants)) if constants else None
            query = self._engine.query(first.to_pylist()[0])
            self._ev = query.evaluator(columns=self._engine.columns, schema=rb.schema)
        return self._ev

    def feed(self, rb: pa.RecordBatch, limits: BatchLimits | None = None
             ) -> Iterator[pa.RecordBatch]:
        """Evaluate the key's next rows (in ORDER BY order); yield the output rows they make
        final."""
        if not rb.num_rows:
            return
        ev = self._evaluator(rb)
        out = self._engine_call(ev.feed_output, rb)
        yield from self._output.batches(out, limits or BatchLimits.of_task())

    def advance(self, time: Any, limits: BatchLimits | None = None
                ) -> Iterator[pa.RecordBatch]:
        """No row still to come is before ``time``: yield the rows of the matches whose WITHIN
        window that closes."""
        if self._ev is None:
            return
        out = self._engine_call(self._ev.advance, time)
        yield from self._output.batches(out, limits or BatchLimits.of_task())

    def close(self, limits: BatchLimits | None = None) -> Iterator[pa.RecordBatch]:
        """The input ended (a stream never does; a bounded replay's end, in tests): yield the
        rest, the rows waiting for what NEXT reads past the partition's last row included."""
        ev = self._ev
        if ev is None:
            return
        out = self._engine_call(lambda _: ev.close_output(), None)
        yield from self._output.batches(out, limits or BatchLimits.of_task())

    def waiting_until(self) -> Any:
        """When the earliest open match's window closes (None: no match open)."""
        return None if self._ev is None else self._ev.waiting_until()

    @staticmethod
    def _engine_call(call: Any, arg: Any) -> list[dict[str, object]] | pa.Table:
        try:
            out: list[dict[str, object]] | pa.Table = call(arg)
        except ceql.CeqlError as e:
            raise MatchCeqlError(f"{MATCH_RECOGNIZE_TABLE}: {type(e).__name__}: {e}") from None
        return out


def stream_refusal(spec: MrSpec) -> str | None:
    """Why the body cannot run over a stream (None: it can); the watermark is checked by the
    operator."""
    body = spec.split.body
    if not body.order_by:
        return ("over a stream the body needs ORDER BY its event-time column (the one with "
                "the watermark), first and ascending: add ORDER BY ts")
    first = body.order_by[0]
    if first.descending:
        return (f"over a stream ORDER BY {spec.order[0]} DESC cannot be: rows come as event "
                f"time goes forward; write ORDER BY {spec.order[0]} (ascending) first")
    if body.within is None:
        return ("over a stream the body needs WITHIN after PATTERN, or a match could wait for "
                "ever for its next row and the state grows without bound; add a window, e.g. "
                "PATTERN (A B+) WITHIN INTERVAL '10' MINUTE")
    if any(isinstance(n, A.Anchor) and n.kind == "$" for n in A.walk_pattern(body.pattern)):
        return ("over a stream a partition never ends, so PATTERN's $ (the partition's end) "
                "never matches; leave $ out")
    return None


def recognize_plan(spec: MrSpec, *, buckets: int = 0, delay_ms: int | None = None
                   ) -> StreamPlan:
    """The :class:`StreamPlan` of the body planned as ``spec`` (its first ORDER BY column a
    TIMESTAMP, :func:`stream_refusal` None): rows held in ORDER BY order (equal rows by
    ``spec.tie_columns``, as the batch call asks Spark to order them, then by arrival). The keys are
    never dropped when idle: MATCH_NUMBER() counts on and PREV reaches back across matches, so
    a new engine would not give the batch rows."""
    body = spec.split.body
    within = body.within
    assert within is not None
    order = [SortKey(c, k.descending,
                     k.nulls_first if k.nulls_first is not None else not k.descending)
             for c, k in zip(spec.order[1:], body.order_by[1:], strict=True)]
    order += [SortKey(c) for c in spec.tie_columns]
    engine = RecognizeEngine(spec)
    return StreamPlan(engine=engine, timestamp=True, us_per_unit=Fraction(1),
                      window_us=Fraction(within // _MICROSECOND), tie_break=(),
                      columns=engine.columns, buckets=buckets if spec.partition else 0,
                      drop_idle=False, delay_ms=delay_ms, order=tuple(order))

