"""ceql.rdf.fast: basic graph patterns matched without a store give exactly the store's
mappings (random events in every input form, random patterns, literals in every lexical
form), the same errors, and only for the GPMs they can keep exact."""

from __future__ import annotations

import re
from typing import Any

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ceql.rdf import GpmEvaluator, RdfInputError, StaticDataset, read_event
from ceql.rdf import triples as triples_module
from ceql.rdf.bgp import RDF_TYPE, Slot, parse_bgp
from ceql.rdf.triples import TripleReader

EX = "http://ex/"
XSD = "http://www.w3.org/2001/XMLSchema#"


def _both(queries: dict[str, str], **kw: Any) -> tuple[GpmEvaluator, GpmEvaluator]:
    fast, store = GpmEvaluator(queries, fast=True, **kw), GpmEvaluator(queries, fast=False, **kw)
    assert fast.storeless and not store.storeless
    return fast, store


def _answers(fast: GpmEvaluator, store: GpmEvaluator, events: list[Any], **kw: Any
             ) -> tuple[Any, Any] | None:
    """Both evaluators' answers on ``events``; None when the store refuses them, after
    checking that the fast path refuses them with the same message."""
    try:
        want = store.evaluate_many(events, **kw)
    except RdfInputError as e:
        with pytest.raises(RdfInputError) as got:
            fast.evaluate_many(events, **kw)
        assert str(got.value) == str(e)
        return None
    return fast.evaluate_many(events, **kw), want


_BLANK = re.compile(r"_:[A-Za-z0-9_]+")


def _blanks_out(results: list[dict[str, list[dict[str, Any]]]]) -> list[Any]:
    """Results with every blank node's label made one, each GPM's mappings as a sorted
    multiset: labels are fresh on each reading of text, so only their places compare."""
    def plain(v: Any) -> Any:
        return _BLANK.sub("_:B", v) if isinstance(v, str) else v
    return [{g: sorted(repr(sorted((k, plain(v)) for k, v in m.items())) for m in ms)
             for g, ms in r.items()} for r in results]


def _agree(fast: GpmEvaluator, store: GpmEvaluator, events: list[Any], **kw: Any) -> None:
    """Both evaluators answer ``events`` alike (blank node labels aside), or refuse them
    alike."""
    both = _answers(fast, store, events, **kw)
    if both is not None:
        answers, want = both
        assert _blanks_out(answers) == _blanks_out(want)


# ---------------------------------------------------------------- which GPMs qualify


@pytest.mark.parametrize("query, patterns, distinct", [
    ("SELECT ?s WHERE { ?s <http://ex/p> ?o }", [("?s", "<http://ex/p>", "?o")], False),
    ("PREFIX e: <http://ex/> SELECT DISTINCT * { ?s e:p ?o; e:q ?w, ?v. ?s a e:T }",
     [("?s", "e:p", "?o"), ("?s", "e:q", "?w"), ("?s", "e:q", "?v"), ("?s", RDF_TYPE, "e:T")],
     True),
    ("PREFIX pred: <http://example/>\nSELECT ?c ?p WHERE {\n ?c pred:price ?p.\n"
     " ?c pred:volume ?v.\n}", [("?c", "pred:price", "?p"), ("?c", "pred:volume", "?v")],
     False),
    ("SELECT ?s { ?s ?p ?o ; ; <http://ex/q> ?o . }",
     [("?s", "?p", "?o"), ("?s", "<http://ex/q>", "?o")], False),
    ("SELECT * {}", [], False),
    ("BASE <http://ex/> SELECT $s { $s <p> ?o }", [("$s", "<p>", "?o")], False),
])
def test_basic_graph_patterns_are_found(query: str, patterns: list[tuple[str, ...]],
                                        distinct: bool) -> None:
    bgp = parse_bgp(query)
    assert bgp is not None and bgp.distinct == distinct
    assert [tuple(s.text for s in p) for p in bgp.patterns] == patterns
    assert bgp.filters == ()


@pytest.mark.parametrize("query, filters, variables", [
    ("SELECT ?s { ?s <http://ex/p> ?o FILTER(?o > 1) }", [("(?o > 1)", ("o",))], ["o"]),
    ("SELECT ?s { ?s <http://ex/p> ?o . FILTER regex(?o, \"a&&b\") . ?s <http://ex/q> ?w "
     "FILTER (?w < ?o && (?w > 2 || ?w < 0) &&?s != ?o) }",
     [('regex(?o, "a&&b")', ("o",)), ("(?w < ?o)", ("w", "o")),
      ("((?w > 2 || ?w < 0))", ("w",)), ("(?s != ?o)", ("s", "o"))], ["o", "w", "s"]),
    ("SELECT ?s { FILTER(bound(?x)) ?s <http://ex/p> ?o ; FILTER isIRI(?s) }",
     [("(bound(?x))", ("x",)), ("isIRI(?s)", ("s",))], ["x", "s"]),
    ("SELECT ?s { ?s <http://ex/p> ?o FILTER (?o & & ?s) }", [("(?o & & ?s)", ("o", "s"))],
     ["o", "s"]),
])
def test_filters_are_found(query: str, filters: list[tuple[str, tuple[str, ...]]],
                           variables: list[str]) -> None:
    bgp = parse_bgp(query)
    assert bgp is not None
    assert list(bgp.filters) == filters and list(bgp.filter_vars) == variables


