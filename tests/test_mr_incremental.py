"""The incremental MATCH_RECOGNIZE evaluator (ceql.mr.evaluator) against the batch run: random
queries (tests/mr_strategies.py's bodies, whose coverage test_mr_engine.py checks) over rows fed
in random chunks, partitions interleaved, with snapshot → restore at random points; the rows it
keeps; its snapshots' refusals; rows out of order."""

from __future__ import annotations

import datetime
import random
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

import ceql
from ceql.errors import CeqlError, CeqlInputError, CeqlTypeError
from ceql.frontends.mr import ast as A
from ceql.frontends.mr.errors import MatchSkipError
from ceql.mr import MatchRecognizeQuery, MrValueError
from ceql.mr import snapshot as mr_snapshot
from ceql.mr.evaluator import MatchRecognizeEvaluator
from ceql.mr.partitions import partition, sort
from ceql.runtime.codec import decode, encode
from mr_strategies import T0, bodies

Rows = list[dict[str, object]]


# ---------------------------------------------------------------- random rows and plays

@st.composite
def _rows(draw: Any) -> Rows:
    """Up to 14 rows over k (1 or 2), ts (non-decreasing, ties too), x (small or NULL), y."""
    out: Rows = []
    t = T0
    for _ in range(draw(st.integers(0, 14))):
        t += datetime.timedelta(seconds=draw(st.integers(0, 3)))
        out.append({"k": draw(st.sampled_from([1, 2])), "ts": t,
                    "x": draw(st.one_of(st.none(), st.integers(0, 5))),
                    "y": draw(st.sampled_from(["a", "b", "ab", "ba"]))})
    return out


def _with_classifier_navigation(body: A.MatchRecognize) -> A.MatchRecognize:
    """``body`` with a DEFINE reading the variable of the previous row: registers that are
    the labels so far (the fallback), saved and restored too."""
    variables = body.variables()
    if not variables:
        return body
    var = variables[0]
    extra = A.Binary("<>", A.Navigation("PREV", A.Classifier(None), 1), A.Literal(var))
    old = body.condition(var)
    cond = extra if old is None else A.Binary("OR", old, extra)
    defines = (*(d for d in body.defines if d.var != var), A.Define(var, cond))
    return A.MatchRecognize(body.pattern, body.partition_by, body.order_by, body.measures,
                            body.rows_per_match, body.skip, body.within, body.subsets, defines)


def _with_next(body: A.MatchRecognize, k: int) -> A.MatchRecognize:
    """``body`` with its first variable's DEFINE also reading ``k`` rows ahead, and a measure
    reading ``k`` rows past the row it is evaluated at: what the evaluator must wait for."""
    variables = body.variables()
    if not variables:
        return body
    var = variables[0]
    extra = A.Binary(">=", A.Call("COALESCE", (A.Navigation("NEXT", A.Column(None, "x"), k),
                                                A.Literal(9))), A.Literal(2))
    old = body.condition(var)
    cond = extra if old is None else A.Binary("AND", old, extra)
    defines = (*(d for d in body.defines if d.var != var), A.Define(var, cond))
    measures = (*body.measures, A.Measure(A.Navigation("NEXT", A.Column(None, "x"), k), "nx"))
    return A.MatchRecognize(body.pattern, body.partition_by, body.order_by, measures,
                            body.rows_per_match, body.skip, body.within, body.subsets, defines)


def _fed_order(body: A.MatchRecognize, rows: Rows, rnd: random.Random) -> Rows:
    """``rows`` as a stream would bring them: each partition sorted as ``run`` sorts it, the
    partitions interleaved at random."""
    keys = [(k.column, k) for k in body.order_by]
    queues = [sort(part, keys) for _, part in partition(rows, list(body.partition_by))]
    out: Rows = []
    while queues:
        q = rnd.choice(queues)
        out.append(q.pop(0))
        queues = [q for q in queues if q]
    return out


