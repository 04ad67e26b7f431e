"""Unit tests of the engine's stages: CEA, determinization, tECS and the evaluator."""

from __future__ import annotations

import datetime as dt
import pickle
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pcsv
import pytest

import ceql
from ceql.automata import DFA, build_cea
from ceql.frontends.ceql import parse
from ceql.predicates import AtomTable
from ceql.runtime import tecs as _tecs

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def keys(q: ceql.Query, events: list[dict[str, Any]], **kw: Any) -> list[tuple[Any, ...]]:
    return [(m.end_position, m.start_position, m.positions, m.partition)
            for m in q.run(events, **kw)]


def arrow_keys(q: ceql.Query, events: list[dict[str, Any]], **kw: Any) -> list[tuple[Any, ...]]:
    ev = q.evaluator(**kw)
    names = list(dict.fromkeys(k for e in events for k in e))  # from_pylist reads row 0 only
    table = pa.Table.from_pylist([{k: e.get(k) for k in names} for e in events])
    return [(m.end_position, m.start_position, m.positions, m.partition)
            for m in ev.feed(table)]


def types(s: str) -> list[dict[str, Any]]:
    return [{"type": t} for t in s.split()]


# ---------------------------------------------------------------------------- CEA

def cea_of(text: str) -> Any:
    return build_cea(parse(text), AtomTable())


def test_cea_initial_state_has_no_incoming_transitions() -> None:
    for text in ["SELECT * FROM S WHERE A+", "SELECT * FROM S WHERE (A ; B)+ : C:+",
                 "SELECT * FROM S WHERE (A OR B+)+ ; C"]:
        cea = cea_of(text)
        assert all(t.dst != 0 for t in cea.transitions)
        assert cea.finals


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_cea_is_linear_in_the_query(n: int) -> None:
    seq = " ; ".join(f"E{i}" for i in range(n))
    cea = cea_of(f"SELECT * FROM S WHERE {seq}")
    # the initial state, one gap state per ';' and the final state
    assert cea.n_states == n + 1
    assert len(cea.transitions) <= 3 * n


def test_cea_projection_marks_only_selected_variables() -> None:
    cea = cea_of("SELECT b FROM S WHERE A AS a ; B AS b")
    marks = {(t.mark, t.pmark, t.vars) for t in cea.transitions if t.mark}
    assert marks == {(True, False, frozenset()), (True, True, frozenset({"b"}))}


def test_strict_drops_every_skipping_transition() -> None:
    cea = cea_of("SELECT STRICT * FROM S WHERE A ; B+")
    assert all(t.mark for t in cea.transitions)


def test_filter_or_copies_the_filtered_formula_once_per_disjunct() -> None:
    one = cea_of("SELECT * FROM S WHERE A AS a ; B AS b FILTER a[x = 1]")
    two = cea_of("SELECT * FROM S WHERE A AS a ; B AS b FILTER a[x = 1] OR b[x = 2]")
    assert two.n_states == 2 * (one.n_states - 1) + 1


# ---------------------------------------------------------------------------- DFA

def test_determinization_is_cached_and_inert_classes_are_recognized() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B")
    atoms, cea = q.automaton()
    dfa = DFA(cea, "ALL", 100)
    a = atoms.row_class({"type": "A"})
    c = atoms.row_class({"type": "C"})
    d0 = dfa.start(dfa.g0)
    marked, acc, unmarked, acc2, _ = dfa.step(d0, a)
    assert marked >= 0 and unmarked < 0 and not acc and not acc2
    assert dfa.step(d0, a) is dfa.step(d0, a)
    assert dfa.is_inert(marked, c)
    assert not dfa.is_inert(marked, atoms.row_class({"type": "B"}))


def test_determinization_cap_raises_resource_error() -> None:
    # (A|B)+ A (A|B)^6, contiguous: the classic exponential subset construction. The cap
    # bounds the states a stream holds at once (about 7 here), not how many it ever built.
    text = "SELECT * FROM S WHERE (A OR B):+ : A" + " : (A OR B)" * 6
    q = ceql.compile(text, max_states=5)
    rnd = random.Random(1)
    events = [{"type": rnd.choice("AB")} for _ in range(60)]
    with pytest.raises(ceql.CeqlResourceError) as e:
        list(q.run(events))
    assert str(e.value).startswith(
        "The query needs more than 5 determinized automaton states on this stream: "
        "raise max_states")
    every = [m.positions for m in ceql.compile(text).run(events)]
    assert every  # 20 fits although the stream builds far more states over time
    assert [m.positions for m in ceql.compile(text, max_states=20).run(events)] == every