def test_filter_outcomes_are_remembered_and_stay_exact() -> None:
    query = {"A": f"SELECT ?s ?o {{ ?s <{EX}p> ?o FILTER(?o > 2 && isNumeric(?o)) }}"}
    fast, store = _both(query)
    events = [f'<{EX}s> <{EX}p> {v} .\n' for v in ("1", "3", '"3"', "3.5e0", "3")]
    for _ in range(2):  # the second time, from what the first decided
        assert fast.evaluate_many(events) == store.evaluate_many(events)
    assert fast.evaluate_many(events)[1] == {"A": [{"s": f"{EX}s", "o": 3}]}


@pytest.mark.parametrize("query", [
    "SELECT ?s { ?s <http://ex/p> ?o FILTER NOT EXISTS { ?s <http://ex/q> ?o } }",
    "SELECT ?s { ?s <http://ex/p> ?o FILTER EXISTS { ?s <http://ex/q> ?o } }",
    "SELECT ?s { ?s <http://ex/p> ?o FILTER(?o NOT IN (1, 2)) }",
    "SELECT ?s { ?s <http://ex/p> ?o FILTER(?o > RAND()) }",
    "SELECT ?s { ?s <http://ex/p> ?o FILTER(?o < NOW()) }",
    "SELECT ?s { ?s <http://ex/p> ?o FILTER(isBlank(BNODE())) }",
    "SELECT ?s { ?s <http://ex/p> ?o FILTER(?__ceql_row > 1) }",
    "SELECT ?s { ?s <http://ex/p> ?o FILTER <http://ex/f>(?o) }",
    "SELECT ?s { ?s <http://ex/p> 1 }",
    "SELECT ?s { ?s <http://ex/p> \"a\" }",
    "SELECT ?s { ?s <http://ex/p> true }",
    "SELECT ?s { _:b <http://ex/p> ?s }",
    "SELECT ?s { [] <http://ex/p> ?s }",
    "SELECT ?s { ?s <http://ex/p>/<http://ex/q> ?o }",
    "SELECT ?s { ?s ^<http://ex/p> ?o }",
    "SELECT ?s { ?s <http://ex/p> ?o OPTIONAL { ?o <http://ex/q> ?w } }",
    "SELECT ?s { { ?s <http://ex/p> ?o } UNION { ?s <http://ex/q> ?o } }",
    "SELECT ?s { GRAPH <http://ex/kb> { ?s <http://ex/p> ?o } }",
    "SELECT ?s { ?s <http://ex/p> ?o BIND(1 AS ?x) }",
    "SELECT ?s { ?s <http://ex/p> ?o VALUES ?o { 1 } }",
    "SELECT ?s { ?s <http://ex/p> ?o } ORDER BY ?s",
    "SELECT ?s { ?s <http://ex/p> ?o } LIMIT 1",
    "SELECT REDUCED ?s { ?s <http://ex/p> ?o }",
    "SELECT (?s AS ?t) { ?s <http://ex/p> ?o }",
    "SELECT (COUNT(*) AS ?n) { ?s <http://ex/p> ?o }",
    "SELECT ?s FROM <http://ex/g> { ?s <http://ex/p> ?o }",
    "SELECT ?s { SELECT ?s { ?s <http://ex/p> ?o } }",
    "SELECT ?s { ?s <http://ex/p> ?o MINUS { ?s <http://ex/q> ?o } }",
    "ASK { ?s <http://ex/p> ?o }",
    "SELECT ?s { ?s <http://ex/p> ?o . ?s <<http://ex/q>> ?o }",
])
def test_anything_more_is_not(query: str) -> None:
    assert parse_bgp(query) is None