def _by_partition(body: A.MatchRecognize, out: Rows) -> dict[object, list[object]]:
    got: dict[object, list[object]] = {}
    for row in out:
        key = row["k"] if body.partition_by else None
        got.setdefault(key, []).append(list(row.items()))
    return got


def _outcome(f: Callable[[], Rows], body: A.MatchRecognize) -> object:
    try:
        return _by_partition(body, f())
    except (MatchSkipError, MrValueError) as e:
        return type(e).__name__


class _Play:
    """Feeds ``rows`` to an evaluator in the chunks ``rnd`` chooses (``mode``: ``one`` row at
    a time, ``chunks`` of random sizes, ``all`` at once), restoring a snapshot into a freshly
    compiled query at random points; notes what happened, for the draws' check."""

    def __init__(self, body: A.MatchRecognize, rows: Rows, rnd: random.Random,
                 mode: str, advance: bool) -> None:
        self.body, self.rows, self.rnd, self.mode = body, rows, rnd, mode
        # a watermark after each chunk (the first ORDER BY column is ts, ascending or not)
        self.advance = advance and not body.order_by[0].descending
        self.restores = 0
        self.restores_live = 0  # restores while a match was open
        self.sizes: set[int] = set()
        self.released = 0  # output rows advance() gave

    def __call__(self) -> Rows:
        rnd = self.rnd
        ev = MatchRecognizeQuery(self.body).evaluator()
        out: Rows = []
        i = 0
        rows = self.rows
        while i < len(rows):
            n = (1 if self.mode == "one" else len(rows) if self.mode == "all" else
                 rnd.randint(1, 4))
            self.sizes.add(n)
            out += ev.feed(rows[i:i + n])
            i += n
            if self.advance:
                self._advance(ev, rows[i:], out)
            if rnd.random() < 0.4:
                self.restores += 1
                self.restores_live += ev.live().threads > 0
                data = ev.snapshot()
                ev = ceql.match_recognize(self.body_text()).restore(data)
        out += ev.close()
        assert ev.close() == []
        return out

    def _advance(self, ev: MatchRecognizeEvaluator, rest: Rows, out: Rows) -> None:
        """A watermark no later row is before (the next row's time, or less), and before it
        the one waiting_until() names, which releases nothing."""
        times = [r["ts"] for r in rest]
        bound = min(times) if times else T0 + datetime.timedelta(days=1)
        assert isinstance(bound, datetime.datetime)
        due = ev.waiting_until()
        if isinstance(due, datetime.datetime) and due <= bound:
            assert ev.advance(due) == []
        w = bound - datetime.timedelta(seconds=self.rnd.choice([0, 0, 1, 3]))
        got = ev.advance(w)
        self.released += len(got)
        out += got

    def body_text(self) -> str:
        return MatchRecognizeQuery(self.body).text


@st.composite
def _plays(draw: Any) -> _Play:
    body = draw(bodies())
    twist = draw(st.sampled_from(["none", "none", "labels", "next"]))
    if twist == "labels":
        body = _with_classifier_navigation(body)
    elif twist == "next":
        body = _with_next(body, draw(st.integers(1, 2)))
    if draw(st.booleans()):  # numbers go on across restores
        body = A.MatchRecognize(body.pattern, body.partition_by, body.order_by,
                                (*body.measures, A.Measure(A.MatchNumber(), "mn")),
                                body.rows_per_match, body.skip, body.within, body.subsets,
                                body.defines)
    rnd = draw(st.randoms(use_true_random=False))
    rows = _fed_order(body, draw(_rows()), rnd)
    return _Play(body, rows, rnd, draw(st.sampled_from(["one", "chunks", "chunks", "all"])),
                 draw(st.booleans()))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow],
          max_examples=3 * settings.default.max_examples)
@given(_plays())
def test_feeding_in_pieces_with_restores_gives_runs_output(play: _Play) -> None:
    q = MatchRecognizeQuery(play.body)
    expected = _outcome(lambda: q.run(play.rows), play.body)
    assert _outcome(play, play.body) == expected


