"""The Python MATCH_RECOGNIZE engine (ceql.mr) against the contract: the brute-force reference
(tests/reference_mr.py) on random queries and rows, every worked example of
tests/test_mr_reference.py run through the engine, work that grows linearly with the rows
where registers let threads merge, and the errors docs/match_recognize.md names."""

from __future__ import annotations

import dataclasses
import datetime
import random
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

import ceql
import test_mr_reference as worked
from ceql.frontends.mr import ast as A
from ceql.frontends.mr.errors import ClauseError, MatchSkipError, UnsupportedFunctionError
from ceql.mr import MatchRecognizeQuery, MrValueError, UnknownColumnError
from ceql.mr import registers as registers_module
from ceql.mr.expressions import Compiler
from ceql.mr.fixed import single_labelling
from ceql.mr.views import MatchView
from mr_strategies import bodies, cases, partitions, value_bodies
from reference_mr import evaluate


def engine(body: A.MatchRecognize, rows: Sequence[dict[str, object]]
           ) -> list[dict[str, object]]:
    return MatchRecognizeQuery(body).run(rows)


# ---------------------------------------------------------------- the worked examples

# Every example test of test_mr_reference.py, collected here a second time with its ``evaluate``
# (which its ``run`` calls) replaced by the engine: the same data, the same expectations.
# ``test_preferment_agrees_with_pythons_re`` comes too: the engine against Python's ``re``.
_NOT_EXAMPLES = {"test_the_row_generator_draws"}
for _name, _test in vars(worked).items():
    if _name.startswith("test_") and _name not in _NOT_EXAMPLES and callable(_test):
        globals()[f"{_name}__engine"] = _test


@pytest.fixture(autouse=True, scope="module")
def _worked_examples_on_the_engine() -> Iterator[None]:
    saved = worked.evaluate
    worked.evaluate = engine
    yield
    worked.evaluate = saved


def test_the_worked_examples_run_on_the_engine() -> None:
    assert worked.evaluate is engine
    assert worked.run("MEASURES COUNT(*) AS n PATTERN (A+)", [{"x": 1}]) == [{"n": 1}]


# ---------------------------------------------------------------- against the reference

def _outcome(f: object, body: A.MatchRecognize, rows: list[dict[str, object]]) -> str:
    try:
        return repr([list(r.items()) for r in f(body, rows)])  # type: ignore[operator]
    except MatchSkipError as e:
        return f"MatchSkipError: {e}"


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_the_engine_gives_the_references_output(
        case: tuple[A.MatchRecognize, list[dict[str, object]]]) -> None:
    body, rows = case
    assert _outcome(engine, body, rows) == _outcome(evaluate, body, rows)


def _leftmost_only(body: A.MatchRecognize, rows: list[dict[str, object]]) -> list[Any]:
    """The output of ``body`` with the fixed-length engine ruled out (the Pike machine)."""
    q = MatchRecognizeQuery(body)
    chosen = q.setup

    def setup(columns: tuple[str, ...]) -> Any:
        return dataclasses.replace(chosen(columns), fixed=None)
    q.setup = setup  # type: ignore[method-assign]
    return q.run(rows)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow],
          max_examples=2 * settings.default.max_examples)
@given(bodies(one_labelling=True), partitions())
def test_the_fixed_length_engine_gives_the_leftmost_engines_rows(
        body: A.MatchRecognize, rows: list[dict[str, object]]) -> None:
    assert MatchRecognizeQuery(body).setup(("k", "ts", "x", "y")).fixed is not None
    assert _outcome(engine, body, rows) == _outcome(_leftmost_only, body, rows)
    assert _outcome(engine, body, rows) == _outcome(evaluate, body, rows)


def test_single_labelling_reads_the_pattern() -> None:
    def labels(text: str) -> tuple[str, ...] | None:
        return single_labelling(ceql.match_recognize(
            f"ORDER BY t PATTERN ({text})").body.pattern)
    assert labels("A B C") == ("A", "B", "C")
    assert labels("A (B C){2}") == ("A", "B", "C", "B", "C")
    assert labels("(A){1} B{2}?") == ("A", "B", "B")
    for text in ("A B+", "A | B", "PERMUTE(A, B)", "A {- B -}", "^ A", "A B?", "()"):
        assert labels(text) is None, text