def test_the_evaluator_goes_without_a_store_only_when_every_gpm_can() -> None:
    bgp = {"A": f"SELECT ?s WHERE {{ ?s <{EX}p> ?o }}"}
    assert GpmEvaluator(bgp).storeless
    assert not GpmEvaluator(bgp, fast=False).storeless
    assert GpmEvaluator({**bgp, "B": "SELECT ?s { ?s ?p ?o FILTER(?o > 1) }"}).storeless
    assert not GpmEvaluator({**bgp, "B": "SELECT ?s { ?s ?p ?o OPTIONAL { ?o ?q ?s } }"}
                            ).storeless
    kb = StaticDataset().add([(f"{EX}s", f"{EX}k", 1)], graph=f"{EX}kb")
    assert GpmEvaluator(bgp, kb).storeless  # the dataset is only read through GRAPH
    assert not GpmEvaluator({"K": f"SELECT ?s {{ GRAPH <{EX}kb> {{ ?s ?p ?o }} }}"},
                            kb).storeless


def test_constants_are_read_by_the_stores_parser() -> None:
    queries = {"A": "PREFIX e: <http://ex/a/../> SELECT ?s { ?s e:p ?o ; a e:T }",
               "B": "SELECT ?s { ?s <q> ?o }", "C": "SELECT ?s { ?s d:r ?o }",
               "D": "SELECT ?s { ?s <http://ex/a/../p> ?o }"}
    fast, store = _both(queries, prefixes={"d": "http://d/"}, base_iri="http://base/x/")
    event = ("<http://ex/s> <http://ex/p> 1 ; a <http://ex/T> .\n"
             "<http://ex/s> <http://ex/a/../p> 1 ; a <http://ex/a/../T> .\n"
             "<http://ex/s> <q> 2 .\n<http://ex/s> <http://d/r> 3 .")
    for e in (event, event.replace(" ;", " .\n<http://ex/s>")):
        got = fast.evaluate(e)
        assert got == store.evaluate(e)
        assert got["B"] == got["C"] == [{"s": f"{EX}s"}]


# ---------------------------------------------------------------- terms as the store has them

_DATATYPES = [None, "@en", "@EN-us", "integer", "int", "long", "unsignedByte", "decimal",
              "double", "float", "boolean", "dateTime", "date", "time", "dayTimeDuration",
              "duration", "string", "gYear", f"<{EX}dt>", "<http://www.w3.org/ns/x>"]
_LEXICAL = st.one_of(
    st.from_regex(r"[+-]?[0-9]{0,20}(\.[0-9]{0,4})?([eE][+-]?[0-9]{1,2})?", fullmatch=True),
    st.sampled_from(["0", "-0", "+0", "00", "007", "9223372036854775807",
                     "9223372036854775808", "-9223372036854775808", "999999999999999999",
                     "true", "false", "1", "TRUE", "INF", "-INF", "NaN", "1.", ".5", "1e3",
                     "2024-03-01T09:30:00", "2024-03-01T09:30:00+00:00", "2024-03-01Z",
                     "2024-13-01", "09:30:00", "P1DT2H", "PT0S", "2024", "a b", "é", "\u2028",
                     "\t", 'q\\"q', "\\u00e9", "\\n", ""]),
    st.text(alphabet=st.characters(codec="utf-8", blacklist_characters='"\\\n\r'), max_size=5),
)


def _literal(lex: str, datatype: str | None) -> str:
    if datatype is None:
        return f'"{lex}"'
    if datatype.startswith("@"):
        return f'"{lex}"{datatype}'
    if datatype.startswith("<"):
        return f'"{lex}"^^{datatype}'
    return f'"{lex}"^^<{XSD}{datatype}>'


@settings(max_examples=300)
@given(st.lists(st.tuples(_LEXICAL, st.sampled_from(_DATATYPES)), min_size=1, max_size=8))
def test_literals_come_back_alike_on_both_paths(literals: list[tuple[str, str | None]]
                                                    ) -> None:
    texts = [_literal(lex, d) for lex, d in literals]
    event = "".join(f"<{EX}s{i}> <{EX}p> {t} .\n" for i, t in enumerate(texts))
    fast, store = _both({"A": f"SELECT ?s ?o {{ ?s <{EX}p> ?o }}"}, terms=True)
    both = _answers(fast, store, [event])
    if both is None:
        return
    answers, want = both
    assert answers == want
    fast, store = _both({"A": f"SELECT ?s ?o {{ ?s <{EX}p> ?o }}"})
    # repr: NaN is not equal to itself
    assert repr(fast.evaluate_many([event])) == repr(store.evaluate_many([event]))


@settings(max_examples=200)
@given(_LEXICAL, st.sampled_from(_DATATYPES))
def test_texts_taken_as_they_are_are_those_the_parser_reads(lex: str, datatype: str | None
                                                            ) -> None:
    # the reader's shortcut must never differ from the term's exact form (the parser's,
    # not the store's canonical one: ceql.rdf.exact)
    text = _literal(lex, datatype)
    reader = TripleReader()
    got = reader.read([f"<{EX}s> <{EX}p> {text} ."], ox.RdfFormat.N_TRIPLES, ["e"])
    try:
        want = _parsed(text)
    except SyntaxError:
        assert got is None
        return
    assert got == [[(f"<{EX}s>", f"<{EX}p>", want)]]


