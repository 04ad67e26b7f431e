"""The SPAseq front end (docs/SPASEQ.md): the paper's queries parse (texts and their repairs in
tests/data/spaseq/), and as printed are refused for what is not print damage; the syntax tree;
to_sparql round trips (through this parser and through pyoxigraph's SPARQL engine); exact
error messages with carets. Pure Python, no Spark."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pyoxigraph as ox
import pytest

from ceql.errors import (
    CeqlSyntaxError,
    CeqlTypeError,
    CeqlValidationError,
    UnknownStreamError,
    UnknownVariableError,
)
from ceql.frontends import spaseq
from ceql.frontends.spaseq import (
    RDF_TYPE,
    BinaryExpr,
    BlankNode,
    Builtin,
    Conj,
    Disj,
    DuplicateNameError,
    FilterPattern,
    FilterPlacementError,
    GpmRef,
    GraphPattern,
    GroupPattern,
    InExpr,
    Iri,
    IriCall,
    Literal,
    OptionalPattern,
    SeqElement,
    SpaseqQuery,
    TriplePattern,
    UnaryExpr,
    UnionPattern,
    UnknownGpmError,
    UnknownPrefixError,
    UnusedGpmError,
    Var,
    WindowError,
    expr_to_sparql,
    parse,
    pattern_to_sparql,
    to_sparql,
)

DATA = Path(__file__).parent / "data" / "spaseq"
ROOT = Path(__file__).resolve().parents[1]
EX = "http://example/"
XSD = "http://www.w3.org/2001/XMLSchema#"
QUERIES = sorted(p.name for p in DATA.glob("*.rq"))


def _text(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def _shape(q: SpaseqQuery) -> str:
    """SEQ written back compactly: ``A;B+,C``."""
    def group(g: object) -> str:
        if isinstance(g, GpmRef):
            return g.name
        assert isinstance(g, Conj | Disj)
        sep = "&" if isinstance(g, Conj) else "|"
        return "(" + sep.join(group(x) for x in g.operands) + ")"
    parts = [group(q.sequence.elements[0].group) + "+" * q.sequence.elements[0].kleene]
    for op, el in zip(q.sequence.operators, q.sequence.elements[1:], strict=True):
        parts.append(op + group(el.group) + "+" * el.kleene)
    return "".join(parts)


def _cross(q: SpaseqQuery) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(f.gpm, expr_to_sparql(f.expr), f.foreign) for f in q.cross_filters]


# ---------------------------------------------------------------- the paper's queries

def test_every_paper_query_is_kept() -> None:
    assert QUERIES == ["q1_smart_grid.rq", "q2_credit_card.rq", "q3_head_and_shoulders.rq",
                       "q4_v_shape.rq", "q5_traffic.rq", "q6_trajectory.rq"]


def test_query1_smart_grid() -> None:
    q = parse(_text("q1_smart_grid.rq"))
    assert _shape(q) == "A;B+,C"
    assert q.window.seconds == 3600
    assert [(s.name, s.iri) for s in q.streams] == [
        ("S1", "http://smartgrid.org/streams/power"),
        ("S2", "http://smartgrid.org/streams/weather"),
        ("S3", "http://smartgrid.org/streams/storage")]
    assert [(g.name, g.stream) for g in q.gpms] == [("A", "S1"), ("B", "S2"), ("C", "S3")]
    assert q.select == ("house", "city", "oname", "fr1", "fr2")
    assert q.prefixes == (("", EX),)
    assert q.gpm("A").variables == ("house", "l", "pw", "fr1", "city", "house2", "oname")
    assert q.gpm("B").variables == ("wther", "l", "lt", "sp")
    assert _cross(q) == [("C", "(?fr2 < ?fr1)", ("fr1",))]
    assert q.kleene_gpms == ("B",)
    assert q.iteration_local("B") == ("wther", "lt", "sp")
    assert q.iteration_local("A") == ()
    assert "l" in q.shared_variables and "sp" not in q.shared_variables
    # GPM C keeps its triples; its only FILTER reads A's ?fr1, so it leaves the pattern
    assert to_sparql(q.gpm("C")) == (
        "SELECT DISTINCT ?storage ?l ?fr2\n"
        "WHERE {\n"
        "  ?storage <http://example/loc> ?l .\n"
        "  ?storage <http://example/pow> <http://example/Pw> .\n"
        "  <http://example/Pw> <http://example/source> \"solar\" .\n"
        "  <http://example/Pw> <http://example/fare> ?fr2 .\n"
        "}")
    assert to_sparql(q.gpm("A")) == (
        "SELECT DISTINCT ?house ?l ?pw ?fr1 ?city ?house2 ?oname\n"
        "WHERE {\n"
        "  ?house <http://example/loc> ?l .\n"
        "  ?house <http://example/pow> ?pw .\n"
        "  ?pw <http://example/source> \"fuel\" .\n"
        "  ?pw <http://example/fare> ?fr1 .\n"
        "  FILTER ((?fr1 > 20))\n"
        "  GRAPH <http://smartgrid.org/db> {\n"
        "    ?house <http://example/locatedIn> ?city .\n"
        "    ?house <http://example/nearBy> ?house2 .\n"
        "    ?house <http://example/ownerNAme> ?oname .\n"
        "  }\n"
        "}")


def test_query2_credit_card() -> None:
    q = parse(_text("q2_credit_card.rq"))
    assert _shape(q) == "A,B+"
    assert q.window.seconds == 1800
    assert _cross(q) == [("B", "((?amount2 * 10) >= ?amount1)", ("amount1",))]
    assert q.iteration_local("B") == ("amount2", "id", "name", "address")
    graph = q.gpm("B").pattern.elements[-1]
    assert isinstance(graph, GraphPattern) and graph.name == Iri("http://creditcard.org/db")


def test_query3_head_and_shoulders() -> None:
    q = parse(_text("q3_head_and_shoulders.rq"))
    assert _shape(q) == "A,B,C,D,E,F,G"
    assert len(q.select or ()) == 15
    # FILTER (a && b) reading earlier GPMs: one cross-GPM condition per conjunct
    assert _cross(q) == [
        ("B", "(?p2 > ?p1)", ("p1",)),
        ("C", "(?p3 < ?p2)", ("p2",)), ("C", "(?p3 > ?p1)", ("p1",)),
        ("D", "(?p4 > ?p2)", ("p2",)),
        ("E", "(?p5 < ?p4)", ("p4",)), ("E", "(?p5 > ?p3)", ("p3",)),
        ("F", "(?p6 > ?p5)", ("p5",)), ("F", "(?p6 < ?p4)", ("p4",)),
        ("G", "(?p7 < ?p6)", ("p6",)), ("G", "(?p7 > ?p5)", ("p5",)),
    ]
    assert all(not any(isinstance(e, FilterPattern) for e in g.pattern.elements)
               for g in q.gpms)


def test_query4_v_shape() -> None:
    q = parse(_text("q4_v_shape.rq"))
    assert _shape(q) == "A,B,C"
    assert _cross(q) == [("B", "(?p2 > ?p1)", ("p1",)), ("C", "(?p3 < ?p2)", ("p2",))]


def test_query5_traffic() -> None:
    q = parse(_text("q5_traffic.rq"))
    assert _shape(q) == "A;(B&C)"
    assert q.prefixes == (("ssn", "http://purl.oclc.org/NET/ssnx/ssn#"),
                          ("sao", "http://purl.oclc.org/NET/sao/ssn#"))
    assert q.gpm("A").pattern.elements[0] == TriplePattern(
        Var("traffic"), Iri("http://purl.oclc.org/NET/ssnx/ssn#observedProperty"), Var("p1"))
    assert q.streams[2].iri == ("http://www.insight-centre.org/dataset/SampleEventService"
                                "#AarhusTrafficData195446")
    # the FILTER of A is local, those of B and C read A's ?v1
    assert [str(expr_to_sparql(e.expr)) for e in q.gpm("A").pattern.elements
            if isinstance(e, FilterPattern)] == ["(?v1 > 3)"]
    assert _cross(q) == [("B", "(?v2 >= ?v1)", ("v1",)), ("C", "(?v3 >= ?v1)", ("v1",))]


def test_query6_trajectory() -> None:
    q = parse(_text("q6_trajectory.rq"))
    assert _shape(q) == "A,B+,C"
    assert q.select == ("vessel", "n", "cname")
    # "?vessel pred:speed 0." is the integer 0 and a '.'
    assert q.gpm("C").pattern.elements[0] == TriplePattern(
        Var("vessel"), Iri(EX + "speed"), Literal("0", XSD + "integer"))
    assert q.gpm("C").pattern.elements[1].object == Literal("fishingarea")  # type: ignore[union-attr]
    assert q.iteration_local("B") == ("s2", "l")
    assert "dir1" in q.shared_variables


def _refused(text: str) -> CeqlValidationError | CeqlSyntaxError:
    try:
        parse(text)
    except (CeqlValidationError, CeqlSyntaxError) as exc:
        return exc
    raise AssertionError("the query was accepted")


def test_paper_queries_as_printed_are_refused_for_what_is_not_print_damage() -> None:
    """The repairs listed in each file's header that are not print damage: undo each one and
    the message says what is wrong."""
    q2 = _text("q2_credit_card.rq")
    err = _refused(q2.replace("SELECT ?card ?amount1 ?amount2 ?name ?address",
                              "SELECT ?vessel ?n ?cname"))
    assert isinstance(err, UnknownVariableError)
    assert str(err) == (
        "SELECT ?vessel: no GPM binds ?vessel in a triple pattern; bind it in a GPM or remove "
        "it from SELECT (line 12, column 8)\n"
        "SELECT ?vessel ?n ?cname\n"
        "       ^^^^^^^")
    err = _refused(q2.replace("FILTER (?amount1 > 0)", "FILTER (?s1 > 0)"))
    assert isinstance(err, UnknownVariableError)
    assert str(err) == (
        "FILTER in GPM A uses ?s1, which no GPM binds in a triple pattern, so the condition "
        "could never hold: bind ?s1 in a GPM or correct the name (line 21, column 13)\n"
        "    FILTER (?s1 > 0)\n"
        "            ^^^")
    err = _refused(q2.replace("PREFIX : <http://creditcard.org/>\n", ""))
    assert isinstance(err, UnknownPrefixError)
    assert str(err) == (
        "Prefix ':' is not declared (SPAseq, like SPARQL, has no default prefix): add "
        "PREFIX : <…> before SELECT (line 27, column 11)\n"
        "      ?id :cardHolder ?name.\n"
        "          ^")
    err = _refused(_text("q4_v_shape.rq").replace("SEQ (A, B, C)", "SEQ (A, B, C,)"))
    assert isinstance(err, CeqlSyntaxError)
    assert str(err) == (
        "Expected a GPM name or '(' after ',', found ')': SEQ cannot end with ',' "
        "(line 10, column 16)\n"
        "  SEQ (A, B, C,)\n"
        "               ^")
    err = _refused(_text("q5_traffic.rq").replace("SELECT ?traffic ?v1 ?v2 ?v3",
                                                  "SELECT ?vessel ?n ?cname"))
    assert isinstance(err, UnknownVariableError)
    err = _refused(_text("q6_trajectory.rq").replace("PREFIX : <http://harbour.org/>\n", ""))
    assert isinstance(err, UnknownPrefixError) and (err.line, err.column) == (29, 15)


# ---------------------------------------------------------------- to_sparql round trips

def _gpms() -> list[tuple[str, spaseq.Gpm]]:
    return [(name, g) for name in QUERIES for g in parse(_text(name)).gpms]


def _reparse(gpm: spaseq.Gpm) -> GroupPattern:
    """The WHERE group of to_sparql(gpm), read back as a GPM by this parser."""
    where = to_sparql(gpm, strict=False).split("\nWHERE ", 1)[1]
    text = (f"SELECT * WITHIN 1 SECOND FROM STREAM S <http://s/> "
            f"WHERE {{ SEQ(X) DEFINE GPM X ON S {where} }}")
    return parse(text).gpms[0].pattern


@pytest.mark.parametrize(("query", "gpm"), _gpms(), ids=lambda x: getattr(x, "name", x))
def test_to_sparql_round_trips(query: str, gpm: spaseq.Gpm) -> None:
    assert _reparse(gpm) == gpm.pattern
    # SPARQL's own parser accepts it, and the solutions are over exactly the GPM's variables
    result = ox.Store().query(to_sparql(gpm))
    assert isinstance(result, ox.QuerySolutions)
    assert tuple(v.value for v in result.variables) == gpm.variables
    assert list(result) == []


def test_to_sparql_evaluates_the_gpm_on_one_event() -> None:
    """Worked example 5 of docs/SPASEQ.md: the event at 10 with the static graph."""
    q = parse(f"""PREFIX : <{EX}>
        SELECT * WITHIN 10 SECONDS FROM STREAM S1 <{EX}power>
        WHERE {{ SEQ(A)
          DEFINE GPM A ON S1 {{ ?h :pow ?p . ?h :loc ?l .
            GRAPH <{EX}kb> {{ ?h :owner ?n . ?h :address ?a }} }} }}""")
    store = ox.Store()
    store.load(f"@prefix : <{EX}> . :H1 :pow :Pw1 . :H1 :loc :L1 .".encode(),
               format=ox.RdfFormat.TURTLE)
    store.load(f"@prefix : <{EX}> . :H1 :owner :john . :H1 :address :paris . :H2 :owner :smith "
               ". :H2 :address :lyon .".encode(), format=ox.RdfFormat.TURTLE,
               to_graph=ox.NamedNode(EX + "kb"))
    result = store.query(to_sparql(q.gpms[0]))
    assert isinstance(result, ox.QuerySolutions)
    rows = [{v.value: s[v].value for v in result.variables} for s in result]
    assert rows == [{"h": EX + "H1", "p": EX + "Pw1", "l": EX + "L1", "n": EX + "john",
                     "a": EX + "paris"}]


def test_to_sparql_keeps_local_conjuncts_and_moves_cross_ones() -> None:
    q = parse(f"""PREFIX : <{EX}>
        SELECT ?x WITHIN 1 MINUTE 30 SECONDS FROM STREAM S1 <{EX}s>
        WHERE {{ SEQ(A , B)
          DEFINE GPM A ON S1 {{ ?a :v ?x }}
          DEFINE GPM B ON S1 {{ ?b :v ?y ; :w ?z .
            FILTER (?y > 1 && ?y < ?x && !(?z = "n"@en) || false)
            FILTER(?y > ?x && ?z != 2) }} }}""")
    assert q.window.seconds == 90
    b = q.gpm("B")
    assert to_sparql(b, strict=False) == (
        "SELECT DISTINCT ?b ?y ?z\nWHERE {\n"
        f"  ?b <{EX}v> ?y .\n  ?b <{EX}w> ?z .\n"
        "  FILTER ((?z != 2))\n}")
    # as run: SPARQL 1.1's != (a literal that is not a number is a type error against 2)
    assert to_sparql(b).endswith("  FILTER (IF((!isLiteral(?z) || isNumeric(?z)), (?z != 2), "
                                 "(1 / 0)))\n}")
    assert [expr_to_sparql(f.expr, strict=False) for f in b.cross_filters] == [
        '((((?y > 1) && (?y < ?x)) && !((?z = "n"@en))) || false)', "(?y > ?x)"]
    assert [f.variables for f in b.cross_filters] == [("y", "x", "z"), ("y", "x")]


# ---------------------------------------------------------------- the syntax tree

_HEAD = f"PREFIX : <{EX}>\nSELECT * WITHIN 5 SECONDS\nFROM STREAM S1 <{EX}s1>\n"


def _one_gpm(body: str) -> spaseq.Gpm:
    return parse(f"{_HEAD}WHERE {{ SEQ(A) DEFINE GPM A ON S1 {{ {body} }} }}").gpms[0]


def _seq(seq: str, names: str) -> SpaseqQuery:
    defs = " ".join(f"DEFINE GPM {n} ON S1 {{ ?{n.lower()} :p ?o{n} }}" for n in names)
    return parse(f"{_HEAD}WHERE {{ SEQ({seq}) {defs} }}")


def test_sequence_precedence() -> None:
    q = _seq("A ; B+ , C & D | E : F", "ABCDEF")
    assert q.sequence.operators == (";", ",", ":")
    assert q.sequence.elements == (
        SeqElement(GpmRef("A")), SeqElement(GpmRef("B"), kleene=True),
        SeqElement(Disj((Conj((GpmRef("C"), GpmRef("D"))), GpmRef("E")))),
        SeqElement(GpmRef("F")))
    assert _shape(_seq("(A | B)+ ; C & (D | E)", "ABCDE")) == "(A|B)+;(C&(D|E))"
    # in SEQ, a colon is the operator even without spaces (no prefixed names there)
    assert _shape(_seq("A:B", "AB")) == _shape(_seq("A : B", "AB")) == "A:B"
    assert _shape(_seq("A:B+;C,D", "ABCD")) == "A:B+;C,D"


def test_keywords_are_case_insensitive_names_are_not_and_comments_are_ignored() -> None:
    q = parse(f"""prefix ex: <{EX}>   # the vocabulary
        select ?x within 2 hours from stream s1 <{EX}s>
        where {{ seq(a) define gpm a on s1 {{ ?x a ex:T ; ex:p "v" filter (regex(?x, "#")) }} }}""")
    assert q.window.seconds == 7200 and q.streams[0].name == "s1" and q.gpms[0].name == "a"
    assert q.gpms[0].pattern.elements[0] == TriplePattern(Var("x"), Iri(RDF_TYPE), Iri(EX + "T"))
    err = _refused(f"""{_HEAD}WHERE {{ SEQ(a) DEFINE GPM A ON S1 {{ ?x :p ?y }} }}""")
    assert isinstance(err, UnknownGpmError)


def test_terms() -> None:
    g = _one_gpm(r"""?s :p "a\"b\n", 'c', '''d
        e''', "x"@en-GB, "5"^^:int, 5, -5, 5.5, +1e3, true, _:b, [], <rel>, :a\.b ;
        :q [ :r ?o1 ; :t :u ] .
        [ :v ?o2 ] :w ?o3 .""")
    objs = [e.object for e in g.pattern.elements if isinstance(e, TriplePattern)]
    assert objs[:14] == [
        Literal('a"b\n'), Literal("c"), Literal("d\n        e"), Literal("x", lang="en-GB"),
        Literal("5", EX + "int"), Literal("5", XSD + "integer"),
        Literal("-5", XSD + "integer"), Literal("5.5", XSD + "decimal"),
        Literal("+1e3", XSD + "double"), Literal("true", XSD + "boolean"), BlankNode("b"),
        BlankNode("genid.1"), Iri("rel"), Iri(EX + "a.b")]
    # [ :r ?o1 ; :t :u ] is a fresh node: its triples, then the one that points at it
    assert g.pattern.elements[14:] == (
        TriplePattern(BlankNode("genid.2"), Iri(EX + "r"), Var("o1")),
        TriplePattern(BlankNode("genid.2"), Iri(EX + "t"), Iri(EX + "u")),
        TriplePattern(Var("s"), Iri(EX + "q"), BlankNode("genid.2")),
        TriplePattern(BlankNode("genid.3"), Iri(EX + "v"), Var("o2")),
        TriplePattern(BlankNode("genid.3"), Iri(EX + "w"), Var("o3")))
    assert g.variables == ("s", "o1", "o2", "o3")
    assert _reparse(g) == g.pattern


def test_base_resolves_relative_iris() -> None:
    q = parse("""BASE <http://b.org/x/> PREFIX p: <ns#>
        SELECT * WITHIN 1 SECOND FROM STREAM S <s1>
        WHERE { SEQ(A) DEFINE GPM A ON S { ?a <y> p:z } }""")
    assert q.base == "http://b.org/x/" and q.streams[0].iri == "http://b.org/x/s1"
    assert q.gpms[0].pattern.elements[0] == TriplePattern(
        Var("a"), Iri("http://b.org/x/y"), Iri("http://b.org/x/ns#z"))


def test_group_patterns() -> None:
    g = _one_gpm("""?s :p ?o . OPTIONAL { ?o :q ?r FILTER (BOUND(?r)) }
        { ?s :a ?x } UNION { ?s :b ?x } UNION { ?s :c ?x }
        GRAPH ?g { ?s :d ?y } { ?s :e ?z . }""")
    el = g.pattern.elements
    assert isinstance(el[1], OptionalPattern)
    assert el[1].group.elements[1] == FilterPattern(Builtin("BOUND", (Var("r"),)))
    assert isinstance(el[2], UnionPattern) and len(el[2].groups) == 3
    assert isinstance(el[3], GraphPattern) and el[3].name == Var("g")
    assert isinstance(el[4], GroupPattern)
    assert g.variables == ("s", "o", "r", "x", "g", "y", "z")
    assert _reparse(g) == g.pattern
    assert pattern_to_sparql(GroupPattern(())) == "{ }"


def test_expressions() -> None:
    g = parse(_HEAD.replace("PREFIX", f"PREFIX xsd: <{XSD}>\nPREFIX") + """WHERE { SEQ(A)
      DEFINE GPM A ON S1 { ?s :p ?o ; :q ?n .
        FILTER (!isIRI(?o) || -?n * 2 + 1 >= ABS(?n) / 3 && ?n NOT IN (1, 2.0)
                && IF(STRSTARTS(LCASE(STR(?o)), "ab"), ?n, 0) != xsd:integer(?n)
                && LANG(?o) = "" && HOURS(?n) < 3 && ?o IN ()) } }""").gpms[0]
    f = g.pattern.elements[2]
    assert isinstance(f, FilterPattern) and isinstance(f.expr, BinaryExpr)
    assert f.expr.op == "||"
    assert isinstance(f.expr.left, UnaryExpr) and f.expr.left.op == "!"
    assert f.expr.left.operand == Builtin("ISIRI", (Var("o"),))
    right = f.expr.right
    assert isinstance(right, BinaryExpr) and right.op == "&&"
    assert isinstance(right.right, InExpr) and right.right.values == ()
    assert expr_to_sparql(f.expr, strict=False) == (
        "(!(ISIRI(?o)) || ((((((((-(?n) * 2) + 1) >= (ABS(?n) / 3)) && "
        "(?n NOT IN (1, 2.0))) && (IF(STRSTARTS(LCASE(STR(?o)), \"ab\"), ?n, 0) != "
        "<http://www.w3.org/2001/XMLSchema#integer>(?n))) && (LANG(?o) = \"\")) && "
        "(HOURS(?n) < 3)) && (?o IN ())))")
    assert isinstance(IriCall(Iri(XSD + "integer"), (Var("n"),)), IriCall)
    assert _reparse(g) == g.pattern
    result = ox.Store().query(to_sparql(g))
    assert isinstance(result, ox.QuerySolutions) and list(result) == []


def test_non_string_query() -> None:
    with pytest.raises(CeqlTypeError, match=r"^A SPAseq query must be a string, not int\.$"):
        parse(3)  # type: ignore[arg-type]


def test_grammar_ships_as_package_data() -> None:
    assert spaseq.grammar_text().startswith("// SPAseq")
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"frontends/spaseq/grammar/*.lark"' in pyproject


# ---------------------------------------------------------------- the worked examples' queries

def _example(seq: str, select: str = "*", window: str = "15 SECONDS", extra: str = "") -> str:
    return f"""PREFIX : <{EX}>
