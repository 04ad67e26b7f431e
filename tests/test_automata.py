"""The determinized automaton: strategies as classes, content keys, labels, the bounded cache."""

from __future__ import annotations

import gc
import os
import pickle
import random
import subprocess
import sys
from collections.abc import Hashable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import ceql
from ceql.automata import (
    DFA,
    AllStrategy,
    LastStrategy,
    MaxStrategy,
    NextStrategy,
    strategy_for,
)
from ceql.frontends.ceql import format_query
from strategies import PROFILE, Case, cases

STRATEGIES = ("ALL", "ANY", "STRICT", "NEXT", "LAST", "MAX")
# (A|B)+ A (A|B)^4, contiguous: a subset construction that keeps finding new states
BLOWUP = "SELECT {s} * FROM S WHERE (A OR B):+ : A" + " : (A OR B)" * 4
Trace = list[tuple[Hashable, frozenset[Hashable]]]


def dfa_of(text: str, strategy: str, max_states: int = 10**6) -> tuple[DFA, dict[str, int]]:
    """A private DFA of ``text`` and the event classes of types A, B and C."""
    atoms, cea = ceql.compile(text).automaton()
    classes = {t: atoms.row_class({"type": t}) for t in "ABC"}
    return DFA(cea, strategy, max_states), classes


def walk(dfa: DFA, classes: Iterable[int]) -> Trace:
    """Algorithm 1 without the tECS: after each event, the global key and active state keys."""
    g = dfa.g0
    active: set[int] = set()
    out: Trace = []
    for c in classes:
        nxt: set[int] = set()
        for d in [dfa.start(g), *active]:
            q, _, q2, _, _ = dfa.step(d, c)
            nxt.update(x for x in (q, q2) if x >= 0)
        g = dfa.gstep(g, c)
        active = nxt
        out.append((dfa.global_key(g), frozenset(dfa.state_key(d) for d in active)))
    return out


def ab(seed: int, n: int) -> str:
    rnd = random.Random(seed)
    return "".join(rnd.choice("AB") for _ in range(n))


class Owner:
    """A stand-in evaluator: holds the ids it is given, counts resets."""

    def __init__(self, states: Iterable[int] = (), globals_: Iterable[int] = ()) -> None:
        self.states = set(states)
        self.globals = set(globals_)
        self.resets = 0

    def dfa_in_use(self) -> tuple[set[int], set[int]]:
        return self.states, self.globals

    def dfa_was_reset(self) -> None:
        self.resets += 1


def positions(matches: Iterable[ceql.Match]) -> list[tuple[Any, ...]]:
    """``(end, start, positions, partition)`` of each match, sorted (the order at one end is
    unspecified)."""
    return sorted((m.end_position, m.start_position, tuple(m.positions), tuple(m.partition))
                  for m in matches)


# ---------------------------------------------------------------------------- strategies

def test_each_strategy_family_is_a_class() -> None:
    _, cea = ceql.compile("SELECT * FROM S WHERE A ; B").automaton()
    expected = {"ALL": AllStrategy, "ANY": AllStrategy, "STRICT": AllStrategy,
                "NEXT": NextStrategy, "LAST": LastStrategy, "MAX": MaxStrategy}
    for name, cls in expected.items():
        s = strategy_for(name, cea)
        assert type(s) is cls
        assert DFA(cea, name, 10).constant_global == (cls is AllStrategy)
    with pytest.raises(ValueError):
        strategy_for("SOME", cea)


def test_the_global_state_only_moves_for_strategies_that_have_one() -> None:
    for s in STRATEGIES:
        dfa, cls = dfa_of(BLOWUP.format(s=s), s)
        trace = walk(dfa, [cls[t] for t in "ABAB"])
        moved = {g for g, _ in trace} != {dfa.global_key(dfa.g0)}
        assert moved != dfa.constant_global, s


# ---------------------------------------------------------------------------- labels

def test_labels_are_interned_frozensets_of_variables() -> None:
    dfa, cls = dfa_of("SELECT * FROM S WHERE A AS x ; (B AS y)+", "ALL")
    d0 = dfa.start(dfa.g0)
    after_a, acc, skip, _, label = dfa.step(d0, cls["A"])
    # A only repeats its alias x, so x alone labels the event (ceql.ir.output_variables)
    assert type(label) is frozenset and label == frozenset({"x"})
    assert not acc and skip < 0
    assert dfa.step(d0, cls["C"])[4] == frozenset()
    after_b, acc, _, _, label_b = dfa.step(after_a, cls["B"])
    assert acc and label_b == frozenset({"y"})
    _, acc, _, _, label_bb = dfa.step(after_b, cls["B"])
    assert acc and after_b != after_a
    assert label_bb is label_b  # one shared object for equal labels


# ---------------------------------------------------------------------------- content keys