def _parsed(text: str) -> str:
    """The exact text of the literal ``text`` (as the N-Triples parser reads it)."""
    (quad,) = ox.parse(f"<{EX}s> <{EX}p> {text} .", ox.RdfFormat.N_TRIPLES)
    return str(quad.object)


# ---------------------------------------------------------------- random graphs, random BGPs

_VARS = ["?a", "?b", "?c"]
_IRIS = [f"<{EX}s0>", f"<{EX}s1>", f"<{EX}o>"]
_PREDS = [f"<{EX}p0>", f"<{EX}p1>", f"<{EX}p2>"]
_NODE = st.sampled_from(_VARS + _IRIS)
_PATTERN = st.tuples(_NODE, st.sampled_from(_VARS + _PREDS + ["a"]), _NODE)


_FILTERS = st.sampled_from([
    "(?a > 1)", "(isIRI(?a))", "(?a != ?b)", '(lang(?b) = "en")', "(bound(?c))",
    '(?b < "m")', "(STR(?a) > STR(?b))", f"(datatype(?b) = <{XSD}integer>)",
    'regex(STR(?a), "s1")', "(?b >= 0 && ?b < 100)", "(?a = ?b || isLiteral(?c))",
    "(?b)", "(!bound(?a))", "(?b IN (1, 2.0, \"x\"))", "(sameTerm(?a, ?c))",
    "(xsd:integer(?b) > 2)", "(?b + 1 > 3)",
])


@st.composite
def _queries(draw: st.DrawFn) -> str:
    patterns = draw(st.lists(_PATTERN, max_size=3))
    used = sorted({t for p in patterns for t in p if t.startswith("?")})
    projection = draw(st.one_of(st.just(["*"]), st.lists(st.sampled_from(_VARS), min_size=1,
                                                          max_size=3, unique=True)))
    if projection == ["*"] and not used:
        projection = ["?a"]
    distinct = draw(st.booleans())
    body = " . ".join(" ".join(p) for p in patterns)
    for f in draw(st.lists(_FILTERS, max_size=2)):
        body += f" FILTER {f}"
    return (f"PREFIX xsd: <{XSD}> SELECT {'DISTINCT ' if distinct else ''}"
            f"{' '.join(projection)} WHERE {{ {body} }}")


_OBJECT_TEXTS = st.one_of(st.sampled_from([*_IRIS, "_:b0", "_:b1"]),
                          st.builds(_literal, _LEXICAL, st.sampled_from(_DATATYPES)))
_TRIPLE = st.tuples(st.sampled_from([*_IRIS, "_:b0", "_:b1"]),
                    st.sampled_from([*_PREDS, RDF_TYPE]), _OBJECT_TEXTS)
_TURTLE_TEXT = (f"@prefix e: <{EX}> .\ne:s0 e:p0 e:o , 2 ; a e:o .\n"
                f"_:x e:p1 e:s0 .  # a comment\n")


@st.composite
def _events(draw: st.DrawFn) -> Any:
    triples: list[tuple[str, str, str]] = draw(st.lists(_TRIPLE, max_size=6))
    duplicate: bool = draw(st.booleans())
    if triples and duplicate:
        triples.append(triples[0])  # a duplicate
    form = draw(st.sampled_from(["text", "bytes", "list", "graph", "turtle"]))
    text = "".join(f"{s} {p} {o} .\n" for s, p, o in triples)
    if form == "text":
        return text
    if form == "bytes":
        return text.encode()
    if form == "list":
        return [(s, p, o) for s, p, o in triples]
    if form == "graph":
        try:
            return read_event(text)
        except RdfInputError:
            return text
    return _TURTLE_TEXT + text


@settings(max_examples=150, deadline=None)
@given(st.lists(_queries(), min_size=1, max_size=3), st.lists(_events(), max_size=5),
       st.booleans())
def test_without_a_store_equals_the_store_on_random_graphs(queries: list[str],
                                                           events: list[Any],
                                                           terms: bool) -> None:
    gpms = {f"G{i}": q for i, q in enumerate(queries)}
    fast, store = _both(gpms, terms=terms)
    both = _answers(fast, store, events)
    if both is None:
        return
    answers, want = both
    assert _blanks_out(answers) == _blanks_out(want)  # repr inside: NaN equals itself
    graphs = [e for e in events if isinstance(e, ox.Dataset) or hasattr(e, "quads")]
    # the same graph read once: the same blank nodes, so exactly the same answers
    assert repr(fast.evaluate_many(graphs)) == repr(store.evaluate_many(graphs))
    assert _blanks_out([fast.evaluate(e) for e in events[:2]]) == _blanks_out(answers[:2])