@settings(deadline=None, max_examples=2 * settings.default.max_examples)
@given(value_bodies(), partitions())
def test_the_engine_computes_values_as_the_reference_does(
        body: A.MatchRecognize, rows: list[dict[str, object]]) -> None:
    """Division, remainder, ROUND, CAST and decimals on every row (the reference's value model
    is written apart from the engine's, as kinds and tables)."""
    assert _outcome(engine, body, rows) == _outcome(evaluate, body, rows)


def _with_classifier_navigation(body: A.MatchRecognize, kind: str) -> A.MatchRecognize:
    """``body`` with one DEFINE (or a new one) also reading the variable of a row navigation
    reaches — the registers' fallback (the labels so far)."""
    variables = body.variables()
    if not variables:
        return body
    var = variables[0]
    nav: A.Expr = (A.Navigation("PREV", A.Classifier(None), 1) if kind == "prev" else
                   A.Navigation("FIRST", A.Classifier(None), 1))
    extra = A.Binary("<>", nav, A.Literal(var))
    old = body.condition(var)
    cond = extra if old is None else A.Binary("OR", old, extra)
    defines = (*(d for d in body.defines if d.var != var), A.Define(var, cond))
    return A.MatchRecognize(body.pattern, body.partition_by, body.order_by, body.measures,
                            body.rows_per_match, body.skip, body.within, body.subsets, defines)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.sampled_from(["prev", "first"]))
def test_the_engine_gives_the_references_output_with_labels_as_registers(
        case: tuple[A.MatchRecognize, list[dict[str, object]]], kind: str) -> None:
    body, rows = case
    body = _with_classifier_navigation(body, kind)
    if body.variables():
        assert not MatchRecognizeQuery(body)._plan(None).registers.derived
    assert _outcome(engine, body, rows) == _outcome(evaluate, body, rows)


# The generator of mr_strategies draws a DEFINE for some variables only, on few rows; these
# cases give every variable a condition that reads the match so far in one of the ways registers
# keep (other variables' rows, first and last rows with offsets, PREV/NEXT around them,
# counts, running aggregates with DISTINCT, CLASSIFIER of a subset), and three rows or more.

@st.composite
def _probe(draw: st.DrawFn, names: tuple[str, ...], *, measure: bool) -> A.Expr:
    var = draw(st.sampled_from((None, *names)))
    col = A.Column(var, "x")
    sem = draw(st.sampled_from((None, "RUNNING", "FINAL") if measure else (None, "RUNNING")))
    k = draw(st.integers(0, 2))
    kind = draw(st.sampled_from(["col", "last", "first", "prev", "next", "nested", "count",
                                 "countvar", "sum", "avg", "min", "max", "countx",
                                 "classifier"]))
    if kind == "col":
        return col
    if kind in ("last", "first"):
        return A.Navigation(kind.upper(), col, k, sem)  # type: ignore[arg-type]
    if kind in ("prev", "next"):
        return A.Navigation(kind.upper(), col, k)  # type: ignore[arg-type]
    if kind == "nested":
        return A.Navigation(draw(st.sampled_from(["PREV", "NEXT"])),
                            A.Navigation(draw(st.sampled_from(["FIRST", "LAST"])), col,
                                         draw(st.integers(0, 1)), sem), k)
    if kind == "count":
        return A.Aggregate("COUNT", None, False, None, sem)
    if kind == "countvar":
        return A.Aggregate("COUNT", None, False, var, sem)
    if kind == "classifier":
        return A.Classifier(draw(st.sampled_from((None, *names))), sem)
    name = "COUNT" if kind == "countx" else kind.upper()
    return A.Aggregate(name, col, draw(st.booleans()), None, sem)


@st.composite
def _probe_condition(draw: st.DrawFn, names: tuple[str, ...], *, measure: bool = False
                     ) -> A.Expr:
    left = draw(_probe(names, measure=measure))
    if isinstance(left, A.Classifier):
        return A.Binary("=", left, A.Literal(draw(st.sampled_from(names or ("A",)))))
    right = draw(st.one_of(st.integers(0, 5).map(A.Literal), _probe(names, measure=measure)
                           .filter(lambda e: not isinstance(e, A.Classifier))))
    return A.Binary(draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">="])), left, right)