@pytest.mark.parametrize("strategy", STRATEGIES)
def test_keys_are_content_whatever_the_discovery_order(strategy: str) -> None:
    text = BLOWUP.format(s=strategy)
    x, y = ab(1, 25), ab(2, 25)
    one, cls = dfa_of(text, strategy)
    two, _ = dfa_of(text, strategy)
    walk(one, [cls[t] for t in x])  # ``one`` numbers x's states first, ``two`` y's
    trace_one = walk(one, [cls[t] for t in y])
    trace_two = walk(two, [cls[t] for t in y])
    assert trace_one == trace_two
    for dfa in (one, two):
        for d in list(dfa.trans):
            key = dfa.state_key(d)
            assert dfa.state_id(key) == d
            assert pickle.loads(pickle.dumps(key)) == key
        for g in list(dfa.gtrans):
            assert dfa.global_id(dfa.global_key(g)) == g
    assert one.state_id(frozenset()) == -1
    new_key = next(iter(trace_one[-1][1]))
    fresh, _ = dfa_of(text, strategy)
    before = fresh.size
    d = fresh.state_id(new_key)  # interned from content alone (as a restore does)
    assert fresh.size == before + 1 and fresh.state_id(new_key) == d


_CHILD = """
import pickle, sys
sys.path[:0] = [{tests!r}]
from test_automata import BLOWUP, ab, dfa_of, walk
out = {{}}
for s in ("ALL", "NEXT", "LAST", "MAX"):
    dfa, cls = dfa_of(BLOWUP.format(s=s), s)
    walk(dfa, [cls[t] for t in ab(7, 30)])
    out[s] = walk(dfa, [cls[t] for t in ab(8, 30)])
sys.stdout.buffer.write(pickle.dumps(out))
"""


def test_keys_are_equal_in_another_process() -> None:
    tests = str(Path(__file__).resolve().parent)
    env = {**os.environ, "PYTHONHASHSEED": "4321"}
    done = subprocess.run([sys.executable, "-c", _CHILD.format(tests=tests)], env=env,
                          capture_output=True, check=True)
    theirs = pickle.loads(done.stdout)
    for s in ("ALL", "NEXT", "LAST", "MAX"):
        dfa, cls = dfa_of(BLOWUP.format(s=s), s)
        assert walk(dfa, [cls[t] for t in ab(8, 30)]) == theirs[s], s


# ---------------------------------------------------------------------------- the bounded cache

def test_going_over_budget_never_raises_but_marks_the_cache_full() -> None:
    dfa, cls = dfa_of(BLOWUP.format(s="MAX"), "MAX", max_states=4)
    assert not dfa.full
    walk(dfa, [cls[t] for t in ab(3, 40)])
    assert dfa.full and dfa.size > 4


def test_collect_keeps_what_live_owners_hold_and_drops_the_rest() -> None:
    dfa, cls = dfa_of(BLOWUP.format(s="NEXT"), "NEXT", max_states=6)
    walk(dfa, [cls[t] for t in ab(4, 40)])
    assert dfa.full
    states, globals_ = sorted(dfa.trans), sorted(dfa.gtrans)
    assert len(states) > 8 and len(globals_) > 3
    a = Owner(states[:2], globals_[-1:])
    b = Owner(states[5:6], [])
    dead = Owner(states[7:8], globals_[1:2])
    for o in (a, b, dead, a):
        dfa.attach(o)
    del dead
    gc.collect()
    keys = {d: dfa.state_key(d) for d in states}
    gkeys = {g: dfa.global_key(g) for g in globals_}
    dfa.collect(a)
    kept = {states[0], states[1], states[5]}
    kept_g = {dfa.g0, globals_[-1]}
    assert not dfa.full and a.resets == 1 and b.resets == 1
    assert set(dfa.trans) == kept and all(not t for t in dfa.trans.values())
    assert set(dfa.gtrans) == kept_g and all(not t for t in dfa.gtrans.values())
    assert not dfa.starts
    assert dfa.size == len(kept) + len(kept_g)
    for d in kept:
        assert dfa.state_key(d) == keys[d] and dfa.state_id(keys[d]) == d
    for g in kept_g:
        assert dfa.global_key(g) == gkeys[g] and dfa.global_id(gkeys[g]) == g
    with pytest.raises(KeyError):
        dfa.state_key(states[7])
    # ids are never reused: dropped content comes back under a new id
    again = dfa.state_id(keys[states[7]])
    assert again > max(states)
    assert dfa.global_id(gkeys[globals_[1]]) > max(globals_)
    # the kept states step again, computing their transitions afresh
    for d in kept:
        dfa.step(d, cls["A"])


