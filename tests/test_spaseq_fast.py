"""ceql.spaseq's fast paths (issue 15.7) give what the plain ones give: cross-GPM FILTERs
decided in Python against SPARQL's answer, instants evaluated in batches against one by one,
runs indexed by shared values against the brute-force reference on stock-like streams, and
GPMs equal up to variable names run once."""

from __future__ import annotations

from typing import Any

import pyoxigraph as ox
from hypothesis import given, settings
from hypothesis import strategies as st

import ceql.spaseq as sp
from ceql.frontends.spaseq import (
    BinaryExpr,
    CrossFilter,
    Expr,
    Literal,
    UnaryExpr,
    Var,
    expr_to_sparql,
    to_sparql,
)
from ceql.rdf.bgp import parse_bgp
from ceql.rdf.sparql import canonical_form
from ceql.spaseq.bgps import bgp_of
from ceql.spaseq.conditions import FilterChecker, numeric_value
from spaseq_reference import reference_matches
from strategies import PROFILE
from test_spaseq_eval import as_set, random_cases

EX = "http://example/"
XSD = "http://www.w3.org/2001/XMLSchema#"
NUMBERS = ["0", "1", "-1", "2", "10", "+3", "007", "123456789012345678", "1234567890123456789012"]
DECIMALS = ["0.0", "1.5", "-1.50", "2", ".5", "5.", "10.25", "0.1", "1.0000000000000000001"]
DOUBLES = ["0.0E0", "1.5E0", "-1", "2e1", "INF", "-INF", "NaN", "0.1", "1E400"]


def terms() -> st.SearchStrategy[str | None]:
    typed = st.one_of(
        st.sampled_from(NUMBERS).map(lambda v: f'"{v}"^^<{XSD}integer>'),
        st.sampled_from(DECIMALS).map(lambda v: f'"{v}"^^<{XSD}decimal>'),
        st.sampled_from(DOUBLES).map(lambda v: f'"{v}"^^<{XSD}double>'),
        st.sampled_from(["1", "2.5"]).map(lambda v: f'"{v}"^^<{XSD}float>'),
        st.just(f'"abc"^^<{XSD}integer>'))
    return st.one_of(typed, st.sampled_from([f"<{EX}a>", '"1"', '"x"@en', None]))