@st.composite
def _rows(draw: st.DrawFn) -> list[dict[str, object]]:
    """3 to 8 rows, times non-decreasing, x mostly an integer, two partitions."""
    t = datetime.datetime(2024, 1, 1, 9)
    out: list[dict[str, object]] = []
    for _ in range(draw(st.integers(3, 8))):
        t += datetime.timedelta(seconds=draw(st.integers(0, 2)))
        out.append({"k": draw(st.sampled_from([1, 1, 2])), "ts": t,
                    "x": draw(st.sampled_from([None, 0, 1, 1, 2, 3, 3, 4, 5])),
                    "y": draw(st.sampled_from(["a", "b", "ab"]))})
    return out


@st.composite
def _rich_cases(draw: st.DrawFn) -> tuple[A.MatchRecognize, list[dict[str, object]]]:
    body = draw(bodies())
    names = (*body.variables(), *(s.name for s in body.subsets))
    defines = []
    for var in body.variables():
        probe = draw(_probe_condition(names))
        old = body.condition(var)
        cond = probe if old is None else A.Binary(draw(st.sampled_from(["AND", "OR"])), old,
                                                  probe)
        defines.append(A.Define(var, cond))
    measures = (*body.measures, *(A.Measure(draw(_probe(names, measure=True)), f"p{i}")
                                  for i in range(2)))
    rows = draw(_rows())
    return A.MatchRecognize(body.pattern, body.partition_by, body.order_by, measures,
                            body.rows_per_match, body.skip, body.within, body.subsets,
                            tuple(defines)), rows


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow],
          max_examples=3 * settings.default.max_examples)
@given(_rich_cases())
def test_the_engine_gives_the_references_output_on_conditions_reading_the_match(
        case: tuple[A.MatchRecognize, list[dict[str, object]]]) -> None:
    body, rows = case
    assert _outcome(engine, body, rows) == _outcome(evaluate, body, rows)


@settings(deadline=None, max_examples=3 * settings.default.max_examples)
@given(st.lists(st.sampled_from("ABC"), min_size=1, max_size=8),
       st.lists(_probe(("A", "B", "C", "U"), measure=False), min_size=1, max_size=4),
       st.lists(st.sampled_from([None, 0, 1, 2, 3]), min_size=12, max_size=12),
       st.integers(0, 3))
def test_derived_registers_answer_as_the_labels_do(labels: list[str], probes: list[A.Expr],
                                                   xs: list[int | None], start: int) -> None:
    """Each condition read from a thread's registers equals the same condition read from the
    labels so far, at every row of a labelling."""
    rows = [{"x": x} for x in xs]
    subsets = {"U": ("A", "B")}
    compiled: dict[str, list[object]] = {}
    needs: set[object] = set()
    for var in "ABC":
        compilers = [Compiler(("x",), subsets, own=var) for _ in probes]
        compiled[var] = [c.compile(p) for c, p in zip(compilers, probes, strict=True)]
        for c in compilers:
            needs |= c.needs
    regs = registers_module.Registers(needs, ("A", "B", "C"))  # type: ignore[arg-type]
    assert regs.derived
    view = registers_module.RegisterView(rows, regs.slots)
    state = regs.initial
    for j, var in enumerate(labels):
        i = start + j
        new = list(state)
        for slot, update in regs.updates[var]:
            new[slot] = update(new[slot], var, i, view)
        state = tuple(new)
        view.cur, view.state = i, state
        truth = MatchView(rows, start, labels[:j + 1], i, None)
        for f in compiled[var]:
            assert repr(f(view, None)) == repr(f(truth, None))  # type: ignore[operator]


def _nodes(body: A.MatchRecognize) -> list[object]:
    out: list[object] = list(A.walk_pattern(body.pattern))
    for e in [*(d.condition for d in body.defines), *(m.expr for m in body.measures)]:
        out += A.walk(e)
    return out