def test_the_budget_counts_from_what_was_kept() -> None:
    dfa, cls = dfa_of(BLOWUP.format(s="ALL"), "ALL", max_states=5)
    walk(dfa, [cls[t] for t in ab(5, 40)])
    other = Owner(sorted(dfa.trans)[:4], [dfa.g0])  # holds 5 = max_states
    me = Owner()
    dfa.attach(other)
    dfa.attach(me)
    dfa.collect(me)  # ``me`` holds nothing: no error, whatever the others hold
    assert dfa.size == 5 and not dfa.full
    elsewhere, _ = dfa_of(BLOWUP.format(s="ALL"), "ALL")
    trace = walk(elsewhere, [cls[t] for t in ab(6, 60)])
    kept = {dfa.state_key(d) for d in dfa.trans}
    new = [k for k in dict.fromkeys(k for _, ks in trace for k in ks) if k not in kept]
    for key in new[:5]:
        dfa.state_id(key)
    assert dfa.size == 10 and not dfa.full  # 5 new states since the reset: within budget
    dfa.state_id(new[5])
    assert dfa.full


def test_collect_fails_only_an_owner_that_alone_holds_the_budget() -> None:
    dfa, cls = dfa_of(BLOWUP.format(s="ALL"), "ALL", max_states=5)
    walk(dfa, [cls[t] for t in ab(5, 40)])
    greedy = Owner(sorted(dfa.trans)[:4], [dfa.g0])
    modest = Owner(sorted(dfa.trans)[:2], [dfa.g0])
    dfa.attach(greedy)
    dfa.attach(modest)
    dfa.collect(modest)
    with pytest.raises(ceql.CeqlResourceError) as e:
        dfa.collect(greedy)
    assert str(e.value).startswith(
        "The query needs more than 5 determinized automaton states on this stream: raise "
        "max_states (ceql.compile(..., max_states=N)) or simplify the query")
    assert modest.resets == 2 and not dfa.full  # the reset happened all the same


# ---------------------------------------------------------------------------- through the API

_FILLER = "PPPQ" * 5  # alone it builds 19 states of the query below
_FITS = "PPQQ" * 5  # alone it builds 15, and holds at most 7 at once


@pytest.mark.parametrize("filler_alive", [True, False])
def test_a_stream_that_fits_runs_whatever_ran_before_in_its_thread(filler_alive: bool) -> None:
    # Regression: the state cap used to count every state the thread's shared DFA had built,
    # so this stream failed after an unrelated one had run in the same (Spark worker) thread.
    a, b = ("P", "Q") if filler_alive else ("R", "U")  # a Query (and DFA) of each's own
    text = f"SELECT * FROM S WHERE ({a} OR {b}):+ : {a}" + f" : ({a} OR {b})" * 6

    def events(s: str) -> list[dict[str, Any]]:
        return [{"type": a if t == "P" else b} for t in s]

    q = ceql.compile(text, max_states=20)
    want = positions(ceql.compile(text).run(events(_FITS)))
    assert want
    filler = q.evaluator()
    filler.feed(events(_FILLER))
    if not filler_alive:
        del filler
        gc.collect()
    assert positions(q.run(events(_FITS))) == want


def _same_under_a_tiny_budget(case: Case, budget: int) -> None:
    query, events, time = case
    text = format_query(query)
    note(f"query:\n{text}\nevents: {events}\ntime={time!r}")
    want = positions(ceql.compile(text).run(events, time=time))
    small = ceql.compile(text, max_states=budget)
    try:
        first = small.evaluator(time=time)  # stays alive, holding its states
        got_first = positions(first.feed(events))
        second = small.evaluator(time=time)
        got_second: list[tuple[Any, ...]] = []
        for i in range(0, len(events), 3):
            got_second += positions(second.feed(events[i:i + 3]))
    except ceql.CeqlResourceError:
        return  # this stream needs more than ``budget`` states at once
    assert got_first == want
    assert sorted(got_second) == want


@PROFILE
@given(cases(), st.sampled_from([3, 4, 8]))
def test_resets_do_not_change_the_matches(case: Case, budget: int) -> None:
    _same_under_a_tiny_budget(case, budget)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_resets_do_not_change_the_matches_of_a_blowup(strategy: str) -> None:
    text = (f"SELECT {strategy} * FROM S WHERE (A OR B):+ : A" + " : (A OR B)" * 8
            + " WITHIN 12 EVENTS")
    events: Sequence[dict[str, Any]] = [{"type": t} for t in ab(9, 300)]
    unbounded = ceql.compile(text)
    want = positions(unbounded.run(events))
    bounded = ceql.compile(text, max_states=25)
    got = positions(bounded.run(events))
    assert got == want
    # it did reset: the cache stays within its budget plus what was kept
    assert bounded.determinized("type", "stream")[1].size <= 2 * 25
    assert unbounded.determinized("type", "stream")[1].size > 2 * 25


def test_max_components_of_earlier_snapshots_still_read() -> None:
    # before the sibling set, MAX components were (E, R); restored ones read as (E, ∅, R)
    cea = ceql.compile("SELECT MAX x FROM S WHERE (A+ AS x) : (B OR A) ; C").cea()
    s = MaxStrategy(cea)
    comp = s.start(frozenset())
    old = (comp[0], comp[2])
    assert s.accepts(old) == s.accepts(comp)
    assert s.strip(old) == s.strip(comp)
    for c in range(4):
        assert s.successors(old, c) == s.successors(comp, c)
