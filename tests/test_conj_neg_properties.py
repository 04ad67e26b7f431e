"""Property tests of conjunction and negation: the engine against the brute-force reference on
random queries with ``AND`` and ``NOT`` (``conj_neg`` generators of ``tests/strategies.py``)
mixed with every other operator and clause, through the same checks as
``tests/test_properties.py`` (row, chunked and Arrow feeds, stream order).

Leading and trailing NOTs, and atoms on a negated variable that read other events, are not
evaluated yet (compiling one says so), so the generated queries lose them (a dropped NOT with
the FILTER atoms about its variable) before the checks; a NOT between two elements, the
subject here, is kept, also among conditions between events of the match.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from ceql.ir import is_correlated, negated_variables
from ceql.ir import nodes as A
from ceql.ir.walks import seq_elements
from strategies import PROFILE, Case, MultiCase, cases, multi_cases
from test_properties import (
    check_arrow_feed_equals_reference,
    check_chunked_feed_equals_run,
    check_engine_equals_reference,
    check_outputs_come_in_stream_order,
)


def _chain(elems: list[tuple[A.Formula, bool]]) -> A.Formula:
    f = elems[0][0]
    for e, contiguous in elems[1:]:
        f = A.Seq(f, e, contiguous)
    return f


def _drop_atoms(c: A.FilterExpr, names: set[str], negated: set[str]) -> A.FilterExpr | None:
    if isinstance(c, A.FilterAtom):
        drop = c.var in names or (c.var in negated and is_correlated(c))
        return None if drop else c
    if isinstance(c, A.FilterAnd):
        left = _drop_atoms(c.left, names, negated)
        right = _drop_atoms(c.right, names, negated)
        if left is None or right is None:
            return left or right
        return replace(c, left=left, right=right)
    return c  # atoms about negated variables are plain conjuncts, never under OR


def _negated_names(n: A.Not) -> set[str]:
    f = n.formula
    names: set[str] = set()
    while isinstance(f, A.As):
        names.add(f.var)
        f = f.formula
    return names


def _without_edges(q: A.Query) -> A.Query:
    """``q`` without a leading or trailing NOT (and the atoms about its variable), and
    without atoms on negated variables that read other events."""
    names: set[str] = set()
    negated = set(negated_variables(q.where))

    def strip(f: A.Formula) -> A.Formula:
        if isinstance(f, A.Filter):
            inner = strip(f.formula)
            cond = _drop_atoms(f.cond, names, negated)
            return inner if cond is None else replace(f, formula=inner, cond=cond)
        if isinstance(f, A.As):
            return replace(f, formula=strip(f.formula))
        if isinstance(f, A.Seq):
            elems = list(seq_elements(f))
            for i in (-1, 0):
                if isinstance(elems[i][0], A.Not):
                    names.update(_negated_names(elems[i][0]))  # type: ignore[arg-type]
                    del elems[i]
            if elems and elems[0][1]:
                elems[0] = (elems[0][0], False)
            return _chain(elems)
        return f

    def drop(f: A.Formula) -> A.Formula:
        """Every FILTER without the atoms dropped."""
        if isinstance(f, A.Filter):
            inner = drop(f.formula)
            cond = _drop_atoms(f.cond, names, negated)
            return inner if cond is None else replace(f, formula=inner, cond=cond)
        if isinstance(f, A.As | A.Plus | A.Not):
            return replace(f, formula=drop(f.formula))
        if isinstance(f, A.Seq | A.Or | A.And):
            return replace(f, left=drop(f.left), right=drop(f.right))
        return f

    # the edges' names are collected on the way down, then atoms dropped everywhere
    return replace(q, where=drop(strip(q.where)))


def _case(c: Case) -> Case:
    return (_without_edges(c[0]), c[1], c[2])


def _multi(c: MultiCase) -> MultiCase:
    return (_without_edges(c[0]), c[1], c[2])


@PROFILE
@given(st.lists(multi_cases(conj_neg=True).map(_multi), min_size=1, max_size=2))
def test_engine_equals_reference_with_and_and_not(batch: list[MultiCase]) -> None:
    check_engine_equals_reference(batch)


@PROFILE
@given(cases(conj_neg=True).map(_case), st.data())
def test_chunked_feed_equals_run_with_and_and_not(case: Case, data: st.DataObject) -> None:
    check_chunked_feed_equals_run(case, data)


@PROFILE
@given(cases(mixed=False, conj_neg=True).map(_case), st.data())
def test_arrow_feed_equals_reference_with_and_and_not(case: Case,
                                                      data: st.DataObject) -> None:
    check_arrow_feed_equals_reference(case, data)


@PROFILE
@given(cases(conj_neg=True).map(_case))
def test_outputs_come_in_stream_order_with_and_and_not(case: Case) -> None:
    check_outputs_come_in_stream_order(case)


@PROFILE
@given(st.lists(multi_cases(correlated=True, conj_neg=True).map(_multi), min_size=1,
                max_size=2))
def test_engine_equals_reference_with_and_not_and_conditions_between_events(
        batch: list[MultiCase]) -> None:
    check_engine_equals_reference(batch)


@PROFILE
@given(cases(correlated=True, conj_neg=True).map(_case), st.data())
def test_chunked_feed_equals_run_with_and_not_and_conditions_between_events(
        case: Case, data: st.DataObject) -> None:
    check_chunked_feed_equals_run(case, data)