# ---------------------------------------------------------------------------- tECS

def _leaves(node: Any, key: float, eps: float) -> set[tuple[int, tuple[int, ...]]]:
    return {(b[2], tuple(o[2] for o in reversed(path)))
            for b, path in _tecs.enumerate_node(node, key, eps)}


def _odepth(n: Any) -> int:
    d = 0
    while n[2] < 0:
        d += 1
        n = n[3]
    return d


def _check_shape(n: Any, seen: set[int]) -> None:
    if id(n) in seen:
        return
    seen.add(id(n))
    assert _odepth(n) <= 3
    if n[2] < 0:
        assert n[3][0] >= n[4][0]  # time-ordered
        _check_shape(n[3], seen)
        _check_shape(n[4], seen)
    elif n[3] is not None:
        _check_shape(n[3], seen)


def test_union_gadgets_keep_the_tecs_time_ordered_bounded_and_exact() -> None:
    rnd = random.Random(7)
    for _ in range(200):
        pool: dict[int, list[Any]] = {}
        expected: dict[int, set[tuple[int, tuple[int, ...]]]] = {}
        holds: dict[int, set[tuple[int, tuple[int, ...]]]] = {}  # id(node) -> its leaves
        pos = 0
        for _ in range(12):
            start = rnd.randrange(4)
            pos += 1
            b = (start, start, start, None, start)
            o = (start, start, 10 + pos, b, 0)
            node: Any = o
            leaves = {(start, (10 + pos,))}
            if pool.get(start) and rnd.random() < 0.8:
                prev = rnd.choice(pool[start])
                node = _tecs.union(prev, o, None, 0)
                leaves |= holds[id(prev)]
            holds[id(node)] = leaves
            assert _leaves(node, 0, 99) == leaves
            pool.setdefault(start, []).append(node)
            expected[start] = leaves
        for nodes in pool.values():
            for n in nodes:
                _check_shape(n, set())
        ul = [pool[s][-1] for s in sorted(pool, reverse=True)]
        merged = _tecs.merge(ul, None, 0)
        assert _leaves(merged, 0, 99) == set().union(*(expected[s] for s in pool))
        # the window cuts whole branches: only starts >= 2 survive key 5, eps 3
        assert {s for s, _ in _leaves(merged, 5, 3)} == {s for s in pool if s >= 2}


# ---------------------------------------------------------------------------- evaluator

def test_row_and_arrow_paths_agree_on_the_example_stock_file() -> None:
    table = pcsv.read_csv(EXAMPLES / "stock.csv")
    rows = table.to_pylist()
    queries = [
        "SELECT * FROM S WHERE SELL AS a ; BUY AS b ; SELL AS c "
        "FILTER a[name = 'INTC'] AND b[name = 'RIMM'] AND c[name = 'QQQ'] WITHIN 5 SECONDS",
        "SELECT * FROM S WHERE SELL AS a ; (BUY OR SELL)+ AS b ; SELL AS c "
        "FILTER a[name = 'INTC'] AND b[name = 'QQQ'] AND b[volume > 1000] AND c[name = 'RIMM'] "
        "PARTITION BY [type] WITHIN 3 SECONDS CONSUME BY PARTITION",
        "SELECT LAST a, c FROM S WHERE SELL AS a : BUY AS b ; SELL AS c "
        "FILTER a[price > 20] AND c[name LIKE '^[IR]'] WITHIN 40 EVENTS",
        "SELECT * FROM S WHERE BUY AS a ; BUY AS b FILTER a[name = 'INTC'] AND b[name = 'INTC'] "
        "PARTITION BY [name, volume] WITHIN 10 SECONDS CONSUME BY ANY LIMIT 2",
    ]
    for text in queries:
        q = ceql.compile(text)
        row = keys(q, rows, time="ts", time_unit="us")
        ev = q.evaluator(time="ts", time_unit="us")
        batched = []
        for rb in table.to_batches(max_chunksize=777):
            batched += [(m.end_position, m.start_position, m.positions, m.partition)
                        for m in ev.feed(rb)]
        assert row == batched, text
        assert row, text


