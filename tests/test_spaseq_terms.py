"""SPAseq's terms (issue 27.4, docs/SPASEQ.md "Data model"): shared variables join and outputs
compare as RDF terms, exactly as written — on the engine, on the run loop and in the
reference, through the store and without it."""

from __future__ import annotations

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
    got = sorted((repr(m.bindings["l"]) for m in q.run(events)))
    assert got == sorted(["'x'", "'x'", "1", "1.0"])


def test_iteration_local_terms_are_kept_as_written() -> None:
    events = [ev("S1", 10, "H1", "1"), ev("S2", 11, "W1", "1"), ev("S2", 12, "W2", '"01"' + INT)]
    gpm_b = "DEFINE GPM B ON S2 { ?w :value ?v . ?w :loc ?m . FILTER (?m = ?l) }"
    q = query("?h ?m", 60, "A ; B+", f"DEFINE GPM A ON S1 {{ ?h :pow ?p . ?h :loc ?l . }}\n{gpm_b}")
    check_all_paths(q, events, [
        ({"A": (0,), "B": (1,)}, {"h": f"<{EX}H1>", "m": [f'"1"{INT}']}),
        ({"A": (0,), "B": (1, 2)}, {"h": f"<{EX}H1>", "m": [f'"1"{INT}', f'"01"{INT}']})])
