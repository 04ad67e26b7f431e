"""The leftmost matcher (``ceql.runtime.leftmost``) against a backtracking matcher written
from the rule it implements: from each start (in order, as the skip mode leaves them), the
first match a depth-first search finds trying greedy before reluctant and left options
before right, where an iteration of an unbounded quantifier past its minimum that takes no
row fails (it would loop). Random patterns of every construct, random rows, conditions that
read the match so far through registers or only the row, every skip mode and a window."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from itertools import permutations
from typing import Any

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from ceql.errors import CeqlInputError
from ceql.runtime.leftmost import (
    SKIP_PAST_LAST_ROW,
    SKIP_TO_FIRST,
    SKIP_TO_LAST,
    SKIP_TO_NEXT_ROW,
    Alt,
    Anchor,
    Concat,
    Exclude,
    LeftmostMatcher,
    Pattern,
    Permute,
    PMatch,
    Quant,
    Var,
    compile_pattern,
    run_rows,
)

VARS = ("A", "B", "C")
Step = Callable[[str, Hashable, int], Hashable | None]
Result = tuple[int, tuple[tuple[int, str, bool], ...]]


def _search(p: Pattern, n: int, step: Step, start: int, regs0: Hashable,
            within: Callable[[int, int], bool] | None) -> PMatch | None:
    """The preferred match starting at ``start``, by backtracking."""

    def m(p: Pattern, i: int, regs: Hashable, took: tuple[Any, ...], excl: bool,
          k: Callable[[int, Hashable, tuple[Any, ...]], Result | None]) -> Result | None:
        if isinstance(p, Var):
            if i >= n or (within is not None and not within(start, i)):
                return None
            r = step(p.name, regs, i)
            return None if r is None else k(i + 1, r, (*took, (i, p.name, excl)))
        if isinstance(p, Anchor):
            return k(i, regs, took) if (i == 0 if p.start else i == n) else None
        if isinstance(p, Exclude):
            return m(p.body, i, regs, took, True, k)
        if isinstance(p, Concat):
            def chain(j: int, parts: tuple[Pattern, ...]) -> Callable[..., Result | None]:
                if j == len(parts):
                    return k
                return lambda i2, r2, t2: m(parts[j], i2, r2, t2, excl, chain(j + 1, parts))
            return chain(0, p.parts)(i, regs, took)
        if isinstance(p, Permute):
            orders = tuple(Concat(tuple(p.parts[x] for x in o))
                           for o in permutations(range(len(p.parts))))
            return m(Alt(orders), i, regs, took, excl, k)
        if isinstance(p, Alt):
            for o in p.options:
                got = m(o, i, regs, took, excl, k)
                if got is not None:
                    return got
            return None
        assert isinstance(p, Quant)
        q = p

        def loop(count: int, i2: int, r2: Hashable, t2: tuple[Any, ...]) -> Result | None:
            def more() -> Result | None:
                if q.hi is not None and count >= q.hi:
                    return None

                def after(j: int, r3: Hashable, t3: tuple[Any, ...]) -> Result | None:
                    if count >= q.lo and j == i2:
                        return None  # an empty iteration past the minimum is not taken
                    return loop(count + 1, j, r3, t3)
                return m(q.body, i2, r2, t2, excl, after)

            def stop() -> Result | None:
                return k(i2, r2, t2) if count >= q.lo else None

            for f in ((more, stop) if q.greedy else (stop, more)):
                got = f()
                if got is not None:
                    return got
            return None
        return loop(0, i, regs, took)

    got = m(p, start, regs0, (), False, lambda i, r, t: (i, t))
    if got is None:
        return None
    end, took = got
    return PMatch(start, end - 1, took)


def _reference(p: Pattern, n: int, step: Step, skip: str, skip_var: str | None,
               within: Callable[[int, int], bool] | None = None) -> list[PMatch]:
    out: list[PMatch] = []
    s = 0
    while s < n:
        mt = _search(p, n, step, s, (), within)
        if mt is None:
            s += 1
            continue
        out.append(mt)
        if skip == SKIP_PAST_LAST_ROW:
            s = max(mt.end + 1, s + 1)
        elif skip == SKIP_TO_NEXT_ROW:
            s += 1
        else:
            rows = [r for r, v, _ in mt.rows if v == skip_var]
            if not rows:
                raise CeqlInputError("no row to skip to")
            t = rows[0] if skip == SKIP_TO_FIRST else rows[-1]
            if t == mt.start:
                raise CeqlInputError("restart at the first row")
            s = t
    return out


# ---------------------------------------------------------------------- generators

def _patterns() -> st.SearchStrategy[Pattern]:
    leaf = st.sampled_from([*(Var(v) for v in VARS for _ in range(4)), Anchor(True),
                            Anchor(False), Concat(())])

    def grow(inner: st.SearchStrategy[Pattern]) -> st.SearchStrategy[Pattern]:
        parts = st.lists(inner, min_size=1, max_size=3).map(tuple)
        bounds = st.one_of(st.tuples(st.integers(0, 2), st.none()),
                           st.integers(0, 2).flatmap(
                               lambda lo: st.tuples(st.just(lo), st.integers(max(lo, 1), 3))))
        return st.one_of(
            parts.map(Concat),
            st.lists(inner, min_size=2, max_size=3).map(lambda o: Alt(tuple(o))),
            st.tuples(inner, bounds, st.booleans()).map(
                lambda t: Quant(t[0], t[1][0], t[1][1], t[2])),
            st.lists(inner, min_size=2, max_size=3).map(lambda o: Permute(tuple(o))),
            inner.map(Exclude))
    return st.recursive(leaf, grow, max_leaves=6)


def _kinds(p: Pattern, out: set[str]) -> None:
    out.add(type(p).__name__ + ("" if not isinstance(p, Quant) else
                                ("*" if p.hi is None else "{}") + ("" if p.greedy else "?")))
    for q in getattr(p, "parts", ()) or getattr(p, "options", ()):
        _kinds(q, out)
    if isinstance(p, Quant | Exclude):
        _kinds(p.body, out)


def _step(kind: int, rows: list[frozenset[str]]) -> Step:
    """Conditions: the row only (0); C only after an even number of rows taken (1); never the
    variable just taken again (2)."""
    def step(v: str, regs: Hashable, i: int) -> Hashable | None:
        if v not in rows[i]:
            return None
        if kind == 0:
            return ()
        if kind == 1:
            n = regs if isinstance(regs, int) else 0
            if v == "C" and n % 2:
                return None
            return (n + 1) % 4
        if regs == v:
            return None
        return v
    return step


DRAWN: set[str] = set()


@settings(max_examples=1000, deadline=None)
@given(p=_patterns(),
       rows=st.lists(st.frozensets(st.sampled_from(VARS), min_size=1), max_size=9),
       kind=st.integers(0, 2),
       skip=st.sampled_from([SKIP_PAST_LAST_ROW, SKIP_TO_NEXT_ROW, SKIP_TO_FIRST, SKIP_TO_LAST]),
       skip_var=st.sampled_from(VARS),
       window=st.one_of(st.none(), st.integers(1, 4)))
def test_the_matcher_finds_what_backtracking_finds(
        p: Pattern, rows: list[frozenset[str]], kind: int, skip: str, skip_var: str,
        window: int | None) -> None:
    note(repr(p))
    _kinds(p, DRAWN)
    step = _step(kind, rows)
    within = None if window is None else (lambda s, i: i - s < window)
    try:
        want: list[PMatch] | str = _reference(p, len(rows), step, skip, skip_var, within)
    except CeqlInputError:
        want = "error"
    m = LeftmostMatcher(compile_pattern(p), step, skip, skip_var, within=within)
    got: list[PMatch] = []
    try:
        for i in range(len(rows)):
            got += m.feed(i)
        got += m.close()
    except CeqlInputError:
        assert want == "error", f"matcher refused, reference gave {want}"
        return
    assert got == want


def test_the_generator_draws_every_construct() -> None:
    test_the_matcher_finds_what_backtracking_finds()
    assert DRAWN >= {"Var", "Anchor", "Concat", "Alt", "Permute", "Exclude", "Quant*",
                     "Quant*?", "Quant{}", "Quant{}?"}, DRAWN


# ---------------------------------------------------------------------- worked examples

def _labels(rows: list[str]) -> Step:
    """Conditions reading the row only: row ``i`` may be any variable it lists."""
    return lambda v, regs, i: () if v in rows[i] else None


def _spans(ms: list[PMatch]) -> list[str]:
    return ["".join(v for _, v, _ in m.rows) + f"@{m.start}" for m in ms]


def test_greedy_and_reluctant() -> None:
    step = _labels(["A", "A", "AB", "B"])
    greedy = compile_pattern(Concat((Quant(Var("A"), 1, None), Var("B"))))
    assert _spans(run_rows(greedy, step, 4)) == ["AAAB@0"]
    reluctant = compile_pattern(Concat((Quant(Var("A"), 1, None, greedy=False), Var("B"))))
    assert _spans(run_rows(reluctant, step, 4)) == ["AAB@0"]


def test_alternation_prefers_the_left_option_even_when_shorter() -> None:
    step = _labels(["AB", "B"])
    p = compile_pattern(Alt((Var("A"), Concat((Var("B"), Var("B"))))))
    assert _spans(run_rows(p, step, 2)) == ["A@0"]  # then row 1 alone matches neither
    p = compile_pattern(Alt((Concat((Var("B"), Var("B"))), Var("A"))))
    assert _spans(run_rows(p, step, 2)) == ["BB@0"]


def test_skip_to_first_at_the_start_is_an_error() -> None:
    step = lambda v, regs, i: ()  # noqa: E731
    p = compile_pattern(Concat((Var("A"), Var("B"))))
    with pytest.raises(CeqlInputError, match="restart at the first row"):
        run_rows(p, step, 3, SKIP_TO_FIRST, "A")
    assert [(m.start, m.end) for m in run_rows(p, step, 3, SKIP_TO_LAST, "B")] == [(0, 1),
                                                                                   (1, 2)]


def test_empty_matches_advance_one_row() -> None:
    step = lambda v, regs, i: None  # noqa: E731
    p = compile_pattern(Quant(Var("A"), 0, None))
    assert [(m.start, m.empty) for m in run_rows(p, step, 3)] == [(0, True), (1, True),
                                                                   (2, True)]