def test_the_stock_use_case_without_a_store() -> None:
    event = (f'<{EX}goog> <{EX}price> "101.50"^^<{XSD}decimal> .\n'
             f'<{EX}goog> <{EX}volume> "0300"^^<{XSD}integer> .\n'
             f'<{EX}goog> <{EX}type> "BUY" .\n')
    query = (f"SELECT DISTINCT ?c ?p ?v WHERE {{ ?c <{EX}price> ?p . "
             f"?c <{EX}volume> ?v . }}")
    for terms, answer in [(False, {"c": f"{EX}goog", "p": 101.5, "v": 300}),
                          (True, {"c": f"<{EX}goog>", "p": f'"101.50"^^<{XSD}decimal>',
                                  "v": f'"0300"^^<{XSD}integer>'})]:  # as written
        fast, store = _both({"A": query}, terms=terms)
        assert fast.evaluate_many([event, event]) == [{"A": [answer]}] * 2
        assert store.evaluate_many([event, event]) == [{"A": [answer]}] * 2


def test_blank_nodes_stay_scoped_to_their_event() -> None:
    fast = GpmEvaluator({"A": f"SELECT ?s {{ ?s <{EX}p> ?o }}"}, terms=True)
    event = f"_:b <{EX}p> 1 .\n_:b <{EX}p> 2 .\n"
    one, two = fast.evaluate_many([event, event])
    assert len({m["s"] for m in one["A"]}) == 1
    assert {m["s"] for m in one["A"]}.isdisjoint({m["s"] for m in two["A"]})
    assert {m["s"] for m in one["A"]}.isdisjoint(
        {m["s"] for m in GpmEvaluator({"A": f"SELECT ?s {{ ?s <{EX}p> ?o }}"},
                                      terms=True).evaluate(event)["A"]})


@pytest.mark.parametrize("events, fmt", [
    ([f"<{EX}s> <{EX}p> 1 .", f"<{EX}s> <{EX}p> <{EX}o"], None),
    ([f"<{EX}s> <{EX}p> 1 .", f"<s> <{EX}p> 1 ."], "ntriples"),
    ([f"<{EX}s> <{EX}p> \"1\"^^<{XSD}integer> ."], "rdfxml"),
    ([[(f"{EX}s", f"{EX}p", 1)], [(f"{EX}s", "_:p", 1)]], None),
    ([f"<{EX}s> <{EX}p> <http://ex/a b> ."], None),
    ([f"<{EX}s> <{EX}p> \"x\"@123 ."], None),
])
def test_bad_events_raise_what_the_store_path_raises(events: list[Any], fmt: str | None
                                                     ) -> None:
    fast, store = _both({"A": f"SELECT ?s {{ ?s <{EX}p> ?o }}"})
    with pytest.raises(RdfInputError) as want:
        store.evaluate_many(events, format=fmt)
    with pytest.raises(RdfInputError) as got:
        fast.evaluate_many(events, format=fmt)
    assert str(got.value) == str(want.value)


def test_json_ld_and_rdf_star_take_the_store_path() -> None:
    fast, store = _both({"A": "SELECT ?s ?o { ?s ?p ?o }"}, terms=True)
    jsonld = f'{{"@id": "{EX}s", "{EX}p": 1}}'
    star = f"<< <{EX}a> <{EX}b> <{EX}c> >> <{EX}p> 1 ."
    for event in (jsonld, star):
        try:
            want = store.evaluate_many([event])
        except RdfInputError:
            continue
        assert _blanks_out(fast.evaluate_many([event])) == _blanks_out(want)


def test_the_constant_slots_of_a_pattern() -> None:
    bgp = parse_bgp(f"SELECT ?s {{ ?s <{EX}p> <{EX}o> }}")
    assert bgp is not None
    assert bgp.patterns[0] == (Slot("s", "?s"), Slot(None, f"<{EX}p>"), Slot(None, f"<{EX}o>"))
    assert bgp.predicates == frozenset({f"<{EX}p>"})
    assert parse_bgp("SELECT ?s { ?s ?p ?o }").predicates is None  # type: ignore[union-attr]


# ---------------------------------------------------------------- a batch of text at once

_LINE_TERMS = st.lists(st.sampled_from([f"<{EX}s0>", f"<{EX}p0>", f"<{EX}p1>", '"a b"', '"x"',
                                        f'"7"^^<{XSD}integer>', "\x00", "\x01", "", "_:b",
                                        "<rel>"]),
                       min_size=1, max_size=4)
