"""Exact RDF terms through pyoxigraph's store (ceql.rdf.exact, issue 27.4): which literals get
a stand-in, the text check that lets the store load text itself, and the query rewrites."""

from __future__ import annotations

import pyoxigraph as ox
from hypothesis import given, settings
from hypothesis import strategies as st

from ceql.rdf.exact import (
    ORIGINAL_FN,
    STAND_IN,
    ExactTerms,
    constants_as_stand_ins,
    filters_on_originals,
)

EX = "http://ex/"
XSD = "http://www.w3.org/2001/XMLSchema#"
F = f"<{ORIGINAL_FN}>"

_LEX = st.sampled_from(["5", "05", "+5", "-0", "0", "1.0", "1.5", "1.50", ".5", "1e0", "1E3",
                        "true", "1", "x", "2020-01-01", "2020-01-01T00:00:00.0Z", "a\\\"5",
                        "123456789012345678901", "-12"])
_TYPES = st.sampled_from(["integer", "int", "decimal", "double", "boolean", "string", "date",
                          "dateTime", "unsignedByte"])
_OBJECT = st.one_of(
    st.builds(lambda lex, t: f'"{lex}"^^<{XSD}{t}>', _LEX, _TYPES),
    st.builds(lambda lex, t: f'"{lex}"^^xsd:{t}', _LEX, _TYPES),
    _LEX.filter(lambda lex: '"' not in lex and lex not in ("x",) and "-01" not in lex),
    st.builds(lambda lex: f'"{lex}"', _LEX), st.just('"x"@EN'), st.just(f"<{EX}o5>"))


@settings(max_examples=300, deadline=None)
@given(st.lists(_OBJECT, min_size=1, max_size=4), st.booleans())
def test_text_taken_as_kept_is_kept_by_the_store(objects: list[str], prefixed: bool) -> None:
    """keeps_text may say no for text the store keeps, never yes for text it would change."""
    head = f"@prefix xsd: <{XSD}> .\n" if prefixed or any("xsd:" in o for o in objects) else ""
    text = head + "".join(f"<{EX}s{i}> <{EX}p> {o} .\n" for i, o in enumerate(objects))
    try:
        parsed = [str(q.object) for q in ox.parse(text, ox.RdfFormat.TURTLE)]
    except SyntaxError:
        return
    store = ox.Store()
    store.load(text, ox.RdfFormat.TURTLE)
    stored = {q.subject.value: str(q.object) for q in store  # type: ignore[union-attr]
              if isinstance(q.subject, ox.NamedNode)}
    kept = [stored.get(f"{EX}s{i}") for i in range(len(objects))]
    exact = ExactTerms()
    if exact.keeps_text(text):
        assert kept == parsed
    quads = list(ox.parse(text, ox.RdfFormat.TURTLE))
    assert exact.changes(quads) == (kept != parsed)


def test_stand_ins_are_terms_of_their_own_and_give_the_original_back() -> None:
    exact = ExactTerms()
    int05 = ox.Literal("05", datatype=ox.NamedNode(XSD + "integer"))
    assert exact.stand_in(ox.Literal("5", datatype=ox.NamedNode(XSD + "integer"))) is None
    assert exact.stand_in(ox.Literal("x")) is None
    stand_in = exact.stand_in(int05)
    assert stand_in == ox.Literal("05", datatype=ox.NamedNode(STAND_IN + XSD + "integer"))
    assert exact.original(stand_in) == int05
    assert exact.original(int05) == int05


def test_filters_read_the_originals() -> None:
    q = ("SELECT ?x WHERE { ?s ?p ?x . FILTER (?x > 3 && BOUND(?y)) FILTER regex(STR(?x), "
         '"5") FILTER NOT EXISTS { ?x ?q ?z } FILTER (EXISTS { ?x ?q ?z } || ?z = 1) } '
         "ORDER BY ?x")
    assert filters_on_originals(q) == (
        f"SELECT ?x WHERE {{ ?s ?p ?x . FILTER ({F}(?x) > 3 && BOUND(?y)) FILTER regex(STR("
        f'{F}(?x)), "5") FILTER NOT EXISTS {{ ?x ?q ?z }} FILTER (EXISTS {{ ?x ?q ?z }} || '
        f"{F}(?z) = 1) }} ORDER BY ?x")


def test_only_pattern_constants_become_stand_ins() -> None:
    exact = ExactTerms()
    q = (f'PREFIX x: <{XSD}> SELECT ?s WHERE {{ ?s <{EX}p> "05"^^x:integer , 5, -07, 1.0 ; '
         f'<{EX}q> "5"^^<{XSD}int>, "s", "05"@en . FILTER (?s != 05) BIND (05 AS ?b) }} LIMIT 05')
    assert constants_as_stand_ins(q, exact, None, None) == (
        f'PREFIX x: <{XSD}> SELECT ?s WHERE {{ ?s <{EX}p> "05"^^<{STAND_IN}{XSD}integer> , 5, '
        f'"-07"^^<{STAND_IN}{XSD}integer>, "1.0"^^<{STAND_IN}{XSD}decimal> ; <{EX}q> '
        f'"5"^^<{STAND_IN}{XSD}int>, "s", "05"@en . FILTER (?s != 05) BIND (05 AS ?b) }} '
        "LIMIT 05")