def test_out_of_order_time_is_an_error_naming_the_position() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B WITHIN 5 SECONDS")
    events = [{"type": "A", "ts": 1}, {"type": "B", "ts": 3}, {"type": "B", "ts": 2}]
    msg = ("Event 2 is out of order: 'ts' goes back from 3 to 2 (the event: {'type': 'B', "
           "'ts': 2}). Sort the events by time first (Query.run(..., sort=True) does it), or "
           "fix the data.")
    with pytest.raises(ceql.CeqlInputError) as e:
        list(q.run(events, time="ts"))
    assert str(e.value) == msg
    with pytest.raises(ceql.CeqlInputError) as e:
        q.evaluator(time="ts").feed(pa.Table.from_pylist(events))
    assert str(e.value) == msg
    # asked for, the engine sorts instead, and positions still index the input
    assert [m.positions for m in q.run(events, time="ts", sort=True)] == [(0, 2), (0, 1)]


def test_missing_time_is_an_error_naming_the_position() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B")
    with pytest.raises(ceql.CeqlInputError) as e:
        list(q.run([{"type": "A", "ts": 1}, {"type": "B"}], time="ts"))
    assert str(e.value) == (
        "Event 1 has no usable time: attribute 'ts' is missing from the event {'type': 'B'}; "
        "every event needs a number or a timestamp there.")


def test_datetimes_and_time_units() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B WITHIN 1 MINUTE 30 SECONDS")
    t0 = dt.datetime(2024, 1, 2, 14, 30)
    events = [{"type": "A", "ts": t0}, {"type": "B", "ts": t0 + dt.timedelta(seconds=90)},
              {"type": "B", "ts": t0 + dt.timedelta(seconds=91)}]
    ms = list(q.run(events, time="ts"))
    assert [m.positions for m in ms] == [(0, 1)]
    assert ms[0].start_time == t0
    assert arrow_keys(q, events, time="ts") == keys(q, events, time="ts")
    us = [{"type": e["type"], "ts": int((e["ts"] - t0).total_seconds() * 1e6)} for e in events]
    assert [m.positions for m in q.run(us, time="ts", time_unit="us")] == [(0, 1)]
    assert [m.positions for m in q.run(us, time="ts", time_unit="ns")] == [(0, 1), (0, 2)]


def test_null_partition_values_drop_the_event_and_keep_positions() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B PARTITION BY [k]")
    events = [{"type": "A", "k": 1}, {"type": "A", "k": None}, {"type": "B"},
              {"type": "B", "k": 1}, {"type": "B", "k": 2}]
    assert keys(q, events) == [(3, 0, (0, 3), (1,))]
    assert arrow_keys(q, events) == keys(q, events)


def test_missing_attributes_make_predicates_false_not_errors() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A AS a ; B AS b FILTER a[x > 1] AND b[NOT y = 2]")
    events = [{"type": "A"}, {"type": "A", "x": 5}, {"type": "B"}, {"type": "B", "y": 3}]
    assert keys(q, events) == [(3, 1, (1, 3), ())]


def test_consume_by_partition_and_any_across_partitions() -> None:
    text = "SELECT * FROM S WHERE A ; B PARTITION BY [k] CONSUME BY {}"
    events = [{"type": "A", "k": 1}, {"type": "A", "k": 2}, {"type": "B", "k": 1},
              {"type": "B", "k": 2}, {"type": "B", "k": 1}]
    part = ceql.compile(text.format("PARTITION"))
    assert keys(part, events) == [(2, 0, (0, 2), (1,)), (3, 1, (1, 3), (2,))]
    anyc = ceql.compile(text.format("ANY"))
    assert keys(anyc, events) == [(2, 0, (0, 2), (1,))]
    for q in (part, anyc):
        assert arrow_keys(q, events) == keys(q, events)


def test_limit_keeps_the_first_outputs_per_position() -> None:
    # the first 2 per end in enumeration order, whatever that order is (SEMANTICS.md: unspecified)
    events = types("A A A B B")
    q = ceql.compile("SELECT * FROM S WHERE A ; B LIMIT 2")
    every = keys(ceql.compile("SELECT * FROM S WHERE A ; B"), events)
    assert len(every) == 6
    assert keys(q, events) == [k for end in (3, 4) for k in [k for k in every if k[0] == end][:2]]


def test_memory_stays_bounded_by_the_window_on_an_endless_stream() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B+ ; C WITHIN 20 EVENTS")
    ev = q.evaluator()
    rnd = random.Random(3)
    sizes = []
    for _ in range(8):
        ev.feed([{"type": rnd.choice("AB")} for _ in range(3000)])
        live = ev.live()
        assert live.partitions == 1
        sizes.append(live.expiring + live.runs)
    assert max(sizes[2:]) <= 2 * max(sizes[:2])


