"""Property tests: the engine against the brute-force reference on random queries and streams.

Queries are generated as ASTs (``tests/strategies.py``), written out with ``format_query`` and
compiled from that text; the reference evaluates the AST itself. Profiles
(``HYPOTHESIS_PROFILE``, see ``tests/strategies.py``): ``dev`` (default), ``ci`` (derandomized)
and ``explore`` (many more random examples).

Conventions these tests rely on (the reference's reading of SEMANTICS.md):
* outputs are compared as multisets of ``(end, start, positions, partition)`` — the engine must
  report each complex event exactly once;
* LIMIT n: at every (partition, end) the engine's outputs are a subset of the reference's (which
  applies CONSUME BY but not LIMIT) of size ``min(n, available)``;
* without a time attribute, time windows measure original positions;
* ``/`` is true division, ``%`` is only generated on non-negative operands.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from fractions import Fraction
from itertools import pairwise
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import example, given, note, target
from hypothesis import strategies as st

import ceql
from ceql.frontends.ceql import format_query
from ceql.ir import bound_variables
from ceql.ir import nodes as A
from reference import RefMatch, reference_matches
from strategies import PROFILE, Case, MultiCase, cases, core, multi_cases, queries

Key = tuple[int, int, tuple[int, ...], tuple[Any, ...]]


def keys(matches: Iterable[Any]) -> list[Key]:
    """``(end, start, positions, partition)`` of each engine match, in output order."""
    return [(m.end_position, m.start_position, tuple(m.positions), tuple(m.partition))
            for m in matches]


def check_against_reference(got: Sequence[Key], ref: Sequence[RefMatch],
                            limit: int | None) -> None:
    """The engine's outputs ``got`` against the reference's, with the LIMIT rule."""
    want = [tuple(m) for m in ref]
    dupes = [k for k, n in Counter(got).items() if n > 1]
    assert not dupes, f"complex events output more than once: {dupes}"
    if limit is None:
        missing = sorted(set(want) - set(got))
        extra = sorted(set(got) - set(want))
        assert not missing and not extra, f"missing {missing}; unexpected {extra}"
        return
    groups: dict[tuple[Any, int], set[Key]] = defaultdict(set)
    for k in want:
        groups[(k[3], k[0])].add(k)  # type: ignore[arg-type]
    got_groups: dict[tuple[Any, int], set[Key]] = defaultdict(set)
    for k in got:
        got_groups[(k[3], k[0])].add(k)
    for g, ks in got_groups.items():
        extra = sorted(ks - groups.get(g, set()))
        assert not extra, f"unexpected {extra}"
    for g, ks in groups.items():
        n = len(got_groups.get(g, set()))
        assert n == min(limit, len(ks)), (
            f"at end {g[1]} (partition {g[0]!r}): {n} outputs, expected min({limit}, {len(ks)})")


def _show(case: Case) -> tuple[A.Query, list[dict[str, Any]], str | None, str]:
    q, events, time = case
    text = format_query(q)
    note(f"query:\n{text}")
    note(f"events ({len(events)}):")
    for i, e in enumerate(events):
        note(f"  {i}: {e}")
    note(f"time={time!r}")
    return q, events, time, text


# ---------------------------------------------------------------- the engine equals the reference


def _variants(q: A.Query) -> list[A.Query]:
    """The query; its bare WHERE under the same strategy; the query without CONSUME and LIMIT."""
    out = [q, replace(core(q), strategy=q.strategy),
           replace(q, consume="NONE", limit=None, strategy="ALL")]
    return list(dict.fromkeys(out))


@PROFILE
@given(st.lists(multi_cases(), min_size=1, max_size=3))
def test_engine_equals_reference(batch: list[MultiCase]) -> None:
    """Each query (and two variants of it, see ``_variants``) on up to three streams."""
    check_engine_equals_reference(batch)


def check_engine_equals_reference(batch: list[MultiCase]) -> None:
    """:func:`test_engine_equals_reference`, also run on correlated queries."""
    total = 0
    for q0, streams, time in batch:
        for q in _variants(q0):
            text = format_query(q)
            compiled = ceql.compile(text)
            for events in streams:
                _show((q, events, time))
                ref = reference_matches(q, events, time=time)
                total += len(ref)
                got = keys(compiled.run(events, time=time))
                note(f"reference: {[tuple(m) for m in ref]}")
                note(f"engine:    {got}")
                check_against_reference(got, ref, q.limit)
    target(float(total), label="reference outputs")


# MAX compares the full marks, then SELECT projects (SEMANTICS.md's clause order): runs split
# by a SELECT list must still see each other's supersets.
_MAX_SELECT = A.Query("MAX", ("x",), ("S",), A.Seq(A.Seq(
    A.As(A.Plus(A.EventType("A")), "x"), A.Or(A.EventType("B"), A.EventType("A")),
    contiguous=True), A.EventType("C")))
_AABC = [{"type": t, "ts": i} for i, t in enumerate("AABC")]


@PROFILE
@given(cases(), st.data())
@example((_MAX_SELECT, _AABC, None), None)
def test_max_with_a_select_list_equals_reference(case: Case, data: Any) -> None:
    """MAX with a SELECT list of some of the variables (projection splits runs apart)."""
    check_max_with_a_select_list_equals_reference(case, data)


def check_max_with_a_select_list_equals_reference(case: Case, data: Any) -> None:
    """:func:`test_max_with_a_select_list_equals_reference`, also run on correlated queries."""
    q, events, time = case
    names = sorted(bound_variables(q.where))
    if data is not None:
        chosen = data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=2,
                                    unique=True))
        q = replace(q, strategy="MAX", select=tuple(chosen), consume="NONE", limit=None)
    q, events, time, text = _show((q, events, time))
    ref = reference_matches(q, events, time=time)
    got = keys(ceql.compile(text).run(events, time=time))
    note(f"reference: {[tuple(m) for m in ref]}")
    note(f"engine:    {got}")
    check_against_reference(got, ref, None)


# SEMANTICS.md's own example: the enumeration gives starts 3 2 1 0 0 1 0 0 at position 3.
_A_PLUS = A.Query("ALL", None, ("S",), A.Plus(A.EventType("A")))
_FOUR_AS = [{"type": "A", "ts": i} for i in range(4)]


@PROFILE
@given(cases())
@example((_A_PLUS, _FOUR_AS, None))
def test_outputs_come_in_stream_order(case: Case) -> None:
    """Outputs for position j are produced when j is read: ends never decrease. Their order at
    one end is the tECS enumeration's, which SEMANTICS.md leaves unspecified (not by start)."""
    check_outputs_come_in_stream_order(case)