_PLAY_DRAWS: dict[str, Callable[[_Play], bool]] = {
    "one_at_a_time": lambda p: p.mode == "one" and len(p.rows) > 4,
    "chunks": lambda p: p.mode == "chunks" and len(p.sizes) > 2,
    "interleaved": lambda p: len({r["k"] for r in p.rows}) == 2 and any(
        a["k"] != b["k"] != c["k"]
        for a, b, c in zip(p.rows, p.rows[1:], p.rows[2:], strict=False)),
    "restore_while_a_match_is_open": lambda p: p.restores_live > 0,
    "several_restores": lambda p: p.restores > 2,
    "labels_as_registers": lambda p: any(
        isinstance(n, A.Navigation) and isinstance(n.arg, A.Classifier)
        for d in p.body.defines for n in A.walk(d.condition)),
    "next_in_define": lambda p: any(isinstance(n, A.Navigation) and n.kind == "NEXT"
                                    for d in p.body.defines for n in A.walk(d.condition)),
    "next_two_ahead_in_a_measure": lambda p: any(
        isinstance(m.expr, A.Navigation) and m.expr.kind == "NEXT" and m.expr.offset == 2
        for m in p.body.measures),
    "advance_releases_rows": lambda p: p.released > 0,
    "advance_under_within_in_both_partitions": lambda p: p.advance and p.body.within is not None
    and len({r["k"] for r in p.rows}) == 2 and bool(p.body.partition_by),
    "output_in_both_partitions": lambda p: len({r["k"] for r in _run_rows(p)}) == 2,
}


def _run_rows(p: _Play) -> Rows:
    try:
        return MatchRecognizeQuery(p.body).run(p.rows) if p.body.partition_by else []
    except CeqlError:
        return []


@pytest.mark.parametrize("what", sorted(_PLAY_DRAWS))
def test_the_play_generator_draws(what: str) -> None:
    def seen(p: _Play) -> bool:
        try:
            p()
        except CeqlError:
            pass
        return _PLAY_DRAWS[what](p)
    found = find(_plays(), seen, settings=settings(max_examples=3000, phases=[Phase.generate],
                                                    database=None))
    assert _PLAY_DRAWS[what](found)


# ---------------------------------------------------------------- output as soon as final

def test_rows_come_out_as_soon_as_they_are_final() -> None:
    q = ceql.match_recognize("ORDER BY t MEASURES FIRST(t) AS s PATTERN (A B) "
                             "DEFINE B AS x > PREV(x)")
    ev = q.evaluator()
    assert ev.feed([{"t": 1, "x": 5}]) == []
    assert ev.feed([{"t": 2, "x": 6}]) == [{"s": 1}]  # no need to wait for more
    assert ev.close() == []
    # NEXT reads a row ahead: the decision waits for it, or for the end
    q = ceql.match_recognize("ORDER BY t MEASURES FIRST(t) AS s PATTERN (A) "
                             "DEFINE A AS NEXT(x) IS NULL")
    ev = q.evaluator()
    assert ev.feed([{"t": 1, "x": 5}]) == []  # row 1 waits for row 2
    assert ev.feed([{"t": 2, "x": None}]) == [{"s": 1}]
    assert ev.feed([{"t": 3, "x": 1}]) == []
    assert ev.close() == [{"s": 3}]  # NEXT past the last row is NULL
    # a greedy quantifier at the end waits for the end
    q = ceql.match_recognize("MEASURES COUNT(*) AS n PATTERN (A+)")
    ev = q.evaluator()
    assert ev.feed([{"x": 1}] * 3) == []
    assert ev.close() == [{"n": 3}]