_SEPARATORS = st.sampled_from([" ", " ", " ", "  ", "\t"])
_ENDINGS = st.sampled_from([" .\n", " .\n", " .\n", ".\n", " . \n", " .\r\n", " .", "\n"])


@st.composite
def _text_events(draw: st.DrawFn) -> str:
    lines = []
    for terms in draw(st.lists(_LINE_TERMS, max_size=4)):
        lines.append(draw(_SEPARATORS).join(terms) + draw(_ENDINGS))
    return "".join(lines)


@settings(max_examples=200, deadline=None)
@given(st.lists(_text_events(), min_size=1, max_size=4), st.sampled_from([None, "ntriples"]))
def test_a_batch_of_text_read_at_once_equals_the_store(events: list[str], fmt: str | None
                                                       ) -> None:
    queries = {"A": f"SELECT * {{ ?s <{EX}p0> ?o }}", "B": "SELECT ?s ?p { ?s ?p ?o }"}
    fast, store = _both(queries, base_iri="http://base/")
    _agree(fast, store, events, format=fmt)


@pytest.mark.parametrize("events", [
    [f"<{EX}s> <{EX}p0> <{EX}a> <{EX}b> .\n<{EX}c> <{EX}d> .\n"],  # 4 terms, then 2
    [f"<{EX}s> <{EX}p0> \x00 .\n"],
    [f"<{EX}s> <{EX}p0> \"a b\" .\n<{EX}s> <{EX}p0> 1 .\n"],
    [f"<{EX}s> <{EX}p0> <{EX}o> .", "", f"<{EX}s> <{EX}p0> <{EX}o2> .\n\n"],
])
def test_lines_that_do_not_line_up_are_not_read_at_once(events: list[str]) -> None:
    fast, store = _both({"A": f"SELECT * {{ ?s <{EX}p0> ?o }}"})
    both = _answers(fast, store, events)
    if both is None:
        return
    answers, want = both
    assert answers == want


_LIST_OBJECTS = st.one_of(
    st.integers(-3, 3), st.booleans(), st.sampled_from([1.5, "a", 'say "hi"', "", "é\n",
                                                        f"<{EX}s0>", "_:b0", '"7"@EN',
                                                        f'"05"^^<{XSD}int>', f"{EX}s1"]))
_LIST_TRIPLES = st.lists(st.tuples(st.sampled_from([f"<{EX}s0>", f"{EX}s1", "_:b0"]),
                                   st.sampled_from([f"<{EX}p0>", f"{EX}p1"]), _LIST_OBJECTS),
                         max_size=5)


@settings(max_examples=150, deadline=None)
@given(st.lists(_LIST_TRIPLES, min_size=1, max_size=4), st.booleans(), st.booleans())
def test_a_batch_of_lists_read_at_once_equals_the_store(events: list[list[Any]], dicts: bool,
                                                        terms: bool) -> None:
    batch: list[Any] = [[{"s": s, "p": p, "o": o} if dicts else (s, p, o) for s, p, o in e]
                        for e in events]
    queries = {"A": f"SELECT * {{ ?s <{EX}p0> ?o }}", "B": "SELECT ?s ?o { ?s ?p ?o }"}
    fast, store = _both(queries, terms=terms)
    _agree(fast, store, batch)


@pytest.mark.parametrize("lex, datatype", [
    (lex, datatype) for datatype in ("decimal", "integer") for lex in (
        "99999999999999999.99999999999999999", "-0.00000000000000001", "12345678901234567",
        "-12345678901234567.5", "170141183460469231.7", "1.00000000000000001", "-0",
        "0.000000000000000001", "123456789012345678", "999999999999999999", "-0.0", "0.50",
        "9223372036854775807", "-9223372036854775808", "99999999999999999999", "+1")])
def test_numbers_at_the_edges_come_back_as_written(lex: str, datatype: str) -> None:
    text = _literal(lex, datatype)
    want = _parsed(text)
    assert want == text
    for event in (f"<{EX}s> <{EX}p> {text} .", f"<{EX}s> <{EX}p> {text} .\n"):
        got = TripleReader().read([event], ox.RdfFormat.N_TRIPLES, ["e"])
        assert got == [[(f"<{EX}s>", f"<{EX}p>", want)]]
        batch = TripleReader().read_batch([event, event], None, ["e", "f"])
        assert batch is not None
        assert list(zip(*batch, strict=True)) == [(0, f"<{EX}s>", f"<{EX}p>", want),
                                                  (1, f"<{EX}s>", f"<{EX}p>", want)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_text_events(), min_size=1, max_size=3), min_size=1, max_size=4),
       st.booleans())
