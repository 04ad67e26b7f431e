"""The incremental evaluator of a MATCH_RECOGNIZE query: rows fed in batches, output rows given
as soon as they are final, state saved and restored between batches (docs/match_recognize.md,
"Incremental evaluation and snapshots").

Rows come in ORDER BY order per partition (partitions may interleave); each partition is a
:mod:`~ceql.mr.engines` run over a :class:`~ceql.mr.window.RowWindow` that keeps
only the rows a match can still read: from the earliest open match's first row (or the next
row) less what ``PREV`` reaches back. A row is matched once the ``NEXT`` reach of the query's
expressions has arrived after it (or at :meth:`~MatchRecognizeEvaluator.close`).

The output of every ``feed`` and ``close`` put together is
:meth:`~ceql.mr.MatchRecognizeQuery.run`'s over all the rows, partition by partition in the same
order; across partitions rows come in the order they become final.

A snapshot (:mod:`ceql.mr.snapshot`) holds the input's columns, the rows seen, and per
partition its PARTITION BY values, the rows kept (their first index), the last row's ORDER BY
values, the match count, the unmatched rows given, and the matcher's threads, matches found
and open starts (:meth:`ceql.runtime.leftmost.LeftmostMatcher.export`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from ..errors import CeqlError, CeqlInputError, CeqlTypeError
from ..frontends.mr import ast as A
from .arrow_rows import arrow_rows
from .engines import PartitionEngine, partition_run
from .partitions import order_check, partition_key
from .setup import Setup
from .snapshot import dump, load
from .values import compare
from .window import RowWindow

__all__ = ["CompiledQuery", "MatchRecognizeEvaluator", "MrLive", "extra_columns",
           "moves_time_on"]

Row = Mapping[str, object]


class CompiledQuery(Protocol):
    """What the evaluator needs of a compiled query (:class:`ceql.mr.MatchRecognizeQuery`)."""

    @property
    def text(self) -> str:
        """The body's canonical text."""
        ...

    @property
    def body(self) -> A.MatchRecognize:
        """The body's syntax tree."""
        ...

    def setup(self, columns: tuple[str, ...]) -> Setup:
        """The query compiled against the input's columns."""
        ...


def moves_time_on(body: A.MatchRecognize, closed: bool, time: object, watermark: object
                  ) -> bool:
    """``advance(time)``'s checks, for every evaluator: whether ``time`` moves the watermark
    (``watermark``, None before any) on; raises for an evaluator ``closed``, a query without an
    ascending first ORDER BY column, or a None time."""
    if closed:
        raise CeqlInputError("advance() after close(): the input ended")
    order = body.order_by
    if not order or order[0].descending:
        raise CeqlInputError(
            "advance() moves the time of an ascending first ORDER BY column on; this "
            "query has " + ("no ORDER BY" if not order else f"ORDER BY {order[0].column} "
                            "DESC"))
    if time is None:
        raise CeqlTypeError("advance() takes a time (a value of the first ORDER BY "
                            "column), not None")
    return watermark is None or compare("<=", time, watermark) is not True


def extra_columns(seen: int, names: Iterable[object], columns: Sequence[str]
                  ) -> CeqlInputError:
    """The error for a row (the input's ``seen``-th) with columns ``names`` beyond an
    evaluator's ``columns``."""
    extra = sorted(str(k) for k in names if k not in columns)
    return CeqlInputError(
        f"Row {seen} of the input has column(s) {', '.join(extra)} that the "
        f"evaluator's columns ({', '.join(columns)}) lack: they are fixed by "
        "the first row; pass columns=[...] to evaluator()")


class MrLive(NamedTuple):
    """What an evaluator keeps now: partitions, rows held, matcher threads (all partitions)."""

    partitions: int
    rows: int
    threads: int


class _Partition:
    __slots__ = ("last", "marked", "rows", "run")

    def __init__(self, run: PartitionEngine, rows: RowWindow,
                 last: tuple[object, ...] | None) -> None:
        self.run = run
        self.rows = rows
        self.last = last  # the ORDER BY values of its last row (None: no row yet)
        # the watermark its last row was found not before (a later row of the partition
        # sorts after that one, so it is not before it either)
        self.marked: tuple[object, ...] | None = None