def test_match_numbers_and_unmatched_rows_continue_across_feeds() -> None:
    q = ceql.match_recognize("PARTITION BY k ORDER BY t MEASURES MATCH_NUMBER() AS m "
                             "ALL ROWS PER MATCH WITH UNMATCHED ROWS PATTERN (A B) "
                             "DEFINE B AS x > PREV(x)")
    rows = [{"k": t % 2, "t": t, "x": [3, 1, 4, 1, 5, 9, 2, 6, 5, 3][t]} for t in range(10)]
    ev = q.evaluator()
    out: Rows = []
    for r in rows:
        out += ev.feed([r])
        ev = q.restore(ev.snapshot())
    out += ev.close()
    for k in (0, 1):
        assert [r for r in out if r["k"] == k] == [r for r in q.run(rows) if r["k"] == k]
    assert {r["m"] for r in out} == {None, 1, 2}


def test_arrow_input_and_given_columns() -> None:
    q = ceql.match_recognize("ORDER BY t MEASURES COUNT(*) AS n PATTERN (A B+) "
                             "DEFINE B AS x > PREV(x)")
    table = pa.table({"t": [1, 2, 3, 4], "x": [1, 2, 3, 0]})
    ev = q.evaluator()
    assert ev.feed(table.to_batches()[0]) == [{"n": 3}]
    ev = q.evaluator(columns=["t", "x", "note"])
    assert ev.columns == ("t", "x", "note")
    assert ev.feed([{"t": 1, "x": 1}, {"t": 2, "x": 2, "note": "a"}, {"t": 3, "x": 0}]) == [
        {"n": 2}]
    with pytest.raises(CeqlInputError, match="other"):
        ev.feed([{"t": 4, "x": 1, "other": 1}])


def test_feed_after_close_and_rows_that_are_not_mappings() -> None:
    ev = ceql.match_recognize("PATTERN (A)").evaluator()
    with pytest.raises(CeqlTypeError, match=r"Row 0 .* not a mapping"):
        ev.feed([(1, 2)])
    ev.close()
    assert ev.closed
    with pytest.raises(CeqlInputError, match="after close"):
        ev.feed([{"x": 1}])
    assert ev.close() == []


# ---------------------------------------------------------------- advance (a watermark)

def _at(seconds: int) -> datetime.datetime:
    return T0 + datetime.timedelta(seconds=seconds)


def test_advance_ends_windows_without_waiting_for_a_row() -> None:
    q = ceql.match_recognize("PARTITION BY k ORDER BY t MEASURES COUNT(*) AS n "
                             "PATTERN (A B+) WITHIN INTERVAL '10' SECOND "
                             "DEFINE B AS x > PREV(x)")
    ev = q.evaluator()
    rows = [{"k": 1, "t": _at(i), "x": i} for i in range(4)]
    assert ev.feed(rows) == []  # B+ may go on
    assert ev.waiting_until() == _at(10)
    assert ev.advance(_at(10)) == []  # a row at 10 s could still be taken
    assert ev.advance(_at(11)) == [{"k": 1, "n": 4}]
    assert ev.waiting_until() is None and ev.held_rows() <= 1
    with pytest.raises(CeqlInputError, match=r"t=.*, before .* advance\(\) said"):
        ev.feed([{"k": 2, "t": _at(10), "x": 0}])
    assert ev.advance(_at(5)) == []  # a watermark never goes back
    assert ev.close() == []


@pytest.mark.parametrize("arrow", [False, True])
def test_rows_before_the_watermark_are_refused_in_a_known_partition_and_after_restore(
        arrow: bool) -> None:
    """A partition whose last row was checked against one watermark is checked again against
    a later one, and a restored evaluator keeps the watermark."""
    q = ceql.match_recognize("PARTITION BY k ORDER BY t MEASURES A.x AS a, B.x AS b "
                             "PATTERN (A B) WITHIN INTERVAL '10' SECOND DEFINE B AS x > A.x")

    def rows(*items: tuple[int, int]) -> object:
        got = [{"k": k, "t": _at(s), "x": s} for k, s in items]
        return pa.Table.from_pylist(got) if arrow else got
    ev = q.evaluator()
    assert ev.feed(rows((1, 1), (1, 2))) == [{"k": 1, "a": 1, "b": 2}]
    ev.advance(_at(3))
    assert ev.feed(rows((1, 4))) == []
    ev.advance(_at(6))
    for evaluator in (ev, q.restore(ev.snapshot())):
        with pytest.raises(CeqlInputError, match=r"t=.*, before .* advance\(\) said"):
            evaluator.feed(rows((1, 5)))
    again = q.restore(ev.snapshot())
    assert again.feed(rows((1, 6), (1, 7))) == [{"k": 1, "a": 4, "b": 6}]