def test_forgetting_what_was_learnt_changes_nothing(batches: list[list[str]], lists: bool
                                                    ) -> None:
    queries = {"A": f"SELECT * {{ ?s <{EX}p0> ?o }}", "B": "SELECT ?s ?p ?o { ?s ?p ?o }"}
    fast, store = _both(queries, base_iri="http://base/", terms=True)
    limit = triples_module._CACHE_LIMIT
    triples_module._CACHE_LIMIT = 2  # forget at almost every batch
    try:
        for events in batches:
            batch: list[Any] = events
            if lists:  # the same triples as (s, p, o) lists when they are N-Triples lines
                try:
                    batch = [[tuple(line[:-2].split(" ", 2)) for line in e.splitlines()]
                             for e in events]
                except ValueError:
                    batch = events
            for again in (batch, batch):  # once learning, once from what was learnt
                try:
                    want = store.evaluate_many(again)
                except RdfInputError:
                    with pytest.raises(RdfInputError):
                        fast.evaluate_many(again)
                    continue
                assert _blanks_out(fast.evaluate_many(again)) == _blanks_out(want)
    finally:
        triples_module._CACHE_LIMIT = limit


def test_forgetting_midway_keeps_what_a_batch_already_read() -> None:
    fast, store = _both({"A": "SELECT ?s ?o { ?s ?p ?o }"}, base_iri="http://base/", terms=True)
    limit = triples_module._CACHE_LIMIT
    triples_module._CACHE_LIMIT = 2
    try:
        for k in range(3):  # texts learnt (a relative IRI, "05"), then met beside new ones
            batch = [f'<rel> <{EX}p0> "0{k}"^^<{XSD}int> .\n', f"<{EX}n{k}> <{EX}p0> <rel> .\n"]
            assert fast.evaluate_many(batch) == store.evaluate_many(batch)
            lists = [[(f"<{EX}s>", f"<{EX}p0>", f'"05"^^<{XSD}int>'),
                      (f"<{EX}m{k}>", f"<{EX}p0>", k)]]
            assert fast.evaluate_many(lists) == store.evaluate_many(lists)
    finally:
        triples_module._CACHE_LIMIT = limit


# ---------------------------------------------------------------- shortcuts of the batch reader

_PIECES = ['"', "a", " ", f"^^<{XSD}integer>", "^^<http://ex/t>", "@en", "@en-GB", "\n",
           "\\", "\\n", "\x00", "\r", '""', "<http://ex/o>", "_:b"]
_TAILS = {"", f"^^<{XSD}integer>", "^^<http://ex/t>", "@en"}
_PLAIN = re.compile(r'"[^"\\\n\r\x00]*"(?:\^\^<http://www\.w3\.org/2001/XMLSchema#integer>'
                    r'|\^\^<http://ex/t>|@en|)\Z')


@settings(max_examples=2000)
@given(st.lists(st.lists(st.sampled_from(_PIECES), max_size=6).map("".join), max_size=5))
def test_literals_checked_at_once_are_exactly_the_plain_ones(texts: list[str]) -> None:
    # the check of the objects no GPM reads, on all of them at once: never yes wrongly
    # (and, for these pieces, never no wrongly either)
    assert triples_module._plain_literals(texts, _TAILS) == all(_PLAIN.match(t) for t in texts)


_OTHER_OBJECTS = ['"plain"', '"x"@en', '"x"@en-GB', f'"7"^^<{XSD}integer>',
                  f'"07"^^<{XSD}integer>', f'"abc"^^<{XSD}integer>', '"esc\\"aped"',
                  '"tab\\t"', "<http://ex/o>", "_:b", '"new"^^<http://ex/t>', '"a b"',
                  f'"1.50"^^<{XSD}decimal>', '"\\u00e9"', '"bad', "<bad iri>", '"x"@1']


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from([f"<{EX}s0>", f"<{EX}s1>"]),
                                   st.sampled_from([f"<{EX}p0>", f"<{EX}p1>", f"<{EX}p2>"]),
                                   st.sampled_from(_OTHER_OBJECTS)), max_size=4),
                min_size=1, max_size=5), st.booleans(), st.booleans())
def test_triples_no_gpm_reads_are_checked_as_the_store_does(
        events: list[list[tuple[str, str, str]]], distinct: bool, terms: bool) -> None:
    texts = ["".join(f"{s} {p} {o} .\n" for s, p, o in e) for e in events]
    queries = {"A": f"SELECT {'DISTINCT' if distinct else ''} ?s ?o {{ ?s <{EX}p0> ?o }}",
               "B": f"SELECT DISTINCT ?s {{ ?s <{EX}p0> ?o . ?s <{EX}p1> ?w }}"}
    fast, store = _both(queries, terms=terms)
    _agree(fast, store, texts)