def _has(cls: type, **fields: object) -> object:
    return lambda b: any(isinstance(n, cls) and all(getattr(n, k) == v
                                                    for k, v in fields.items())
                         for n in _nodes(b))


def _field(name: str, value: object, kind: str | None = None) -> object:
    """Whether a body's clause ``name`` is ``value`` (or, for a skip, of ``kind``)."""
    if kind is not None:
        return lambda b: getattr(b, name).kind == kind
    return lambda b: getattr(b, name) == value


_DRAWS = {
    "permute": _has(A.Permute), "exclusion": _has(A.Exclusion),
    "reluctant": _has(A.Quantified, greedy=False), "anchor_start": _has(A.Anchor, kind="^"),
    "anchor_end": _has(A.Anchor, kind="$"), "empty": _has(A.EmptyPattern),
    "alternation": _has(A.Alternation), "bounded": _has(A.Quantified, low=1, high=2),
    "prev": _has(A.Navigation, kind="PREV"), "next": _has(A.Navigation, kind="NEXT"),
    "first_offset": _has(A.Navigation, kind="FIRST", offset=2),
    "last_offset": _has(A.Navigation, kind="LAST", offset=1),
    "nested": lambda b: any(isinstance(n, A.Navigation) and isinstance(n.arg, A.Navigation)
                            for n in _nodes(b)),
    "final": _has(A.Navigation, semantics="FINAL"),
    "count_star": _has(A.Aggregate, name="COUNT", star_var=None, arg=None),
    "count_var": lambda b: any(isinstance(n, A.Aggregate) and n.star_var is not None
                               for n in _nodes(b)),
    "distinct": _has(A.Aggregate, distinct=True), "avg": _has(A.Aggregate, name="AVG"),
    "aggregate_in_define": lambda b: any(isinstance(n, A.Aggregate) for d in b.defines
                                         for n in A.walk(d.condition)),
    "other_variable_in_define": lambda b: any(
        isinstance(n, A.Column) and n.var not in (None, d.var) for d in b.defines
        for n in A.walk(d.condition)),
    "classifier_of_subset": lambda b: any(isinstance(n, A.Classifier) and n.var == "U"
                                          for n in _nodes(b)),
    "match_number": _has(A.MatchNumber), "like": _has(A.Like), "case": _has(A.Case),
    "in": _has(A.InList), "between": _has(A.Between),
    "subset": lambda b: bool(b.subsets), "within": lambda b: b.within is not None,
    "partition": lambda b: bool(b.partition_by),
    "skip_to_subset": lambda b: b.skip.var == "U",
    **{f"skip_{k}": _field("skip", None, kind=k)
       for k in ("PAST LAST ROW", "TO NEXT ROW", "TO FIRST", "TO LAST")},
    "one_row": lambda b: b.rows_per_match == "ONE",
    **{f"all_rows_{m}": _field("rows_per_match", A.AllRows(m))
       for m in ("SHOW EMPTY MATCHES", "OMIT EMPTY MATCHES", "WITH UNMATCHED ROWS")},
    "desc_nulls": lambda b: b.order_by[0].descending and b.order_by[0].nulls_first is not None,
    # the fixed-length engine's patterns (mr/fixed.py), several rows long and with a group
    "one_labelling": lambda b: len(single_labelling(b.pattern) or ()) >= 3 and _has(
        A.Quantified, low=2, high=2)(b),
    "one_labelling_skip_to_last": lambda b: single_labelling(b.pattern) is not None
    and b.skip.kind == "TO LAST",
    "one_labelling_unmatched": lambda b: single_labelling(b.pattern) is not None
    and b.rows_per_match == A.AllRows("WITH UNMATCHED ROWS"),
    "one_labelling_within_next": lambda b: single_labelling(b.pattern) is not None
    and b.within is not None and _has(A.Navigation, kind="NEXT")(b),
}


_VALUE_DRAWS = {
    "div": _has(A.Binary, op="/"), "mod": _has(A.Binary, op="%"),
    "round": _has(A.Call, name="ROUND"), "cast_decimal": _has(A.Cast, type_name="DECIMAL(4,1)"),
    "cast_string": _has(A.Cast, type_name="STRING"),
    "decimal_literal": lambda b: any(isinstance(n, A.Literal) and type(n.value).__name__ ==
                                     "Decimal" for n in _nodes(b)),
}