def check_outputs_come_in_stream_order(case: Case) -> None:
    """:func:`test_outputs_come_in_stream_order`, also run on correlated queries."""
    _, events, time, text = _show(case)
    got = keys(ceql.compile(text).run(events, time=time))
    note(f"engine: {got}")
    ends = [k[0] for k in got]
    assert ends == sorted(ends)


# ---------------------------------------------------------------- feeding in chunks


def _splits(n: int) -> st.SearchStrategy[list[int]]:
    """Sorted cut points in ``0..n`` (empty chunks allowed)."""
    return st.lists(st.integers(0, n), max_size=5).map(sorted)


def _bounds(n: int, cuts: list[int]) -> list[tuple[int, int]]:
    """``[(0, c1), (c1, c2), ..., (ck, n)]``."""
    return list(pairwise([0, *cuts, n]))


@PROFILE
@given(cases(), st.data())
def test_chunked_feed_equals_run(case: Case, data: st.DataObject) -> None:

    check_chunked_feed_equals_run(case, data)


def check_chunked_feed_equals_run(case: Case, data: st.DataObject) -> None:
    """:func:`test_chunked_feed_equals_run`, also run on correlated queries."""
    _, events, time, text = _show(case)
    compiled = ceql.compile(text)
    whole = keys(compiled.run(events, time=time))
    cuts = data.draw(_splits(len(events)), label="cuts")
    ev = compiled.evaluator(time=time)
    fed: list[Key] = []
    for a, b in _bounds(len(events), cuts):
        out = keys(ev.feed(events[a:b]))
        assert all(a <= k[0] < b for k in out), "an output came before or after its end was fed"
        fed.extend(out)
    assert fed == whole


