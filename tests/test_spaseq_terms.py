"""SPAseq's terms (issue 27.4, docs/SPASEQ.md "Data model"): shared variables join and outputs
compare as RDF terms, exactly as written — on the engine, on the run loop and in the
reference, through the store and without it."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

import ceql.spaseq as sp
from spaseq_reference import reference_matches
from test_spaseq_eval import EX, as_set, query

XSD = "http://www.w3.org/2001/XMLSchema#"
INT = f"^^<{XSD}integer>"
W = "DEFINE GPM B ON S2 { ?w :value ?v . ?w :loc ?l . }"
A_OPT = "DEFINE GPM A ON S1 { ?h :pow ?p . OPTIONAL { ?h :loc ?l } }"  # takes the store path


def ev(stream: str, t: int, subject: str, *objects: str) -> dict[str, Any]:
    pred = "pow" if stream == "S1" else "value"
    triples = [f"<{EX}{subject}> <{EX}{pred}> <{EX}P> ."]
    triples += [f"<{EX}{subject}> <{EX}loc> {o} ." for o in objects]
    return {"stream": stream, "time": t, "graph": "\n".join(triples)}


def matches(q: sp.Query, events: list[dict[str, Any]], engine: bool = True
            ) -> list[tuple[dict[str, tuple[int, ...]], dict[str, Any]]]:
    return [(m.events, m.terms) for m in q.run(events, engine=engine)]


def check_all_paths(q: sp.Query, events: list[dict[str, Any]], want: list[Any]) -> None:
    for engine in (True, False):
        assert sorted(matches(q, events, engine), key=repr) == sorted(want, key=repr)
    assert as_set(q, events) == reference_matches(q.ast, events)


@pytest.mark.parametrize("gpm_a", [
    "DEFINE GPM A ON S1 { ?h :pow ?p . ?h :loc ?l . }", A_OPT])
def test_a_join_compares_lexical_forms(gpm_a: str) -> None:
    # "05"^^xsd:integer and 5 are two terms: the B at 15 is not fit for A, the one at 20 is
    events = [ev("S1", 10, "H1", f'"05"{INT}'), ev("S2", 15, "W1", "5"),
              ev("S2", 20, "W2", f'"05"{INT}')]
    q = query("?h ?w ?l", 60, "A ; B", f"{gpm_a}\n{W}")
    check_all_paths(q, events, [({"A": (0,), "B": (2,)},
                                 {"h": f"<{EX}H1>", "w": f"<{EX}W2>", "l": f'"05"{INT}'})])


def test_a_signed_integer_is_another_term() -> None:
    events = [ev("S1", 10, "H1", f'"+2"{INT}'), ev("S2", 15, "W1", "2"),
              ev("S2", 16, "W2", f'"2"^^<{XSD}int>')]
    q = query("?h ?w", 60, "A : B")
    check_all_paths(q, events, [])
    events.append(ev("S2", 17, "W3", f'"+2"{INT}'))
    check_all_paths(q, events, [({"A": (0,), "B": (3,)}, {"h": f"<{EX}H1>", "w": f"<{EX}W3>"})])


@pytest.mark.parametrize("gpm_a", [
    "DEFINE GPM A ON S1 { ?h :pow ?p . ?h :loc ?l . }", A_OPT])
def test_one_graph_holding_both_spellings_gives_two_mappings(gpm_a: str) -> None:
    events = [ev("S1", 10, "H1", f'"05"{INT}', "5")]
    q = query("?h ?l", 60, "A", gpm_a)
    check_all_paths(q, events, [
        ({"A": (0,)}, {"h": f"<{EX}H1>", "l": f'"05"{INT}'}),
        ({"A": (0,)}, {"h": f"<{EX}H1>", "l": f'"5"{INT}'})])


def test_outputs_are_sets_of_terms_not_of_values() -> None:
    # "x" and "x"@en, 1 and 1.0: equal plain values, four terms, four outputs
    events = [ev("S1", 10, "H1", '"x"', '"x"@en', "1", "1.0")]
    q = query("?l", 60, "A", "DEFINE GPM A ON S1 { ?h :pow ?p . ?h :loc ?l . }")
    want_terms = ['"x"', '"x"@en', f'"1"{INT}', f'"1.0"^^<{XSD}decimal>']
    check_all_paths(q, events, [({"A": (0,)}, {"l": t}) for t in want_terms])
    got = sorted(repr(m.bindings["l"]) for m in q.run(events))
    assert got == sorted(["'x'", "'x'", "1", "1.0"])


def test_iteration_local_terms_are_kept_as_written() -> None:
    events = [ev("S1", 10, "H1", "1"), ev("S2", 11, "W1", "1"), ev("S2", 12, "W2", '"01"' + INT)]
    gpm_b = "DEFINE GPM B ON S2 { ?w :value ?v . ?w :loc ?m . FILTER (?m = ?l) }"
    q = query("?h ?m", 60, "A ; B+", f"DEFINE GPM A ON S1 {{ ?h :pow ?p . ?h :loc ?l . }}\n{gpm_b}")
    check_all_paths(q, events, [
        ({"A": (0,), "B": (1,)}, {"h": f"<{EX}H1>", "m": [f'"1"{INT}']}),
        ({"A": (0,), "B": (1, 2)}, {"h": f"<{EX}H1>", "m": [f'"1"{INT}', f'"01"{INT}']})])


# ---------------------------------------------------------------- SPARQL 1.1's = and !=

BOOL = f'"true"^^<{XSD}boolean>'
DATE = f'"2020-01-01"^^<{XSD}date>'
OBJECTS = ['"abc"', f'"3"{INT}', f"<{EX}L>", '"x"@en', f'"2"{INT}', DATE, f'"02"{INT}', BOOL]


@pytest.mark.parametrize(("condition", "kept"), [
    # a literal that is not a number against 2: a type error, so the FILTER is false
    ("?l != 2", [f'"3"{INT}', f"<{EX}L>"]),
    ("?l = 2", [f'"2"{INT}', f'"02"{INT}']),
    ("!(?l = 2)", [f'"3"{INT}', f"<{EX}L>"]),
    ("?l NOT IN (2, 4)", [f'"3"{INT}', f"<{EX}L>"]),
    ('?l IN (2, "abc")', ['"abc"', f'"2"{INT}', f'"02"{INT}']),
    ('?l != "abc"', [f"<{EX}L>"]),  # strings with strings only: "x"@en is no xsd:string
    ('?l != "x"@en', [f"<{EX}L>"]),  # two different literals of no compared type: error
    ("?l != true", [f"<{EX}L>"]),
    (f"?l != <{EX}M>", OBJECTS),  # an IRI is simply another term: no error
    (f'?l = "2020-01-01"^^<{XSD}date>', [DATE]),  # the same term
])
@pytest.mark.parametrize("where", ["local", "cross"])
def test_equality_follows_sparql_1_1(condition: str, kept: list[str], where: str) -> None:
    """The FILTER in B's own pattern, or between events (reading A's ?l)."""
    if where == "local":
        events = [ev("S1", 1, "H0", "0")] + [ev("S2", 2 + i, f"W{i}", o)
                                             for i, o in enumerate(OBJECTS)]
        gpms = ("DEFINE GPM A ON S1 { ?h :pow ?p . }\n"
                f"DEFINE GPM B ON S2 {{ ?w :value ?v . ?w :loc ?l . FILTER ({condition}) }}")
        seq, var = "A : B", "l"
    else:
        events = [ev("S1", 2 + i, f"H{i}", o) for i, o in enumerate(OBJECTS)]
        events.append(ev("S2", 20, "W", "0"))
        gpms = ("DEFINE GPM A ON S1 { ?h :pow ?p . ?h :loc ?l }\n"
                f"DEFINE GPM B ON S2 {{ ?w :value ?v . FILTER ({condition}) }}")
        seq, var = "A ; B", "l"
    q = query("?l", 60, seq, gpms)
    got = sorted({str(m.terms[var]) for m in q.run(events)})
    assert got == sorted(kept)
    assert got == sorted({str(m.terms[var]) for m in q.run(events, engine=False)})
    assert as_set(q, events) == reference_matches(q.ast, events)


# ---------------------------------------------------------------- float times and the window

def _two(t0: Any, t1: Any) -> list[dict[str, Any]]:
    return [{**ev("S1", 0, "H1", "1"), "time": t0}, {**ev("S2", 0, "W1", "1"), "time": t1}]


@pytest.mark.parametrize(("t0", "t1", "window", "kept"), [
    # a float time is its exact binary value, never rounded: 0.3 is 0.29999999999999998889…,
    # 0.1 is 0.10000000000000000555…, so the span is 0.19999999999999998335… s
    (0.1, 0.3, "200 MILLISECONDS", True),
    # 0.1 + 0.2 is 0.30000000000000004440…: the span is 0.20000000000000003885… s
    (0.1, 0.1 + 0.2, "200 MILLISECONDS", False),
    # 1000.2 − 0.2 is 1000.0 in float arithmetic, but exactly 1000.0000000000000344 s
    (0.2, 1000.2, "1000 SECONDS", False),
    (0.25, 1000.25, "1000 SECONDS", True),  # both exact in binary: the span is 1000 s
    (0, 1, "1000 MILLISECONDS", True),  # the window's edge is in it
    (dt.datetime(2026, 1, 1), dt.datetime(2026, 1, 1, 0, 0, 0, 200_000), "200 MILLISECONDS",
     True),
    (dt.datetime(2026, 1, 1), dt.datetime(2026, 1, 1, 0, 0, 0, 200_001), "200 MILLISECONDS",
     False),
])
def test_float_times_against_a_millisecond_window_are_exact(t0: Any, t1: Any, window: str,
                                                            kept: bool) -> None:
    text = (f"PREFIX : <{EX}>\nSELECT ?h WITHIN {window}\n"
            "FROM STREAM S1 <http://example/power>\nFROM STREAM S2 <http://example/weather>\n"
            "WHERE { SEQ (A ; B)\nDEFINE GPM A ON S1 { ?h :pow ?p . ?h :loc ?l . }\n"
            "DEFINE GPM B ON S2 { ?w :value ?v . ?w :loc ?l . } }")
    q = sp.compile(text)
    events = _two(t0, t1)
    for engine in (True, False):
        assert [m.events for m in q.run(events, engine=engine)] == (
            [{"A": (0,), "B": (1,)}] if kept else [])
    assert as_set(q, events) == reference_matches(q.ast, events)


@pytest.mark.parametrize("constant", [f'"05"^^<{XSD}integer>', "05"])
def test_a_pattern_constant_matches_exactly_its_term(constant: str) -> None:
    events = [ev("S1", 1, "H1", f'"05"{INT}'), ev("S1", 2, "H2", "5"),
              ev("S1", 3, "H3", f'"5"^^<{XSD}int>')]
    q = query("?h", 60, "A", f"DEFINE GPM A ON S1 {{ ?h :pow ?p . ?h :loc {constant} . }}")
    check_all_paths(q, events, [({"A": (0,)}, {"h": f"<{EX}H1>"})])
    q = query("?h", 60, "A", "DEFINE GPM A ON S1 { ?h :pow ?p . ?h :loc 5 . }")
    check_all_paths(q, events, [({"A": (1,)}, {"h": f"<{EX}H2>"})])