def test_advance_leaves_windows_open_for_rows_waiting_for_next() -> None:
    # row 1 is matched once row 2 comes (NEXT): the watermark must not close start 0's window
    q = ceql.match_recognize("ORDER BY t MEASURES COUNT(*) AS n PATTERN (A B) "
                             "WITHIN INTERVAL '2' SECOND DEFINE B AS COALESCE(NEXT(x), 1) > 0")
    ev = q.evaluator()
    assert ev.feed([{"t": _at(0), "x": 1}, {"t": _at(1), "x": 1}]) == []
    assert ev.advance(_at(10)) == []
    assert ev.feed([{"t": _at(10), "x": 1}]) == [{"n": 2}]


def test_advance_needs_an_ascending_order() -> None:
    with pytest.raises(CeqlInputError, match="no ORDER BY"):
        ceql.match_recognize("PATTERN (A)").evaluator().advance(1)
    with pytest.raises(CeqlInputError, match="ORDER BY t DESC"):
        ceql.match_recognize("ORDER BY t DESC PATTERN (A)").evaluator().advance(1)
    ev = ceql.match_recognize("ORDER BY t PATTERN (A)").evaluator()
    with pytest.raises(CeqlTypeError, match="not None"):
        ev.advance(None)
    assert ev.advance(3) == []  # no WITHIN: the promise only
    with pytest.raises(CeqlInputError, match="before 3"):
        ev.feed([{"t": 2}])


# ---------------------------------------------------------------- rows out of order

def test_a_row_out_of_order_is_refused_naming_it_and_the_order() -> None:
    q = ceql.match_recognize("PARTITION BY k ORDER BY t PATTERN (A)")
    ev = q.evaluator()
    ev.feed([{"k": 1, "t": 5}, {"k": 2, "t": 1}, {"k": 1, "t": 5}])  # ties are in order
    with pytest.raises(CeqlInputError,
                       match=r"Row 4 of the input \(t=4\) sorts before the previous row of "
                             r"partition k=1 \(t=5\) by ORDER BY t"):
        ev.feed([{"k": 2, "t": 2}, {"k": 1, "t": 4}])
    # descending keys, NULLs last by default when descending
    ev = ceql.match_recognize("ORDER BY t DESC PATTERN (A)").evaluator()
    ev.feed([{"t": 5}, {"t": 3}, {"t": None}])
    with pytest.raises(CeqlInputError, match=r"t=2\) sorts before .* \(t=None\) by ORDER BY "
                                             r"t DESC"):
        ev.feed([{"t": 2}])
    ev = ceql.match_recognize("ORDER BY t NULLS LAST, u DESC PATTERN (A)").evaluator()
    ev.feed([{"t": 1, "u": 3}, {"t": 1, "u": 2}, {"t": None, "u": 9}])
    with pytest.raises(CeqlInputError, match="ORDER BY t, u DESC"):
        ev.feed([{"t": 1, "u": 9}])


# ---------------------------------------------------------------- the rows kept

def _prices(n: int, parts: int) -> Rows:
    rnd = random.Random(7)
    return [{"k": i % parts, "t": i, "price": rnd.randint(1, 100)} for i in range(n)]


def _in_pieces(q: Any, rows: Rows, size: int) -> tuple[Rows, int]:
    """The output of ``rows`` fed ``size`` at a time, and the most rows held after a piece."""
    ev = q.evaluator()
    most = 0
    out: Rows = []
    for i in range(0, len(rows), size):
        out += ev.feed(rows[i:i + size])
        most = max(most, ev.held_rows())
    return out + ev.close(), most