def _arrow_table(events: list[dict[str, Any]]) -> pa.Table:
    """Every attribute as a column (missing → null); schema over all rows, not the first."""
    names: list[str] = []
    for e in events:
        for k in e:
            if k not in names:
                names.append(k)
    if not names:
        names = ["type"]
    return pa.table({k: pa.array([e.get(k) for e in events]) for k in names})


@PROFILE
@given(cases(mixed=False), st.data())
def test_arrow_feed_equals_reference(case: Case, data: st.DataObject) -> None:

    check_arrow_feed_equals_reference(case, data)


def check_arrow_feed_equals_reference(case: Case, data: st.DataObject) -> None:
    """:func:`test_arrow_feed_equals_reference`, also run on correlated queries."""
    q, events, time, text = _show(case)
    table = _arrow_table(events)
    note(f"schema: {table.schema}")
    ref = reference_matches(q, events, time=time)
    compiled = ceql.compile(text)

    got = keys(compiled.evaluator(time=time).feed(table))
    check_against_reference(got, ref, q.limit)
    assert got == keys(compiled.run(events, time=time))

    cuts = data.draw(_splits(len(events)), label="cuts")
    ev = compiled.evaluator(time=time)
    fed: list[Key] = []
    for a, b in _bounds(len(events), cuts):
        batch = pa.RecordBatch.from_arrays(
            [col.combine_chunks() for col in table.slice(a, b - a).columns],
            names=table.column_names)
        out = keys(ev.feed(batch))
        assert all(a <= k[0] < b for k in out), "an output came before or after its end was fed"
        fed.extend(out)
    assert fed == got


# ---------------------------------------------------------------- the formatter


@PROFILE
@given(queries())
def test_format_roundtrip(q: A.Query) -> None:
    from ceql.frontends.ceql import parse

    text = format_query(q)
    note(text)
    assert parse(text) == q
    assert format_query(parse(text)) == text


def _q(where: A.Formula, **kw: Any) -> A.Query:
    return A.Query(kw.pop("strategy", "ANY"), kw.pop("select", None), kw.pop("streams", ("S",)),
                   where, **kw)


def _f(pred: A.Pred) -> A.Formula:
    return A.Filter(A.EventType("A"), A.FilterAtom("A", pred))


_a, _b, _c = A.Attr("a"), A.Attr("b"), A.Attr("c")
_one = A.Literal(1)