@pytest.mark.parametrize("what", sorted(_VALUE_DRAWS))
def test_the_value_generator_draws(what: str) -> None:
    found = find(value_bodies(), _VALUE_DRAWS[what],  # type: ignore[arg-type]
                 settings=settings(max_examples=3000, phases=[Phase.generate], database=None))
    assert _VALUE_DRAWS[what](found)  # type: ignore[operator]


@pytest.mark.parametrize("what", sorted(_DRAWS))
def test_the_query_generator_draws(what: str) -> None:
    found = find(bodies(), _DRAWS[what],  # type: ignore[arg-type]
                 settings=settings(max_examples=3000, phases=[Phase.generate], database=None))
    assert _DRAWS[what](found)  # type: ignore[operator]


def test_the_generator_draws_derived_registers_of_every_kind() -> None:
    def kinds(b: A.MatchRecognize) -> set[str]:
        regs = MatchRecognizeQuery(b)._plan(None).registers
        return {str(k[0]) for k in regs.slots}
    for kind in ("last", "first", "count", "start", "agg"):
        found = find(bodies(), lambda b, kind=kind: kind in kinds(b),  # type: ignore[misc]
                     settings=settings(max_examples=3000, phases=[Phase.generate],
                                       database=None))
        assert kind in kinds(found)


# ---------------------------------------------------------------- work grows linearly

V_SHAPE = ("MEASURES FIRST(B.price) AS b, COUNT(*) AS n AFTER MATCH SKIP PAST LAST ROW "
           "PATTERN (A B+ C) DEFINE B AS B.price > PREV(B.price), C AS C.price < PREV(C.price)")


def _work(text: str, n: int) -> int:
    """Step calls (DEFINE decisions) of a run over ``n`` rows of a random walk with long
    rises, where every start stays open along a rise."""
    rng = random.Random(n)
    price = 100
    rows = []
    for _ in range(n):
        price += rng.choice([1, 1, 1, 2, -1]) if rng.random() > 0.02 else -5
        rows.append({"price": price})
    calls = 0
    real = registers_module.Registers.step_function

    def counting(self: registers_module.Registers, *args: object) -> object:
        step = real(self, *args)  # type: ignore[arg-type]

        def counted(var: str, regs: object, i: int) -> object:
            nonlocal calls
            calls += 1
            return step(var, regs, i)  # type: ignore[arg-type]
        return counted
    registers_module.Registers.step_function = counting  # type: ignore[assignment, method-assign]
    try:
        ceql.match_recognize(text).run(rows)
    finally:
        registers_module.Registers.step_function = real  # type: ignore[method-assign]
    return calls


def test_a_v_shape_with_prev_runs_in_linear_work() -> None:
    small, large = _work(V_SHAPE, 500), _work(V_SHAPE, 4000)
    assert large / small < 8 * 1.25  # 8 times the rows: about 8 times the steps
    assert large < 6 * 4000  # a few steps per row, whatever the open starts


def test_registers_are_derived_exactly_where_they_can_be() -> None:
    assert "none" in str(ceql.match_recognize(V_SHAPE))
    q = ceql.match_recognize("PATTERN (A B+) DEFINE B AS B.x > A.x AND SUM(B.x) < 10 AND "
                             "COUNT(*) < 5 AND FIRST(B.x) > 0")
    text = str(q)
    assert "derived" in text and "running SUM" in text and "first row" in text
    q = ceql.match_recognize("PATTERN (A B+) DEFINE B AS PREV(CLASSIFIER()) = 'B'")
    assert "fallback" in str(q)


def test_an_optional_iteration_that_labels_no_row_is_not_taken() -> None:
    # (A*?)? : the iteration of ? whose A*? takes nothing is not taken, so A*? takes a row
    q = ceql.match_recognize("MEASURES COUNT(*) AS n PATTERN ((A*?)?) DEFINE A AS x = 0")
    rows = [{"x": 1}, {"x": 0}]
    assert q.run(rows) == evaluate(q.body, rows) == [{"n": 0}, {"n": 1}]


