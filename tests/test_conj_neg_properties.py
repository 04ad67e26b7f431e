"""Property tests of conjunction and negation: the engine against the brute-force reference on
random queries with ``AND`` and ``NOT`` (``conj_neg`` generators of ``tests/strategies.py``)
mixed with every other operator and clause, through the same checks as
``tests/test_properties.py`` (row, chunked and Arrow feeds, stream order).

Leading and trailing NOTs are not evaluated yet (compiling one says so), so the generated
queries lose them, with the FILTER atoms about their variables, before the checks; a NOT
between two elements, the subject here, is kept.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

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


def _drop_atoms(c: A.FilterExpr, names: set[str]) -> A.FilterExpr | None:
    if isinstance(c, A.FilterAtom):
        return None if c.var in names else c
    if isinstance(c, A.FilterAnd):
        left, right = _drop_atoms(c.left, names), _drop_atoms(c.right, names)
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
    """``q`` without a leading or trailing NOT (and the atoms about its variable)."""
    names: set[str] = set()

    def strip(f: A.Formula) -> A.Formula:
        if isinstance(f, A.Filter):
            inner = strip(f.formula)
            cond = _drop_atoms(f.cond, names)
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

    # names are collected on the way down, atoms dropped on the way up
    return replace(q, where=strip(q.where))


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
