"""Compilation near-linear in the query, enumeration linear in the output.

The bounds are on counts, never on seconds: automaton sizes, Python steps taken to build one,
bytes allocated by the lexer, whether the parser ran at all, and the lengths of the tuples
enumeration copies while it lists a match.
"""

from __future__ import annotations

import inspect
import itertools
import sys
import tracemalloc
import types
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given

import ceql
import ceql.query
from ceql.automata import CEA, build_cea
from ceql.frontends.ceql import depth_floor, format_query, parse
from ceql.ir import MAX_DEPTH, depth
from ceql.ir import nodes as A
from ceql.predicates import AtomTable
from ceql.runtime.enumeration import RUN, Enumerator
from reference import reference_matches
from strategies import PROFILE, queries


def cea_of(where: str, select: str = "*") -> CEA:
    return build_cea(parse(f"SELECT {select} FROM S WHERE {where}"), AtomTable())


def python_steps(fn: Callable[[], object]) -> int:
    """How many Python-level steps ``fn()`` takes: function calls and line events (a loop or
    comprehension gives one per iteration), a deterministic measure of work."""
    count = 0

    def trace(frame: types.FrameType, event: str, arg: object) -> Any:
        nonlocal count
        count += 1
        return trace

    sys.settrace(trace)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count


def build_steps(text: str) -> int:
    """``python_steps`` of building the CEA of ``text`` (parsed outside the count)."""
    ast = parse(text)
    return python_steps(lambda: build_cea(ast, AtomTable()))


def ors(n: int) -> str:
    return " OR ".join(f"T{i}" for i in range(n))


# ---------------------------------------------------------------------------- compilation

@pytest.mark.parametrize("k", [2, 10, 50, 1200])
def test_nested_iterations_are_one(k: int) -> None:
    """``A+…+`` is ``A+`` (three states, five transitions), however many ``+``."""
    cea = ceql.compile("SELECT * FROM S WHERE A" + "+" * k).cea()
    assert (cea.n_states, len(cea.transitions)) == (3, 5)


@pytest.mark.parametrize("k", [10, 1500])
def test_deep_parenthesised_iterations_compile_small(k: int) -> None:
    plus = ceql.compile("SELECT * FROM S WHERE " + "(" * k + "A" + ")+" * k).cea()
    assert (plus.n_states, len(plus.transitions)) == (3, 5)
    mixed = ceql.compile("SELECT * FROM S WHERE " + "(" * k + "A"
                         + "".join(")+" if i % 3 else "):+" for i in range(k))).cea()
    assert mixed == plus  # any non-contiguous iteration in a chain makes it φ+
    contiguous = ceql.compile("SELECT * FROM S WHERE " + "(" * k + "A" + "):+" * k).cea()
    assert contiguous == cea_of("A:+")


@pytest.mark.parametrize("k", [20, 300])
def test_iterations_under_alternatives_under_an_iteration_are_dropped(k: int) -> None:
    """``((A OR B0)+ OR B1)+ …`` is ``(A OR B0 OR B1 …)+``: linear, not quadratic or worse."""
    nested = cea_of("(" * k + "A" + "".join(f" OR B{i})+" for i in range(k)))
    assert len(nested.transitions) <= 4 * k + 8
    contiguous = cea_of("(" * k + "A" + "".join(f" OR B{i}):+" for i in range(k)))
    assert len(contiguous.transitions) <= 2 * k + 4
    named = cea_of("(" * k + "A" + "".join(f"+ AS x{i})" for i in range(k)) + "+")
    assert (named.n_states, len(named.transitions)) == (3, 5)


@pytest.mark.parametrize("n", [50, 1900])
def test_an_or_of_n_types_has_n_transitions(n: int) -> None:
    cea = ceql.compile(f"SELECT * FROM S WHERE {ors(n)}").cea()
    assert len(cea.transitions) == n and cea.n_states <= n + 1
    # contiguous steps after alternatives: one link per alternative, not one per pair
    assert len(cea_of(f"({ors(n)}):+").transitions) == 2 * n
    assert len(cea_of(f"({ors(n)}) : ({ors(n)})").transitions) == 2 * n


def test_building_an_or_chain_does_linear_work() -> None:
    """Twice the alternatives, (about) twice the work: no step copies what came before."""
    steps = {n: build_steps(f"SELECT * FROM S WHERE {ors(n)}") for n in (400, 800)}
    assert steps[800] <= 2.2 * steps[400], steps


def test_building_a_long_sequence_does_linear_work() -> None:
    steps = {n: build_steps("SELECT * FROM S WHERE "
                            + " ; ".join(f"(A{i} OR B{i})" for i in range(n)))
             for n in (200, 400)}
    assert steps[400] <= 2.2 * steps[200], steps


def test_a_too_deep_query_is_refused_before_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_parse(text: str) -> A.Query:
        raise AssertionError("parsed a query the depth check should have refused")

    monkeypatch.setattr(ceql.query, "parse", no_parse)
    for n, prefix in [(100_000, ""), (2500, " ")]:  # a new text: compile caches by text
        with pytest.raises(ceql.CeqlValidationError) as e:
            ceql.compile(prefix + "SELECT * FROM S WHERE " + " ; ".join(["A"] * n))
        assert str(e.value) == (
            f"The query nests {n + 2} levels deep; ceql compiles at most {MAX_DEPTH}. Shorten "
            "the longest sequence or nesting (e.g. use A+ for a run of A events).")
    with pytest.raises(ceql.CeqlValidationError, match=r"nests at least \d+ levels deep"):
        ceql.compile("SELECT * FROM S WHERE A FILTER A[x = " + " + ".join(["1"] * 3000) + "]")