def test_a_pair_with_prev_keeps_a_few_rows_per_partition() -> None:
    q = ceql.match_recognize("PARTITION BY k ORDER BY t MEASURES A.t AS a PATTERN (A B) "
                             "DEFINE B AS price > PREV(price)")
    rows = _prices(100_000, 4)
    out, most = _in_pieces(q, rows, 997)
    assert most <= 2 * 4  # a row or two per partition, however many came
    assert sorted(map(repr, out)) == sorted(map(repr, q.run(rows)))


@pytest.mark.parametrize("skip", ["PAST LAST ROW", "TO NEXT ROW", "TO LAST B"])
@pytest.mark.parametrize("rows_per_match", ["ONE ROW PER MATCH", "ALL ROWS PER MATCH",
                                            "ALL ROWS PER MATCH WITH UNMATCHED ROWS"])
def test_every_skip_and_output_mode_keeps_a_few_rows(skip: str, rows_per_match: str) -> None:
    q = ceql.match_recognize(f"PARTITION BY k ORDER BY t MEASURES COUNT(*) AS n "
                             f"{rows_per_match} AFTER MATCH SKIP {skip} PATTERN (A B C?) "
                             "DEFINE B AS price > PREV(price), C AS price > NEXT(price, 2)")
    rows = _prices(10_000, 3)
    out, most = _in_pieces(q, rows, 101)
    assert most <= 3 * 6  # per partition: a match of 3 rows, PREV's row, NEXT's 2 rows
    expected = q.run(rows)
    for k in range(3):
        assert [r for r in out if r["k"] == k] == [r for r in expected if r["k"] == k]


def test_within_bounds_the_rows_kept_by_the_window() -> None:
    # A+ never ends (B never holds): without a window every row since the first is kept
    text = ("ORDER BY t MEASURES COUNT(*) AS n PATTERN (A+ B) {within} "
            "DEFINE B AS price < 0")
    rows = [{"t": datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=i), "price": i}
            for i in range(3000)]
    windowed = ceql.match_recognize(text.format(within="WITHIN INTERVAL '10' SECOND"))
    ev = windowed.evaluator()
    most = 0
    for i in range(0, len(rows), 50):
        assert ev.feed(rows[i:i + 50]) == []
        most = max(most, ev.held_rows())
    assert most <= 12  # the window's 11 rows and the next
    unbounded = ceql.match_recognize(text.format(within="")).evaluator()
    unbounded.feed(rows)
    assert unbounded.held_rows() == len(rows)


def test_prev_and_next_reach_are_kept_and_awaited() -> None:
    q = ceql.match_recognize("ORDER BY t MEASURES PREV(A.x, 3) AS p, NEXT(A.x, 2) AS n "
                             "PATTERN (A) DEFINE A AS x = 0")
    rows = [{"t": i, "x": i % 4} for i in range(40)]
    ev = q.evaluator()
    out: Rows = []
    for r in rows:
        out += ev.feed([r])
        assert ev.held_rows() <= 3 + 2 + 1
    assert out + ev.close() == q.run(rows)


# ---------------------------------------------------------------- snapshots

_TEXT = ("PARTITION BY k ORDER BY t MEASURES SUM(B.x) AS s, COUNT(DISTINCT B.x) AS d "
         "PATTERN (A B+ C) DEFINE B AS x >= PREV(x) AND AVG(B.x) < 10, C AS x < PREV(x)")


def _half_way() -> tuple[MatchRecognizeQuery, MatchRecognizeEvaluator, Rows]:
    q = ceql.match_recognize(_TEXT)
    rows = [{"k": i % 2, "t": i, "x": [1, 2, 2, 3, 5, 4, 1, 2, 3, 3, 7, 0][i % 12]}
            for i in range(30)]
    ev = q.evaluator()
    ev.feed(rows[:17])
    assert ev.live().threads > 0
    return q, ev, rows