# ---------------------------------------------------------------- errors and the API

def test_unsupported_functions_and_casts_are_refused_at_compile_time() -> None:
    with pytest.raises(UnsupportedFunctionError, match="SQRT is not among"):
        ceql.match_recognize("MEASURES SQRT(x) AS s PATTERN (A)")
    with pytest.raises(UnsupportedFunctionError, match="CAST to DATE"):
        ceql.match_recognize("PATTERN (A) DEFINE A AS CAST(x AS DATE) IS NULL")


def test_skip_errors_name_the_match() -> None:
    q = ceql.match_recognize("MEASURES COUNT(*) AS n AFTER MATCH SKIP TO FIRST A "
                             "PATTERN (A B)")
    with pytest.raises(MatchSkipError, match=r"match 1 would restart at its own first row"):
        q.run([{"x": 1}, {"x": 2}])
    q = ceql.match_recognize("AFTER MATCH SKIP TO LAST U PATTERN (A B? C) SUBSET U = (B) "
                             "DEFINE B AS x = 9")
    with pytest.raises(MatchSkipError, match=r"match 1 \(rows 0–1 of its partition\) maps no "
                                             r"row to U"):
        q.run([{"x": 1}, {"x": 2}])


def test_values_that_never_compare_are_an_error() -> None:
    q = ceql.match_recognize("PATTERN (A) DEFINE A AS y > 1")
    with pytest.raises(MrValueError, match="Cannot compare 'a' with 1"):
        q.run([{"y": "a"}])
    q = ceql.match_recognize("ORDER BY t PATTERN (A B) WITHIN INTERVAL '1' SECOND")
    with pytest.raises(MrValueError, match="Cannot compare"):
        q.run([{"t": 1}, {"t": 2}])


def test_unknown_columns_are_named() -> None:
    q = ceql.match_recognize("PATTERN (A) DEFINE A AS pryce > 1")
    with pytest.raises(UnknownColumnError, match=r"No column 'pryce'.*price"):
        q.run([{"price": 1}])
    assert q.run([]) == []


def test_a_whole_query_and_arrow_input() -> None:
    pa = pytest.importorskip("pyarrow")
    q = ceql.match_recognize("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES "
                             "COUNT(*) AS n, LAST(ts) - FIRST(ts) AS took PATTERN (A+) "
                             "DEFINE A AS x > 0)")
    t0 = datetime.datetime(2024, 1, 1)
    table = pa.table({"ts": [t0 + datetime.timedelta(seconds=s) for s in (0, 5, 7, 9)],
                      "x": [1, 2, 0, 3]})
    assert q.run(table) == [{"n": 2, "took": datetime.timedelta(seconds=5)},
                            {"n": 1, "took": datetime.timedelta(0)}]
    with pytest.raises(ClauseError, match="SELECT \\*"):
        ceql.match_recognize("SELECT n FROM t MATCH_RECOGNIZE (MEASURES COUNT(*) AS n "
                             "PATTERN (A))")


def test_partition_keys_null_nan_and_numbers() -> None:
    nan = float("nan")
    rows = [{"g": nan, "x": 1}, {"g": None, "x": 2}, {"g": 1, "x": 3}, {"g": float("nan"),
                                                                       "x": 4},
            {"g": 1.0, "x": 5}, {"g": None, "x": 6}, {"g": True, "x": 7}]
    out = ceql.match_recognize("PARTITION BY g MEASURES COUNT(*) AS n, SUM(x) AS s "
                               "PATTERN (A+)").run(rows)
    # NaN with NaN, NULL with NULL, 1 with 1.0; TRUE is no number
    assert [(r["n"], r["s"]) for r in out] == [(2, 5), (2, 8), (2, 8), (1, 7)]


def test_partitions_and_rows_draws_are_used() -> None:
    # the row generator of the property tests above: two partitions, NULLs, ties
    found = find(partitions(), lambda rs: len({r["k"] for r in rs}) == 2 and
                 any(r["x"] is None for r in rs),
                 settings=settings(max_examples=2000, phases=[Phase.generate], database=None))
    assert len(found) >= 2