@PROFILE
@given(queries())
def test_depth_floor_never_exceeds_the_depth(q: A.Query) -> None:
    text = format_query(q)
    floor, exact = depth_floor(text)
    d = depth(parse(text))
    assert floor <= d
    assert not exact or floor == d


def test_depth_floor_of_typical_deep_shapes() -> None:
    where = {
        " ; ".join(["A"] * 300): (302, True),
        " OR ".join(["S>A"] * 300): (302, True),
        "(" * 300 + "A" + ")+" * 300: (303, True),
        "A" + " AS x" * 300: (303, True),
        "A FILTER " + " AND ".join(["A[x = 1]"] * 300): None,
        "A FILTER A[" + "NOT " * 300 + "x = 1]": None,
    }
    for w, want in where.items():
        text = f"SELECT * FROM S WHERE {w}"
        d = depth(parse(text))
        floor, exact = depth_floor(text)
        assert (floor, exact) == (want or (d, False))
        assert floor == d


def test_a_long_string_literal_costs_memory_linear_in_its_length() -> None:
    n = 1_000_000
    text = "SELECT * FROM S WHERE A FILTER A[x = '" + "ab''" * (n // 4) + "']"
    parse("SELECT * FROM S WHERE A")  # the parser is built once, outside the measure
    tracemalloc.start()
    try:
        ceql.compile(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 12 * n  # the text, the literal and a few copies; not a frame per character
    named = "SELECT * FROM S WHERE `" + "a" * (n - 1) + "``b`"
    tracemalloc.start()
    try:
        ceql.compile(named)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 12 * n


# ---------------------------------------------------------------------------- the same meaning

NESTED = [
    "A++", "(A:+)+", "(A+):+", "(A:+):+", "((A AS x)+ AS y):+ AS z", "(A+ OR B)+",
    "(A:+ OR B):+", "(A+ OR B):+", "((A ; B)+ OR B:+)+", "(A OR B):+ : (A OR B)",
    "(A OR B AS x OR C) : C", "((A+ AS x) OR (B:+ AS y))+ ; C", "(A:+ : B OR B) : (A OR C)",
]


@pytest.mark.parametrize("where", NESTED)
def test_collapsed_iterations_keep_their_meaning(where: str) -> None:
    """Every strategy, against the brute-force reference, on every stream of up to 5 events
    over A, B, C."""
    for strategy in ("ALL", "STRICT", "NEXT", "LAST", "MAX"):
        text = f"SELECT {strategy} * FROM S WHERE {where}"
        q = ceql.compile(text)
        ast = parse(text)
        for n in range(1, 6):
            for word in itertools.product("ABC", repeat=n):
                events = [{"type": t} for t in word]
                got = sorted((m.end_position, m.start_position, m.positions, m.partition)
                             for m in q.run(events))
                want = sorted(tuple(m) for m in reference_matches(ast, events))
                assert got == want, (text, word)


# ---------------------------------------------------------------------------- enumeration

def prepended_lengths(fn: Callable[[], object]) -> list[int]:
    """The length of the positions tuple each time enumeration is about to prepend to it."""
    lengths: list[int] = []
    code = Enumerator.walk.__code__

    def local(frame: types.FrameType, event: str, arg: object) -> Any:
        if event == "line" and frame.f_code is code:
            ps = frame.f_locals.get("ps")
            if isinstance(ps, tuple) and frame.f_lineno in prepend_lines:
                lengths.append(len(ps))
        return local

    def trace(frame: types.FrameType, event: str, arg: object) -> Any:
        return local if frame.f_code is code else None

    source, first = inspect.getsourcelines(Enumerator.walk)
    prepend_lines = {first + i for i, line in enumerate(source)
                     if line.strip().startswith("ps = (n[KIND_POS],) + ps")}
    assert prepend_lines
    sys.settrace(trace)
    try:
        fn()
    finally:
        sys.settrace(None)
    return lengths


def test_listing_a_long_match_copies_linear_work() -> None:
    """``B : A:+ : C`` over B, n A, C: one match of n + 2 events; prepending copies tuples of
    at most RUN positions, so the copying is linear in n (it was n²/2)."""
    n = 3000
    q = ceql.compile("SELECT STRICT * FROM S WHERE B : A:+ : C")
    events = [{"type": "B"}] + [{"type": "A"}] * n + [{"type": "C"}]
    out: list[ceql.Match] = []
    lengths = prepended_lengths(lambda: out.extend(q.run(events)))
    assert [m.positions for m in out] == [tuple(range(n + 2))]
    assert out[0].variables == {"A": tuple(range(1, n + 1)), "B": (0,), "C": (n + 1,)}
    assert len(lengths) >= n
    assert max(lengths) <= RUN
    assert sum(lengths) <= RUN * (n + 2)


def test_long_matches_that_branch_are_listed_exactly() -> None:
    """``A:+`` over 3·RUN A: every interval once, positions and labels in order, across
    the runs of positions set aside and shared between branches."""
    n = 3 * RUN
    q = ceql.compile("SELECT * FROM S WHERE A:+ AS x")
    got = sorted((m.start_position, m.end_position, m.positions, tuple(m.variables.items()))
                 for m in q.run([{"type": "A"}] * n))
    want = sorted((i, j, tuple(range(i, j + 1)),
                   (("x", tuple(range(i, j + 1))),))  # A only repeats x
                  for j in range(n) for i in range(j + 1))
    assert got == want