FORMAT_EXAMPLES = [
    _q(_f(A.Compare("=", A.Attr("flag"), A.Literal(True)))),
    _q(_f(A.Compare("!=", A.Attr("select"), A.Literal(False)))),  # keyword as a name
    _q(A.As(A.EventType("from"), "where"), select=("where",), streams=("all",)),
    _q(A.EventType("A b", "S-1"), streams=("S-1",)),  # names that need backquotes
    _q(_f(A.Compare(">", A.Arith("-", _a, A.Literal(-1)),
                    A.Arith("*", A.Literal(-2.5), A.Neg(_b))))),
    _q(_f(A.Compare("<", A.Arith("-", _a, A.Arith("-", _b, _c)),
                    A.Arith("/", _a, A.Arith("*", _b, A.Literal(2)))))),
    _q(_f(A.Compare("=", A.Neg(A.Neg(_a)), A.Arith("%", A.Neg(A.Arith("+", _a, _b)), _c)))),
    _q(_f(A.PNot(A.Like(A.Attr("s"), "it's \\d+")))),
    _q(_f(A.PNot(A.InSet(A.Attr("s"), (A.Literal("a"), A.Literal("b'c")), True)))),
    _q(_f(A.PNot(A.InRange(A.Arith("+", _a, _one), A.Literal(-1), _b)))),
    _q(_f(A.PAnd(A.POr(A.Compare("=", _a, _one), A.Compare("=", _b, _one)),
                 A.PAnd(A.Compare("=", _b, _one), A.PNot(A.PNot(A.Compare("=", _c, _one))))))),
    _q(A.Filter(A.Filter(A.EventType("A"), A.FilterAtom("A", A.Compare("=", _a, _one))),
                A.FilterAnd(A.FilterAtom("A", A.Compare("=", _b, _one)),
                            A.FilterOr(A.FilterAtom("A", A.Compare("=", _c, _one)),
                                       A.FilterAtom("A", A.Compare("=", _a, _one)))))),
    _q(A.Seq(A.EventType("A"), A.Seq(A.EventType("B"), A.EventType("C"), True))),
    _q(A.Or(A.EventType("A"), A.Or(A.EventType("B"), A.Seq(A.EventType("C"), A.EventType("D"))))),
    _q(A.Plus(A.Plus(A.As(A.Plus(A.EventType("A"), True), "x")), True)),
    _q(A.As(A.As(A.Plus(A.EventType("A")), "x"), "y")),
    _q(A.Seq(A.Filter(A.EventType("A"), A.FilterAtom("A", A.Compare("=", _a, _one))),
             A.Plus(A.Or(A.EventType("B"), A.EventType("C")), True))),
    _q(A.EventType("A"), within=A.Within("time", Fraction(1, 1000))),
    _q(A.EventType("A"), within=A.Within("time", Fraction(5400))),
    _q(A.EventType("A"), within=A.Within("events", Fraction(0))),
    _q(A.EventType("A"), within=A.Within("attr", Fraction(5, 2), "ts")),
    _q(A.EventType("A"), partition_by=("a", "b"), consume="PARTITION", limit=7,
       strategy="STRICT", select=()),
    _q(_f(A.Compare("=", A.Attr("x"), A.Literal(1e-7)))),
    _q(_f(A.Compare("=", A.Attr("x"), A.Literal(1e22)))),
    # conditions between events (more in tests/test_correlation_language.py)
    _q(_f(A.Compare(">", A.Attr("odd a", var="odd v"), A.Neg(A.Prev("select"))))),
    _q(A.Filter(A.Plus(A.EventType("B", "S 1")),
                A.FilterOr(A.FilterAtom("S 1>B", A.Compare("<", A.Attr("x"), _one)),
                           A.FilterMatch(A.InRange(A.Agg("AVG", "S 1>B", "x"),
                                                   A.Agg("COUNT", "S 1>B"),
                                                   A.Agg("MAX", "S 1>B", "all"))))),
       select=("S 1>B",), streams=("S 1",), limit=0),
]


@pytest.mark.parametrize("q", FORMAT_EXAMPLES, ids=range(len(FORMAT_EXAMPLES)))
def test_format_examples(q: A.Query) -> None:
    from ceql.frontends.ceql import parse

    text = format_query(q)
    assert parse(text) == q, text


def test_format_text() -> None:
    q = _q(A.Filter(A.Seq(A.As(A.EventType("SELL"), "msft"), A.Plus(A.EventType("BUY", "S"))),
                    A.FilterAtom("msft", A.Compare("=", A.Attr("name"), A.Literal("O'K")))),
           strategy="NEXT", select=("msft",), within=A.Within("time", Fraction(3, 2)),
           partition_by=("name",), consume="ANY", limit=2)
    assert format_query(q) == (
        "SELECT NEXT msft FROM S\n"
        "WHERE SELL AS msft ; S>BUY+ FILTER msft[name = 'O''K']\n"
        "PARTITION BY [name]\n"
        "WITHIN 1.5 SECONDS\n"
        "CONSUME BY ANY\n"
        "LIMIT 2")