def test_a_snapshot_continues_in_a_new_process_of_the_query() -> None:
    q, ev, rows = _half_way()
    data = ev.snapshot()
    again = ceql.match_recognize(_TEXT).restore(data)  # compiled anew: registers match
    assert again.rows_seen == 17
    rest = again.feed(rows[17:]) + again.close()
    assert rest == ev.feed(rows[17:]) + ev.close()
    assert MatchRecognizeEvaluator.restore(q, data).snapshot() == data


def test_a_snapshot_of_another_query_is_refused() -> None:
    _, ev, _ = _half_way()
    other = ceql.match_recognize(_TEXT.replace("x < PREV(x)", "x <= PREV(x)"))
    with pytest.raises(CeqlInputError, match="another MATCH_RECOGNIZE query"):
        other.restore(ev.snapshot())
    with pytest.raises(CeqlInputError, match="not a MATCH_RECOGNIZE evaluator's snapshot"):
        other.restore(b"CEQLSNAP" + bytes(40))
    with pytest.raises(CeqlInputError, match="bytes, not str"):
        other.restore("CEQLMRSN")  # type: ignore[arg-type]


def _continuation(q: MatchRecognizeQuery, data: bytes, rows: Rows) -> object:
    try:
        ev = q.restore(data)
    except CeqlError as e:
        return type(e)
    return ev.feed(rows) + ev.close()


def test_truncated_and_flipped_snapshots_are_refused() -> None:
    q, ev, rows = _half_way()
    data = ev.snapshot()
    good = _continuation(q, data, rows[17:])
    assert isinstance(good, list)
    for n in range(0, len(data), max(1, len(data) // 150)):
        assert _continuation(q, data[:n], rows[17:]) is CeqlInputError
    rnd = random.Random(3)
    for _ in range(300):
        b = bytearray(data)
        i = rnd.randrange(len(b))
        b[i] ^= 1 << rnd.randrange(8)
        got = _continuation(q, bytes(b), rows[17:])
        assert got is CeqlInputError or got == good


def _mutations(value: Any, rnd: random.Random) -> Any:
    """``value`` with one part replaced by something of another kind (or a list cut)."""
    if isinstance(value, dict) and value:
        k = rnd.choice(list(value))
        return {**value, k: _mutations(value[k], rnd)}
    if isinstance(value, list) and value and rnd.random() < 0.8:
        i = rnd.randrange(len(value))
        return [*value[:i], _mutations(value[i], rnd), *value[i + 1:]]
    if isinstance(value, list) and value:
        return value[:-1]
    return rnd.choice([None, -1, 10**6, "Z", [], [1, 2], {"a": 1}, True, 2.5])


def test_well_signed_but_damaged_state_is_refused_or_restored_never_crashes() -> None:
    q, ev, _ = _half_way()
    state = decode(ev.snapshot()[len(mr_snapshot.MAGIC) + 18:])["state"]
    rnd = random.Random(11)
    refused = 0
    for _ in range(300):
        data = mr_snapshot.dump(q.text, _mutations(state, rnd))
        try:
            q.restore(data)
        except CeqlError:
            refused += 1
    assert refused > 150  # (a watermark or a row value of another kind is a state too)
    assert encode(state)  # the state is plain data


def test_a_row_a_snapshot_cannot_hold_is_named() -> None:
    ev = ceql.match_recognize("PATTERN (A+)").evaluator()
    ev.feed([{"x": object()}])
    with pytest.raises(CeqlInputError, match=r"row kept .* builtins\.object"):
        ev.snapshot()


def test_a_closed_or_empty_evaluator_restores() -> None:
    q = ceql.match_recognize("PATTERN (A)")
    ev = q.restore(q.evaluator().snapshot())
    assert ev.columns is None and ev.feed([{"x": 1}]) == [{}]
    ev.close()
    again = q.restore(ev.snapshot())
    assert again.closed and again.close() == []