@pytest.mark.parametrize("events", [
    [f"<{EX}s> <{EX}p0> <{EX}o> .\n<http://ex/a", f"b> <{EX}p0> <{EX}o> .\n"],  # no newline
    [f"<{EX}s> <{EX}p0> <{EX}o> .", f"<{EX}s> <{EX}p0> <{EX}o2> ."],  # neither ends a line
    ["", f"<{EX}s> <{EX}p0> <{EX}o> .\n", "", ""],  # empty events
    [f"<{EX}s> <{EX}p0> <{EX}o> .\nabc", f"<{EX}s> <{EX}p0> <{EX}o> .\n"],
    [f"<{EX}s> <{EX}p0> <{EX}o> . <{EX}s> <{EX}p0> <{EX}o2> .\n"],  # two on a line
    [f"<{EX}s> <{EX}p0>\n<{EX}o> .\n", f"<{EX}s> <{EX}p0> <{EX}o> . <{EX}t> <{EX}p0> 1 .\n"],
    [f"<{EX}s> <{EX}p0> <{EX}o> .\n\n", f"# a comment\n<{EX}s> <{EX}p0> 2 .\n"],
    [f"<{EX}s>  <{EX}p0> <{EX}o> .\n", f"<{EX}s>\t<{EX}p0> <{EX}o> .\n"],  # odd spacing
    [f"<{EX}s> <{EX}p0> \"a\x00b\" .\n"],
    [f"<{EX}s> <{EX}p0> \"a\x01b\" .\n", f"<{EX}s> <{EX}p1> \"\x01\" .\n"],  # SOH
    [f"<{EX}s> <{EX}p0> 1 .\n\x01 \x01 \x01 .\n<{EX}s> <{EX}p0> 2 .\n"],  # an event's end
    [f"<{EX}s> \x01 <{EX}o> .\n", f"\x01 <{EX}p0> <{EX}o> .\n"],
    [f"<{EX}s> <{EX}p0> <{EX}o> .\n\x01 <{EX}p1> <{EX}o> .\n"],  # a subject no GPM reads
    [f"<{EX}s> <{EX}p0> <{EX}o> .\n<{EX}s> <{EX}p1> \x01 .\n"],
    [f"<{EX}s> <{EX}p0> <{EX}o> .", f"\x01 \x01 \x01 .\n<{EX}t> <{EX}p0> <{EX}o> .\n"],
    [],
])
def test_text_the_batch_reader_must_not_take_as_it_is(events: list[str]) -> None:
    for fmt in (None, "ntriples"):
        fast, store = _both({"A": f"SELECT * {{ ?s <{EX}p0> ?o }}"}, terms=True)
        _agree(fast, store, events, format=fmt)


def test_several_triples_of_a_predicate_in_an_event_join_each_with_each() -> None:
    event = (f'<{EX}goog> <{EX}price> "1.5"^^<{XSD}decimal> .\n'
             f'<{EX}goog> <{EX}price> "2.5"^^<{XSD}decimal> .\n'
             f'<{EX}goog> <{EX}volume> "3"^^<{XSD}integer> .\n'
             f'<{EX}goog> <{EX}volume> "4"^^<{XSD}integer> .\n'
             f'<{EX}msft> <{EX}volume> "5"^^<{XSD}integer> .\n'
             f'<{EX}goog> <{EX}price> "1.5"^^<{XSD}decimal> .\n')  # a duplicate
    other = f'<{EX}msft> <{EX}price> "9"^^<{XSD}decimal> .\n'
    for distinct in ("DISTINCT", ""):
        query = (f"SELECT {distinct} ?c ?p ?v WHERE {{ ?c <{EX}price> ?p . "
                 f"?c <{EX}volume> ?v . }}")
        fast, store = _both({"A": query, "B": f"SELECT ?c {{ ?c <{EX}volume> ?v }}"},
                            terms=True)
        batch = [event, other, event + other, ""]
        answers = fast.evaluate_many(batch)
        assert answers == store.evaluate_many(batch)
        assert len(answers[0]["A"]) == 4 and len(answers[2]["A"]) == 5


def test_an_evaluator_without_gpms_answers_each_event() -> None:
    fast, store = GpmEvaluator({}, fast=True), GpmEvaluator({}, fast=False)
    events = [f"<{EX}s> <{EX}p> 1 .\n", f"<{EX}s> <{EX}p> 2 .\n"]
    assert fast.evaluate_many(events) == store.evaluate_many(events) == [{}, {}]
