"""Resource bounds: what an evaluation and a compiled query keep stays bounded by what is live.

Small versions of issue 9's memory reproducers. Every assertion is on a *count* (partitions kept,
cache entries), never on seconds or bytes of RSS. The property tests at the end run the engine
against the brute-force reference with sweeps after (almost) every row and caches that reset at
every step, so that bounding memory provably changes no output.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import ceql
from ceql.automata import dfa as dfa_module
from ceql.frontends.ceql import format_query
from ceql.predicates import row as row_path
from ceql.predicates.values import FALSE, TRUE
from ceql.runtime import state as state_module
from reference import reference_matches
from strategies import PROFILE, Case, cases
from test_properties import check_against_reference, keys

WINDOWED = "SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 10 SECONDS"


def rows(kind: str, keys_: range, t0: int = 0) -> list[dict[str, Any]]:
    """One event of type ``kind`` per key, one second apart from ``t0``."""
    return [{"type": kind, "k": k, "t": t0 + i} for i, k in enumerate(keys_)]


# ---------------------------------------------------------------------- partitions, row path

def test_events_that_move_no_run_create_no_partition() -> None:
    ev = ceql.compile(WINDOWED).evaluator(time="t")
    for start in range(0, 30_000, 5_000):
        ev.feed(rows("C", range(start, start + 5_000), t0=start))
        assert ev.live().partitions == 0


def test_expired_partitions_are_swept_while_only_irrelevant_events_arrive() -> None:
    ev = ceql.compile(WINDOWED).evaluator(time="t")
    ev.feed([{"type": "A", "k": k, "t": 0} for k in range(3_000)])  # 3 000 open runs
    assert ev.live().partitions == 3_000
    for start in range(3_000, 23_000, 5_000):  # keys that never see an A or B
        ev.feed(rows("C", range(start, start + 5_000), t0=start))
    assert ev.live().partitions == 0


def test_a_count_window_expires_partitions_by_their_own_events() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 3 EVENTS")
    ev = q.evaluator()
    for k in range(3_000):  # A then four events that leave its run be: it is out of the window
        ev.feed([{"type": "A", "k": k}, *({"type": "C", "k": k} for _ in range(4))])
    ev.feed([{"type": "C", "k": -1}] * 10_000)
    assert ev.live().partitions == 0


def test_partitions_emptied_by_consume_by_any_are_dropped() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B PARTITION BY [k] CONSUME BY ANY")
    ev = q.evaluator()
    ev.feed(rows("A", range(3_000)))
    assert len(ev.feed([{"type": "A", "k": -1}, {"type": "B", "k": -1}])) == 1  # consumes all
    ev.feed(rows("C", range(10_000)))
    assert ev.live().partitions == 0


def test_a_reset_keeps_the_states_a_consumed_partition_still_names() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; (B OR C)+ ; D PARTITION BY [k] CONSUME BY ANY")
    ev = q.evaluator()
    events = [{"type": t, "k": k} for t, k in [("A", 1), ("B", 1), ("A", 2), ("B", 2), ("D", 2)]]
    assert len(ev.feed(events)) == 1  # k = 1 is consumed, lazily: it still holds its states
    ev.automaton.full = True  # as over budget: the next step resets the automaton
    assert ev.feed([{"type": t, "k": k} for t, k in [("E", 3), ("A", 4), ("C", 1), ("D", 1)]]) == []


# ---------------------------------------------------------------------- partitions, Arrow path

@pytest.mark.parametrize("text", [
    WINDOWED,
    # (a FILTER: a chain of bare types under CONSUME BY runs on the join engine)
    "SELECT * FROM S WHERE A ; B FILTER B[k != 0.5] PARTITION BY [k] WITHIN 10 SECONDS "
    "CONSUME BY ANY"])
def test_a_batch_creates_no_partition_per_irrelevant_key(text: str) -> None:
    q = ceql.compile(text)
    ev = q.evaluator(time="t")
    n = 20_000
    batch = pa.Table.from_pylist(
        [*rows("C", range(n)), {"type": "A", "k": -1, "t": n}, {"type": "B", "k": -1, "t": n}])
    seen = []
    for _ in ev.iter_feed(batch):
        seen.append(ev.live().partitions)  # while the batch is being evaluated
    assert seen == [1]


def test_a_big_arrow_batch_is_evaluated_in_bounded_slices(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The working arrays of one Arrow batch are bounded by the slice, not the batch: over a
    # long stream of big batches, large transient arrays fragment the C heap (issue 9's soak).
    from ceql.runtime import evaluator as evaluator_module
    from ceql.runtime import stack as stack_module

    sizes: list[int] = []
    real = stack_module.feed_arrow  # the base engine's batch loop

    def spy(ev: Any, core: Any, rb: pa.RecordBatch, taps: Any) -> Any:
        sizes.append(rb.num_rows)
        return real(ev, core, rb, taps)

    rnd = random.Random(7)
    events = [{"type": rnd.choice("ABC"), "k": rnd.randrange(5), "t": i} for i in range(1000)]
    q = ceql.compile(WINDOWED)
    whole = [m.key() for m in q.evaluator(time="t").feed(pa.Table.from_pylist(events))]
    monkeypatch.setattr(evaluator_module, "ARROW_SLICE", 64)
    monkeypatch.setattr(stack_module, "feed_arrow", spy)
    sliced = [m.key() for m in q.evaluator(time="t").feed(pa.Table.from_pylist(events))]
    assert sliced == whole and len(whole) > 100
    assert max(sizes) == 64 and sum(sizes) == 1000
    late = [*events[:700], {"type": "A", "k": 0, "t": -1}]
    with pytest.raises(ceql.CeqlInputError, match=r"\b700\b"):
        q.evaluator(time="t").feed(pa.Table.from_pylist(late))


# ---------------------------------------------------------------------- caches

ATOMS = 24
WIDE = "SELECT * FROM S WHERE {lead}A AS a FILTER a[{cond}]".format(
    lead="{lead}", cond=" OR ".join(f"x{i} = 1" for i in range(ATOMS)))


def random_rows(n: int, kind: str, seed: int) -> list[dict[str, Any]]:
    """Rows with ``ATOMS`` random 0/1 attributes: almost every row is a new event class."""
    rnd = random.Random(seed)
    return [{"type": kind, **{f"x{i}": rnd.getrandbits(1) for i in range(ATOMS)}}
            for _ in range(n)]


def cached_transitions(dfa: Any) -> int:
    """Transitions the automaton keeps, counted from its public hot caches."""
    return sum(map(len, dfa.trans.values())) + sum(map(len, dfa.gtrans.values()))


@pytest.fixture
def small_budget(monkeypatch: pytest.MonkeyPatch) -> int:
    """Automata built while the fixture is active get a budget of 2 000 cached transitions."""
    monkeypatch.setattr(dfa_module, "MAX_TRANSITIONS", 2_000, raising=False)
    return 2_000


@pytest.mark.parametrize("lead", ["", "B ; "])  # a match per row; no row moves a run
@pytest.mark.parametrize("arrow", [False, True])
def test_caches_stay_within_their_budget(small_budget: int, lead: str, arrow: bool) -> None:
    q = ceql.compile(WIDE.format(lead=lead), max_states=97)  # its own automaton, this budget
    ev = q.evaluator()
    kind = "A" if not lead else "C"
    for seed in range(4):
        batch = random_rows(5_000, kind, seed)
        ev.feed(pa.Table.from_pylist(batch) if arrow else batch)
        assert cached_transitions(ev.automaton) <= small_budget + 8
        caches = ev.caches()
        assert caches.automaton == cached_transitions(ev.automaton)
        assert caches.inertness <= small_budget
    del ev  # what the query keeps once its evaluators are gone is within the budget too
    assert cached_transitions(q.evaluator().automaton) <= small_budget + 8


def test_like_cache_is_bounded_in_characters() -> None:
    match = row_path.like_matcher("x$")
    long = row_path.LIKE_CACHE_CHARS // 64  # the longest string it caches
    for i in range(200):  # 200 distinct strings of 16 K characters: 3.2 M in all
        s = f"{i:05d}".ljust(long, "y")
        assert (match(s), match(s[:-1] + "x")) == (FALSE, TRUE)
        entries, chars = match.cached()
        assert chars <= row_path.LIKE_CACHE_CHARS and entries <= row_path.LIKE_CACHE_SIZE
    assert match("x" * (long + 1)) == TRUE
    assert match.cached()[1] <= row_path.LIKE_CACHE_CHARS


# ---------------------------------------------------------------------- the same outputs

def _arrow_batches(events: list[dict[str, Any]], parts: int) -> Iterator[pa.RecordBatch]:
    """The events as ``parts`` record batches of one schema (missing attributes are null)."""
    names = list(dict.fromkeys(k for e in events for k in e)) or ["type"]
    table = pa.table({k: pa.array([e.get(k) for e in events]) for k in names})
    step = max(1, -(-len(events) // parts))
    for a in range(0, len(events), step):
        yield pa.RecordBatch.from_arrays(
            [c.combine_chunks() for c in table.slice(a, step).columns], names=names)


@PROFILE
@given(cases(mixed=False), st.integers(1, 4))
def test_bounded_state_gives_the_reference_outputs(case: Case, parts: int) -> None:
    """Sweeps after every row, caches reset at every step: the reference's outputs still."""
    q, events, time = case
    text = format_query(q)
    note(f"query:\n{text}\nevents: {events}\ntime={time!r}")
    ref = reference_matches(q, events, time=time)
    knobs = [(state_module, "SWEEP_MIN", 1), (dfa_module, "MAX_TRANSITIONS", 1),
             (row_path, "LIKE_CACHE_SIZE", 1)]
    saved = [getattr(m, name) for m, name, _ in knobs]
    try:
        for m, name, value in knobs:
            setattr(m, name, value)
        # a max_states no other test uses: a Query (and automaton) built under these knobs
        compiled = ceql.compile(text, max_states=1_000_003)
        assert compiled.evaluator(time="ts").automaton.max_transitions == 1
        got = keys(compiled.run(events, time=time))
        check_against_reference(got, ref, q.limit)
        ev = compiled.evaluator(time=time)
        fed = [k for rb in _arrow_batches(events, parts) for k in keys(ev.feed(rb))]
        assert fed == got
    finally:
        for (m, name, _), value in zip(knobs, saved, strict=True):
            setattr(m, name, value)