SELECT {select} WITHIN {window}
FROM STREAM S1 <{EX}power>
FROM STREAM S2 <{EX}weather>
WHERE {{
  SEQ ({seq})
  DEFINE GPM A ON S1 {{ ?h :pow ?p . ?h :loc ?l . {extra} }}
  DEFINE GPM B ON S2 {{ ?w :value ?v . ?w :loc ?l . }}
}}"""


@pytest.mark.parametrize("seq", ["A & B", "A | B", "A : B", "A ; B", "A , B", "A ; B+",
                                 "A , B+", "A : B+"])
def test_worked_examples_parse(seq: str) -> None:
    q = parse(_example(seq))
    assert q.variables == ("h", "p", "l", "w", "v")
    kleene = seq.endswith("+")
    assert q.iteration_local("B") == (("w", "v") if kleene else ())
    assert q.shared_variables == (("h", "p", "l") if kleene else ("h", "p", "l", "w", "v"))


# ---------------------------------------------------------------- errors, exactly

def _q(seq: str, *defs: str, head: str = _HEAD) -> str:
    return f"{head}WHERE {{\n  SEQ ({seq})\n" + "".join(f"  {d}\n" for d in defs) + "}"


_A = "DEFINE GPM A ON S1 { ?h :pow ?p . }"
_B = "DEFINE GPM B ON S1 { ?h :loc ?l . }"

ERRORS: list[tuple[str, type[Exception], str]] = [
    (_q("A ; B", _A), UnknownGpmError,
     "SEQ uses GPM B, which is not defined: add DEFINE GPM B ON <stream> { … } (defined: A) "
     "(line 5, column 12)\n  SEQ (A ; B)\n           ^"),
    (_q("A", _A, "DEFINE GPM A ON S1 { ?h :loc ?l . }"), DuplicateNameError,
     "GPM A is defined twice (first on line 6): give each DEFINE GPM its own name "
     "(line 7, column 14)\n  DEFINE GPM A ON S1 { ?h :loc ?l . }\n             ^"),
    (_q("A", _A, _B), UnusedGpmError,
     "GPM B is defined but SEQ does not use it: add it to SEQ or remove its DEFINE "
     "(line 7, column 14)\n  DEFINE GPM B ON S1 { ?h :loc ?l . }\n             ^"),
    (_q("A ; A", _A), DuplicateNameError,
     "GPM A appears twice in SEQ: each GPM stands once; define another GPM, with its own "
     "name, for the second occurrence (line 5, column 12)\n  SEQ (A ; A)\n           ^"),
    (_q("A", "DEFINE GPM A ON S2 { ?h :pow ?p . }"), UnknownStreamError,
     "GPM A is defined ON S2, which no FROM STREAM declares: declare it (FROM STREAM S2 "
     "<iri>) or use one of S1 (line 6, column 19)\n"
     "  DEFINE GPM A ON S2 { ?h :pow ?p . }\n                  ^^"),
    (_q("A", _A, head=_HEAD.replace("FROM", "FROM STREAM S1 <http://x/>\nFROM")),
     DuplicateNameError,
     "Stream S1 is declared twice: give each FROM STREAM its own name (line 4, column 13)\n"
     f"FROM STREAM S1 <{EX}s1>\n            ^^"),
    (_q("A", _A, head=_HEAD + f"FROM STREAM S2 <{EX}s1>\n"), DuplicateNameError,
     f"Stream <{EX}s1> is declared twice (as S1 and S2): declare each stream once and use "
     f"its name in every GPM (line 4, column 13)\nFROM STREAM S2 <{EX}s1>\n            ^^"),
    (_q("A", _A, head=_HEAD.replace("*", "?h ?vessel")), UnknownVariableError,
     "SELECT ?vessel: no GPM binds ?vessel in a triple pattern; bind it in a GPM or remove it "
     "from SELECT (line 2, column 11)\nSELECT ?h ?vessel WITHIN 5 SECONDS\n          ^^^^^^^"),
    (_q("A", "DEFINE GPM A ON S1 { ?h pred:pow ?p . }"), UnknownPrefixError,
     "Prefix 'pred:' is not declared: add PREFIX pred: <…> before SELECT (line 6, column 27)\n"
     "  DEFINE GPM A ON S1 { ?h pred:pow ?p . }\n                          ^^^^^"),
    (_q("A", _A, head=_HEAD.replace(" WITHIN 5 SECONDS", "")), WindowError,
     "A SPAseq query needs a window: write WITHIN and a duration before FROM STREAM, e.g. "
     f"WITHIN 60 MINUTES (line 3, column 13)\nFROM STREAM S1 <{EX}s1>\n            ^^"),
    (_q("A", _A, head=_HEAD.replace("5 SECONDS", "0 MINUTES")), WindowError,
     "The window must be longer than 0, e.g. WITHIN 60 MINUTES (line 2, column 10)\n"
     "SELECT * WITHIN 0 MINUTES\n         ^^^^^^^^^^^^^^^^"),
    (_q("A ; B", "DEFINE GPM A ON S1 { ?h :pow ?p . FILTER (?p < ?l) }", _B),
     FilterPlacementError,
     "The FILTER in GPM A uses ?l, bound only by GPM B, which comes later in SEQ: move the "
     "condition into GPM B (a condition is checked when its GPM's event is chosen) "
     "(line 6, column 50)\n  DEFINE GPM A ON S1 { ?h :pow ?p . FILTER (?p < ?l) }\n"
     + " " * 49 + "^^"),
    (_q("A ; B", _A, "DEFINE GPM B ON S1 { ?h :loc ?l OPTIONAL { ?l :x ?y FILTER (?y > ?p) } }"),
     FilterPlacementError,
     "This FILTER inside OPTIONAL uses ?p, bound only by GPM A: write conditions on other "
     "GPMs' variables at the top level of GPM B (line 7, column 68)\n"
     "  DEFINE GPM B ON S1 { ?h :loc ?l OPTIONAL { ?l :x ?y FILTER (?y > ?p) } }\n"
     + " " * 67 + "^^"),
    (_q("A", _A, head=_HEAD.replace("5 SECONDS", "5 DAYS")), CeqlSyntaxError,
     "Expected a time unit (HOURS, MINUTES, SECONDS, MILLISECONDS) after '5', found name "
     "'DAYS' (line 2, column 19)\nSELECT * WITHIN 5 DAYS\n                  ^^^^"),
    (_q("A ; (B ; C)", _A), CeqlSyntaxError,
     "Expected '&', ')' or '|' after 'B', found ';': a parenthesised group in SEQ holds only & "
     "and |; write the sequence at the top level of SEQ, and '+' after the group, e.g. "
     "(B & C)+ (line 5, column 15)\n  SEQ (A ; (B ; C))\n              ^"),
    (_q("A", "DEFINE GPM A ON S1 { ?h :pow ?p\n    ?h :loc ?l . }"), CeqlSyntaxError,
     "Expected '.' between two triple patterns (or ';' to give the same subject another "
     "predicate, ',' another object) (line 7, column 5)\n    ?h :loc ?l . }\n    ^^^^^^^^^^"),
    (_q("A", "DEFINE GPM A ON S1 { ?h :pow ?p . FILTER (FOO(?p)) }"), CeqlSyntaxError,
     "Unknown function FOO: SPAseq's FILTERs have SPARQL's built-in functions (REGEX, STR, "
     "LANG, DATATYPE, BOUND, STRLEN, CONTAINS, ABS, ROUND, IF, …) and casts written as IRIs, "
     "e.g. xsd:integer(?x) (line 6, column 45)\n"
     "  DEFINE GPM A ON S1 { ?h :pow ?p . FILTER (FOO(?p)) }\n" + " " * 44 + "^^^"),
    (_q("A", "DEFINE GPM A ON S1 { ?h :pow ?p . FILTER (STRLEN(?p, 1)) }"), CeqlSyntaxError,
     "STRLEN takes 1 argument, not 2 (line 6, column 45)\n"
     "  DEFINE GPM A ON S1 { ?h :pow ?p . FILTER (STRLEN(?p, 1)) }\n" + " " * 44 + "^^^^^^"),
    (_q("A", "DEFINE GPM A ON S1 { ?h :pow ?p . FILTER (?p ~ 1) }"), CeqlSyntaxError,
     "Unexpected character '~' after '?p': expected a comparison (=, !=, <, <=, >, >=), IN, "
     "NOT, '&&', ')', '*', '+', '-', '/' or '||' (line 6, column 48)\n"
     "  DEFINE GPM A ON S1 { ?h :pow ?p . FILTER (?p ~ 1) }\n" + " " * 47 + "^"),
    (_q("A", _A)[:-2], CeqlSyntaxError,
     "Expected DEFINE or '}' after '}', found end of query (line 6, column 38)\n"
     f"  {_A}\n" + " " * 37 + "^"),
    (_q("A", 'DEFINE GPM A ON S1 { ?h :pow "abc }'), CeqlSyntaxError,
     "Unterminated string: the quote opened here is never closed on its line "
     "(line 6, column 32)\n  DEFINE GPM A ON S1 { ?h :pow \"abc }\n" + " " * 31 + "^"),
    ("", CeqlSyntaxError, "Empty query: expected PREFIX, BASE or SELECT (line 1, column 1)\n\n^"),
    (_HEAD.replace("SELECT *", "SELECT"), CeqlSyntaxError,
     "Expected a variable (?x) or '*' after 'SELECT', found WITHIN (line 2, column 8)\n"
     "SELECT WITHIN 5 SECONDS\n       ^^^^^^"),
]


@pytest.mark.parametrize(("text", "cls", "message"), ERRORS,
                         ids=[f"{c.__name__}-{i}" for i, (_, c, _) in enumerate(ERRORS)])
def test_errors(text: str, cls: type[Exception], message: str) -> None:
    with pytest.raises(cls) as err:
        parse(text)
    assert type(err.value) is cls
    assert str(err.value) == message


def test_validation_errors_are_ceql_errors() -> None:
    for cls in (UnknownGpmError, UnusedGpmError, DuplicateNameError, UnknownPrefixError,
                WindowError, FilterPlacementError):
        assert issubclass(cls, CeqlValidationError) and issubclass(cls, ValueError)
    assert Fraction(1) == parse(_q("A", _A).replace("5 SECONDS", "1000 MILLISECONDS")
                                ).window.seconds


def test_nesting_is_capped() -> None:
    """Deep expressions are refused at parse time, so renderers and walks never hit Python's
    recursion limit; 150 levels still parse and render."""
    def query(n: int) -> str:
        return _q("A", f"DEFINE GPM A ON S1 {{ ?h :pow ?p FILTER (?p{' + 1' * n} > 0) }}")
    assert "+ 1)" in to_sparql(parse(query(150)).gpms[0])
    with pytest.raises(CeqlValidationError) as err:
        parse(query(3000))
    assert type(err.value) is CeqlValidationError
    assert err.value.message == (
        "GPM A nests patterns or expressions more than 200 levels deep: split the condition "
        "into several FILTERs (they all must hold) or flatten the groups")