class MatchRecognizeEvaluator:
    """Incremental evaluation of one MATCH_RECOGNIZE query (see the module docstring).

    ``columns``: the input's columns (default: the first row's); a row may lack some (read as
    NULL) but carry no other.
    """

    def __init__(self, query: CompiledQuery, *, columns: Sequence[str] | None = None) -> None:
        self._query = query
        self._columns: tuple[str, ...] | None = None
        self._colset: frozenset[str] = frozenset()
        self._setup: Setup | None = None
        self._parts: dict[tuple[object, ...], _Partition] = {}
        self._seen = 0
        self._closed = False
        self._watermark: object = None  # no row still to come sorts before it (advance)
        self._mark: tuple[object, ...] | None = None  # (the watermark,) once there is one
        # whether a row's ORDER BY values sort before the previous row's (of its partition),
        # its first before the watermark (the setup's keys; set with the columns)
        self._out_of_order: Callable[[Sequence[object], Sequence[object]], bool] = (
            lambda before, after: False)
        self._before_time: Callable[[Sequence[object], Sequence[object]], bool] = (
            self._out_of_order)
        if columns is not None:
            self._use_columns(tuple(columns))

    def _use_columns(self, columns: tuple[str, ...]) -> Setup:
        if not all(isinstance(c, str) for c in columns):
            raise CeqlTypeError(f"Columns are named by strings, not {columns!r}")
        setup = self._query.setup(columns)
        self._columns = columns
        self._colset = frozenset(columns)
        self._setup = setup
        self._out_of_order = order_check(setup.order_keys)
        self._before_time = order_check(setup.order_keys[:1])
        return setup

    # ------------------------------------------------------------------ facts
    @property
    def query(self) -> CompiledQuery:
        """The query evaluated."""
        return self._query

    @property
    def columns(self) -> tuple[str, ...] | None:
        """The input's columns (None: no row yet, none given)."""
        return self._columns

    @property
    def rows_seen(self) -> int:
        """How many rows have been fed so far."""
        return self._seen

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def held_rows(self) -> int:
        """How many rows the evaluator keeps now (over all partitions)."""
        return sum(p.rows.held() for p in self._parts.values())

    def live(self) -> MrLive:
        """How much state the evaluator keeps now (counts, for monitoring and tests)."""
        return MrLive(len(self._parts), self.held_rows(),
                      sum(p.run.threads() for p in self._parts.values()))

    # ------------------------------------------------------------------ feeding
    def feed(self, rows: Iterable[Row] | Any) -> list[dict[str, object]]:
        """Take the next rows (mappings, or a pyarrow Table or RecordBatch), each partition's
        in ORDER BY order; return the output rows they make final.

        A row that sorts before the previous row of its partition is refused
        (:class:`~ceql.errors.CeqlInputError`); the rows before it in the batch are taken, and
        the output they made is lost with the error — restore the last snapshot to go on.
        """
        if self._closed:
            raise CeqlInputError("feed() after close(): the input ended; create a new "
                                 "evaluator (MatchRecognizeQuery.evaluator) for more rows")
        arrow = hasattr(rows, "to_pylist")
        if arrow:
            names = tuple(getattr(rows, "schema").names)  # noqa: B009  # a Table or batch
            if self._setup is None:
                self._use_columns(names)
            elif not self._colset.issuperset(names):
                raise self._extra_columns(names)
        batch = arrow_rows(rows) if arrow else rows
        out: list[dict[str, object]] = []
        setup = self._setup
        parts = self._parts
        # the partitions this batch reached, matched once all its rows are in (the rows a
        # partition can match are the same whether it is advanced per row or per batch)
        touched: dict[tuple[object, ...], _Partition] = {}
        watermark = self._mark
        for row in batch:
            if arrow:
                pass  # rows of one schema, checked above
            elif type(row) is not dict and not isinstance(row, Mapping):
                raise CeqlTypeError(f"Row {self._seen} of the input is a "
                                    f"{type(row).__name__}, not a mapping of column to value")
            elif setup is None:
                setup = self._use_columns(tuple(row))
            elif not self._colset.issuperset(row):
                raise self._extra_columns(row)
            assert setup is not None
            pcols = setup.partition_columns
            if len(pcols) == 1:
                v = row.get(pcols[0])
                values: tuple[object, ...] = (v,)
                # partition_key's key of one text value, without the calls
                key = ((str, v),) if type(v) is str else partition_key(values)
            else:
                values = tuple(row.get(c) for c in pcols)
                key = partition_key(values)
            part = parts.get(key)
            if part is None:
                window = RowWindow()
                part = parts[key] = _Partition(partition_run(setup, window, values),
                                               window, None)
            if setup.order_columns:
                now = tuple(row.get(c) for c in setup.order_columns)
                last = part.last
                if last is not None and self._out_of_order(last, now):
                    raise self._order_error(setup, values, last, now)
                if (watermark is not None and part.marked is not watermark
                        and self._before_time(watermark, now[:1])):
                    raise CeqlInputError(
                        f"Row {self._seen} of the input has {setup.order_columns[0]}="
                        f"{now[0]!r}, before {self._watermark!r}, which advance() said no "
                        "row still to come would be: leave late rows out (a stream counts "
                        "them)")
                part.last = now
                part.marked = watermark
            part.rows.append(row)
            self._seen += 1
            touched[key] = part
        # rows taken before an error stay unmatched until the next feed or close matches
        # them (the output of an erroneous batch is lost)
        for part in touched.values():
            run = part.run
            run.advance(out)
            part.rows.drop_before(run.low_water())
        return out

    def feed_output(self, rows: Iterable[Row] | Any) -> list[dict[str, object]]:
        """:meth:`feed`, the output in this engine's own form (rows; the columnar engine's is
        an Arrow table)."""
        return self.feed(rows)

    def close_output(self) -> list[dict[str, object]]:
        """:meth:`close`, the output in this engine's own form."""
        return self.close()

    def _extra_columns(self, names: Iterable[object]) -> CeqlInputError:
        return extra_columns(self._seen, names, self._columns or ())

    def _order_error(self, setup: Setup, values: tuple[object, ...],
                     last: tuple[object, ...], now: tuple[object, ...]) -> CeqlInputError:
        keys = ", ".join(f"{c}{' DESC' if k.descending else ''}"
                         for c, k in zip(setup.order_columns, setup.order_keys, strict=True))
        where = (" of partition " + ", ".join(f"{c}={v!r}" for c, v in
                                              zip(setup.partition_by, values, strict=True))
                 if setup.partition_by else "")
        shown = ", ".join(f"{c}={v!r}" for c, v in zip(setup.order_columns, now, strict=True))
        before = ", ".join(f"{c}={v!r}" for c, v in zip(setup.order_columns, last,
                                                        strict=True))
        return CeqlInputError(
            f"Row {self._seen} of the input ({shown}) sorts before the previous row"
            f"{where} ({before}) by ORDER BY {keys}: feed each partition's rows in that "
            "order (sort each batch; no later batch may bring an earlier row)")

    # ------------------------------------------------------------------ progress
    def advance(self, time: object) -> list[dict[str, object]]:
        """Declare that no row still to come has a first ORDER BY value (the WITHIN time)
        before ``time`` — a stream's watermark; return the output rows that makes final: the
        matches whose WITHIN window it closes, in every partition, without waiting for the
        partition's next row. A row fed afterwards before ``time`` is refused. Without WITHIN
        it only records the promise."""
        if not moves_time_on(self._query.body, self._closed, time, self._watermark):
            return []
        self._watermark = time
        self._mark = (time,)
        out: list[dict[str, object]] = []
        for part in self._parts.values():
            run = part.run
            run.expire(time, out)
            part.rows.drop_before(run.low_water())
        return out

    def waiting_until(self) -> object:
        """The time after which :meth:`advance` closes the window of the earliest open match
        (of any partition); None without WITHIN or when no match is open. For streams: when
        to wake up."""
        due: object = None
        for part in self._parts.values():
            t = part.run.waiting_until()
            if t is not None and (due is None or compare("<", t, due) is True):
                due = t
        return due

    def close(self) -> list[dict[str, object]]:
        """The input ended: finish every partition (greedy quantifiers at the end, ``NEXT``
        past the last row, ``$``, unmatched rows) and return the rest of the output, partition
        by partition in the order their first rows came. Closing again returns nothing."""
        if self._closed:
            return []
        self._closed = True
        out: list[dict[str, object]] = []
        for part in self._parts.values():
            part.run.finish(out)
        self._parts.clear()
        return out

    # ------------------------------------------------------------------ saving
    def snapshot(self) -> bytes:
        """The evaluation's state as bytes (:mod:`ceql.mr.snapshot`); :meth:`restore` (or
        :meth:`ceql.mr.MatchRecognizeQuery.restore`) continues it. Take it between feeds."""
        parts = []
        for part in self._parts.values():
            rows = part.rows
            parts.append([list(part.run.values), rows.first,
                          [dict(r) for r in rows.kept()],
                          None if part.last is None else list(part.last), part.run.export()])
        state = {"columns": None if self._columns is None else list(self._columns),
                 "seen": self._seen, "closed": self._closed, "watermark": self._watermark,
                 "partitions": parts}
        return dump(self._query.text, state)

    @classmethod
    def restore(cls, query: CompiledQuery, data: bytes) -> MatchRecognizeEvaluator:
        """An evaluator that continues exactly where the one that took ``data`` stopped;
        :class:`~ceql.errors.CeqlInputError` for bytes that are no snapshot of ``query``'s."""
        return cls.from_state(query, load(query.text, data))

    @classmethod
    def from_state(cls, query: CompiledQuery, state: Any) -> MatchRecognizeEvaluator:
        """The evaluator whose :meth:`snapshot` saved ``state`` (the snapshot's content)."""
        try:
            return cls._restored(query, state)
        except CeqlError:
            raise
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
            raise CeqlInputError(f"The MATCH_RECOGNIZE snapshot is damaged ({exc})") from None

    @classmethod
    def _restored(cls, query: CompiledQuery, state: Any) -> MatchRecognizeEvaluator:
        if not isinstance(state, dict) or set(state) != {"columns", "seen", "closed",
                                                         "watermark", "partitions"}:
            raise CeqlInputError("The MATCH_RECOGNIZE snapshot is damaged (its layout)")
        columns, seen, closed, saved = (state["columns"], state["seen"], state["closed"],
                                        state["partitions"])
        if (type(seen) is not int or seen < 0 or type(closed) is not bool
                or not isinstance(saved, list)
                or not (columns is None or isinstance(columns, list))):
            raise CeqlInputError("The MATCH_RECOGNIZE snapshot is damaged (its counts)")
        ev = cls(query, columns=columns)
        ev._seen = seen
        ev._closed = closed
        ev._watermark = state["watermark"]
        ev._mark = None if ev._watermark is None else (ev._watermark,)
        setup = ev._setup
        if saved and setup is None:
            raise CeqlInputError("The MATCH_RECOGNIZE snapshot is damaged (rows without "
                                 "columns)")
        for entry in saved:
            assert setup is not None
            if not isinstance(entry, list) or len(entry) != 5:
                raise CeqlInputError("The MATCH_RECOGNIZE snapshot is damaged (a partition)")
            values, first, rows, last, run_state = entry
            if (not isinstance(values, list) or len(values) != len(setup.partition_columns)
                    or type(first) is not int or first < 0 or not isinstance(rows, list)
                    or not all(isinstance(r, dict) and ev._colset.issuperset(r) for r in rows)
                    or not ((last is None and not setup.order_columns)
                            or (isinstance(last, list)
                            and len(last) == len(setup.order_columns)))):
                raise CeqlInputError("The MATCH_RECOGNIZE snapshot is damaged (a partition)")
            key = partition_key(values)
            if key in ev._parts:
                raise CeqlInputError("The MATCH_RECOGNIZE snapshot is damaged (a partition "
                                     "twice)")
            window = RowWindow(first, rows)
            run = partition_run(setup, window, tuple(values))
            run.load(run_state)
            if run.low_water() < first:
                raise CeqlInputError("The MATCH_RECOGNIZE snapshot is damaged (rows a match "
                                     "reads are missing)")
            ev._parts[key] = _Partition(run, window, None if last is None else tuple(last))
        return ev