def test_idle_partitions_are_dropped_once_expired() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 5 SECONDS")
    ev = q.evaluator(time="t")
    ev.feed(pa.Table.from_pylist([{"type": "A", "k": i, "t": i} for i in range(1000)]))
    ev.feed(pa.Table.from_pylist([{"type": "C", "k": 0, "t": 2000}]))
    assert ev.live().partitions <= 1


def test_query_is_immutable_picklable_and_cached() -> None:
    text = "SELECT * FROM S WHERE A ; B"
    q = ceql.compile(text)
    assert ceql.compile(text) is q
    q2 = pickle.loads(pickle.dumps(q))
    assert q2.text == text and keys(q2, types("A B")) == keys(q, types("A B"))
    with pytest.raises(AttributeError):
        q.text = "x"  # type: ignore[misc]


def test_match_variables_report_each_variable() -> None:
    q = ceql.compile("SELECT * FROM S WHERE SELL AS a ; (BUY+ AS b) ; SELL AS c")
    (m,) = [m for m in q.run(types("SELL BUY BUY SELL")) if m.positions == (0, 1, 2, 3)]
    # BUY only repeats its alias b: not reported; SELL binds more than a or c: reported
    assert m.variables == {"SELL": (0, 3), "a": (0,), "b": (1, 2), "c": (3,)}
    assert q.variables == ("SELL", "a", "b", "c")
    q = ceql.compile("SELECT b FROM S WHERE SELL AS a ; BUY AS b")
    assert [m.variables for m in q.run(types("SELL BUY"))] == [{"b": (1,)}]


def test_explain_lists_predicates_and_transitions() -> None:
    text = "SELECT * FROM S WHERE SELL AS a ; BUY AS b FILTER a[price > 100]"
    out = ceql.explain(text)
    assert "p0: type = 'SELL'" in out
    assert "price > 100" in out
    assert "q0 --[" in out
    dot = ceql.explain(text, dot=True)
    assert dot.startswith("digraph cea {") and dot.rstrip().endswith("}")


def test_catastrophic_regex_runs_in_linear_time() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A AS a FILTER a[s LIKE '(x+x+)+y']")
    events = [{"type": "A", "s": "x" * 20000}, {"type": "A", "s": "x" * 50 + "y"}]
    assert keys(q, events) == [(1, 1, (1,), ())]
    assert arrow_keys(q, events) == keys(q, events)


def test_enumeration_is_lazy_and_output_linear() -> None:
    import itertools

    q = ceql.compile("SELECT * FROM S WHERE A+ ; B")
    events = types("A " * 60 + "B")  # 2**60 - 1 complex events end at position 60
    first = list(itertools.islice(q.run(events), 5))
    assert [m.end_position for m in first] == [60] * 5
    assert len({m.positions for m in first}) == 5


def test_deep_queries_compile_or_fail_clearly() -> None:
    q = ceql.compile("SELECT * FROM S WHERE " + " ; ".join(["A"] * 1500))
    assert [m.positions for m in q.run(types("A " * 1500))] == [tuple(range(1500))]
    assert "q0 --[" in ceql.explain(q.text)
    with pytest.raises(ceql.CeqlValidationError) as e:
        ceql.compile("SELECT * FROM S WHERE " + " ; ".join(["A"] * 2500))
    assert str(e.value) == (
        "The query nests 2502 levels deep; ceql compiles at most 2000. Shorten the longest "
        "sequence or nesting (e.g. use A+ for a run of A events).")


def test_evaluators_of_one_thread_share_the_determinized_automaton() -> None:
    q = ceql.compile("SELECT * FROM S WHERE SELL AS a ; BUY AS b FILTER a[p > 1] WITHIN 3 EVENTS")
    events = [{"type": "SELL", "p": 2}, {"type": "BUY"}, {"type": "SELL", "p": 0},
              {"type": "BUY"}]
    first = q.evaluator()
    again = q.evaluator()
    assert first.automaton is again.automaton  # the second starts with the first one's states
    assert [m.positions for m in first.feed(events)] == [(0, 1), (0, 3)]
    assert [m.positions for m in again.feed(events)] == [(0, 1), (0, 3)]
    other_key = q.evaluator(type_key="kind")
    assert other_key.automaton is not first.automaton

    import threading

    seen: list[Any] = []
    t = threading.Thread(target=lambda: seen.append(q.evaluator().automaton))
    t.start()
    t.join()
    assert seen[0] is not first.automaton  # a DFA grows as it runs: one per thread
