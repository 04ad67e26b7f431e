"""The index plans of conditions between events against the brute-force reference: the range
lookup (a sorted index of the runs' earlier values, for ``b[price > a.price]`` and
``b[price > PREV(price)]`` in every direction) and, under NEXT and LAST, the staircase that
drops runs another run dominates (a weaker PREV value with a preferred chain). Queries are
chosen to reach those plans; values include NULL, strings and floats, which the indexes must
leave to the condition."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ceql
from ceql.frontends.ceql import parse
from reference import reference_matches
from strategies import PROFILE
from test_properties import check_against_reference, keys

warnings.simplefilter("ignore", ceql.UnboundedOutputWarning)

TEMPLATES = [
    "(B AS b)+ FILTER b[price > PREV(price)]",
    "(B AS b)+ FILTER b[PREV(price) >= price]",
    "(B AS b)+ FILTER b[price < PREV(price)] AND [COUNT(b) >= 2]",
    "(B AS b)+ FILTER b[price <= PREV(price)] AND b[k = 1] WITHIN 6 EVENTS",
    "A AS a ; (B AS b)+ ; C AS c FILTER b[price > PREV(price)] AND c[price < a.price]",
    "(B AS b)+ ; C AS c FILTER b[price > PREV(price)] AND c[price > b.price]",
    "A AS a ; B AS b FILTER b[price > a.price]",
    "(A AS a)+ ; B AS b FILTER b[price <= a.price]",
    "A AS a ; B AS b ; C AS c FILTER b[price >= a.price] AND c[price < b.price] "
    "WITHIN 5 EVENTS",
    "(B AS b)+ FILTER b[price > PREV(price)] CONSUME BY ANY",
    "(B AS b)+ FILTER b[price > PREV(price)] PARTITION BY [k]",
]

_VALUE = st.one_of(st.integers(0, 5), st.integers(0, 5), st.integers(0, 5),
                   st.sampled_from([None, 2.5, "x"]))
_EVENT = st.fixed_dictionaries({"type": st.sampled_from("ABBC"), "price": _VALUE,
                                "k": st.integers(0, 1)})


@pytest.mark.parametrize("strategy", ["ALL", "NEXT", "LAST", "MAX"])
@pytest.mark.parametrize("where", TEMPLATES)
@PROFILE
@given(events=st.lists(_EVENT, max_size=11))
def test_index_plans_equal_the_reference(where: str, strategy: str,
                                         events: list[dict[str, Any]]) -> None:
    text = f"SELECT {strategy} * FROM S WHERE {where}"
    got = keys(ceql.compile(text).run(events))
    check_against_reference(got, reference_matches(parse(text), events), None)