@st.composite
def expressions(draw: st.DrawFn, depth: int = 0) -> Expr:
    """&&, ||, ! over comparisons of ?a ?b ?c and literals (sometimes with arithmetic, which
    only SPARQL decides)."""
    if depth < 2 and draw(st.booleans()):
        op = draw(st.sampled_from(["&&", "||", "!"]))
        if op == "!":
            return UnaryExpr("!", draw(expressions(depth + 1)))
        return BinaryExpr(op, draw(expressions(depth + 1)), draw(expressions(depth + 1)))
    literal = st.sampled_from([("1", "integer"), ("2.5", "decimal"), ("-1", "integer"),
                               ("1e0", "double"), ("0", "integer"), ("2", "decimal"),
                               ("NaN", "double"), ("x", None)]).map(
        lambda x: Literal(x[0], None if x[1] is None else XSD + x[1]))
    left = draw(st.sampled_from([Var("a"), Var("b"), Var("c")]))
    right: Expr = draw(st.one_of(st.sampled_from([Var("a"), Var("b"), Var("c")]), literal))
    if draw(st.booleans()):
        left, right = right, left  # type: ignore[assignment]
    if draw(st.integers(0, 9)) == 0:
        left = BinaryExpr("+", left, Literal("1", XSD + "integer"))  # type: ignore[assignment]
    return BinaryExpr(draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="])), left, right)


def sparql_holds(expr: str, bindings: dict[str, str]) -> bool:
    values = " ".join(f"VALUES ?{v} {{ {t} }}" for v, t in bindings.items())
    result = ox.Store().query(f"ASK {{ {values} FILTER ({expr}) }}")
    assert isinstance(result, ox.QueryBoolean)
    return bool(result)


@settings(max_examples=PROFILE.max_examples, deadline=None)
@given(expressions(), terms(), terms(), terms())
def test_filters_decided_in_python_agree_with_sparql(expr: Expr, a: str | None, b: str | None,
                                                     c: str | None) -> None:
    f = CrossFilter("B", expr, ("a", "b", "c"), ("a", "b", "c"))
    bindings = {v: t for v, t in (("a", a), ("b", b), ("c", c)) if t is not None}
    checker = FilterChecker()
    want = sparql_holds(expr_to_sparql(expr), bindings)
    assert checker.holds(f, bindings) == want
    assert checker.holds(f, bindings) == want  # remembered


def test_numeric_values() -> None:
    assert numeric_value(f'"5"^^<{XSD}integer>') == (False, 5)
    assert numeric_value(f'"1.5E0"^^<{XSD}double>') == (True, 1.5)
    for outside in (f'"1234567890123456789012"^^<{XSD}integer>', f'"x"^^<{XSD}integer>',
                    f'"1"^^<{XSD}float>', f"<{EX}a>", '"5"', f'"+INF"^^<{XSD}double>',
                    f'"NaN"^^<{XSD}double>'):
        assert numeric_value(outside) is None


def test_canonical_form() -> None:
    a = 'SELECT DISTINCT ?c ?p1 WHERE { ?c <http://e/p> ?p1 . ?c <http://e/n> "?p1" }'
    b = 'SELECT DISTINCT ?d $q WHERE { ?d <http://e/p> ?q . ?d <http://e/n> "?p1" }'
    assert canonical_form(a)[0] == canonical_form(b)[0]
    assert canonical_form(a)[1] == ("c", "p1") and canonical_form(b)[1] == ("d", "q")
    assert canonical_form(a.replace('"?p1"', '"?p2"'))[0] != canonical_form(a)[0]


def _matches(q: sp.Query, events: list[dict[str, Any]], one_by_one: bool) -> set[Any]:
    ev = q.evaluator()
    if one_by_one:
        found = [m for e in events for m in ev.feed([e])]
    else:
        found = ev.feed(events)
    found += ev.close()
    return {m.key() for m in found}


@settings(max_examples=PROFILE.max_examples, deadline=None)
@given(random_cases())
def test_batches_equal_one_by_one(case: tuple[str, list[dict[str, Any]]]) -> None:
    text, events = case
    q = sp.compile(text)
    events = sorted(events, key=lambda e: e["time"])
    assert _matches(q, events, True) == _matches(q, events, False)


STOCK = ("PREFIX : <http://example/>\nSELECT * WITHIN {w} SECONDS FROM STREAM S1 <http://s>\n"
         "WHERE {{ SEQ ({seq})\n"
         "DEFINE GPM A ON S1 {{ ?c :price ?p1 . ?c :volume ?v1 }}\n"
         "DEFINE GPM B ON S1 {{ ?c :price ?p2 . ?c :volume ?v2 . FILTER (?p2 > ?p1) }}\n"
         "DEFINE GPM C ON S1 {{ ?c :price ?p3 . FILTER (?p3 < ?p2 && ?p3 >= ?p1) }} }}")


@st.composite
def stock_cases(draw: st.DrawFn) -> tuple[str, list[dict[str, Any]]]:
    """A V shape with random operators and + over a few companies' trades (prices as
    decimals and integers, a company sometimes without a volume)."""
    ops = [draw(st.sampled_from([",", ";", ":"])) for _ in range(2)]
    names = ["A", "B", "C"]
    plus = draw(st.sampled_from([None, 1, 2]))
    if plus is not None:
        names[plus] += "+"
    seq = f"{names[0]} {ops[0]} {names[1]} {ops[1]} {names[2]}"
    text = STOCK.format(w=draw(st.integers(2, 8)), seq=seq)
    events = []
    for t in range(draw(st.integers(2, 9))):
        c = draw(st.sampled_from("xyz"))
        price = draw(st.sampled_from(['"1.5"^^<http://www.w3.org/2001/XMLSchema#decimal>',
                                      "2", "1", '"2.0"^^<http://www.w3.org/2001/XMLSchema#decimal>',
                                      "3"]))
        graph = f"<{EX}{c}> <{EX}price> {price} ."
        if draw(st.integers(0, 3)):
            graph += f" <{EX}{c}> <{EX}volume> {draw(st.integers(1, 2))} ."
        events.append({"stream": "S1", "time": t, "graph": graph})
    return text, events


@settings(max_examples=PROFILE.max_examples, deadline=None)
@given(stock_cases())
def test_indexed_runs_agree_with_reference(case: tuple[str, list[dict[str, Any]]]) -> None:
    text, events = case
    q = sp.compile(text)
    assert as_set(q, events) == reference_matches(q.ast, events)
    assert _matches(q, events, True) == _matches(q, events, False)


# GPMs whose basic graph pattern the tree gives, or not (and why not): every kind of group
# element, of pattern term, and of FILTER the storeless path refuses or takes
_GPMS = [
    "?s ex:p ?o .",
    "?s a ex:T ; ex:p ?o , ?o2 .",
    "?s ?p ?o . FILTER (?o > 3 && ?o < 10)",
    "?s ex:p ?o . FILTER (?o = 3) FILTER (?o != ?s)",
    '?s ex:p ?o . FILTER (regex(str(?o), "a") || !(?o IN (1, "x"@en, ex:a)))',
    "?s ex:p ?o . FILTER (?o NOT IN (1, 2.5))",
    "?s ex:p ?o . FILTER (?o IN ())",
    '?s ex:p ?o . FILTER (?o = "x"@not)',
    "?s ex:p ?o . FILTER (ex:f(?o, ?s))",
    '?s ex:p ?o . FILTER (?o = "5"^^ex:t)',
    "?s ex:p 5 .",
    '?s ex:p "x" .',
    "_:b ex:p ?o .",
    "?s ex:p ?o . OPTIONAL { ?s ex:q ?v }",
    "{ ?s ex:p ?o } UNION { ?s ex:q ?o }",
    "GRAPH <http://example/g> { ?s ex:p ?o }",
    "{ ?s ex:p ?o }",
]


def test_basic_graph_patterns_from_the_tree_are_the_ones_in_the_text() -> None:
    """A GPM reaches the storeless path as a structure built from its syntax tree
    (ceql.spaseq.bgps), no longer found again in the SPARQL text printed for the store: the
    two give the same pattern (the same path is taken), on GPMs of every kind."""
    built = []
    for body in _GPMS:
        q = sp.compile("PREFIX ex: <http://example/> SELECT * WITHIN 10 SECONDS "
                       "FROM STREAM S <http://example/s> "
                       f"WHERE {{ SEQ (A) DEFINE GPM A ON S {{ {body} }} }}")
        (gpm,) = q.ast.gpms
        built.append(bgp_of(gpm))
        assert built[-1] == parse_bgp(to_sparql(gpm)), body
        assert q.plan.patterns == {"A": built[-1]}
    assert 0 < sum(b is None for b in built) < len(built)  # both kinds drawn
    assert any(b is not None and b.filters for b in built)


@settings(max_examples=PROFILE.max_examples, deadline=None)
@given(random_cases())
def test_random_gpm_patterns_from_the_tree_are_the_ones_in_the_text(
        case: tuple[str, list[dict[str, Any]]]) -> None:
    for gpm in sp.compile(case[0]).ast.gpms:
        assert bgp_of(gpm) == parse_bgp(to_sparql(gpm))
