"""Conditions between events in the language (issue 11): qualified attributes ``Y.attr``,
``PREV(attr)``, aggregates, match conditions ``[P]`` and stream-qualified variables ``S>T`` —
how they parse, how the formatter writes them back, what validation refuses and how syntax
errors around them read (with line, column and caret), including what users of
MATCH_RECOGNIZE, FlinkCEP and SASE write instead.

The engine's results for these queries are checked elsewhere (tests/test_reference.py and
tests/test_correlation_properties.py); here only the language: every test is parse, format and
validate, so it holds whatever the engine does.
"""

from __future__ import annotations

import warnings

import pytest

import ceql
from ceql.analysis import validate
from ceql.errors import (
    CeqlSyntaxError,
    CeqlValidationError,
    NegatedVariableError,
    TypeClashError,
    UnknownAttributeError,
    UnknownVariableError,
    UnsafeVariableError,
    VacuousConditionWarning,
)
from ceql.frontends.ceql import format_query, parse
from ceql.frontends.ceql.formatter import format_expr
from ceql.ir import nodes as A

SCHEMA = {"name": "string", "price": "number", "amount": "number", "id": "number",
          "value": "number", "ts": "timestamp", "flag": "bool"}


def check(text: str, schema: object = None) -> A.Query:
    return validate(parse(text), text, schema)


def fails(text: str, cls: type[CeqlValidationError], message: str, column: int, width: int,
          schema: object = None, line: int = 1) -> None:
    """``text`` is refused by validation with exactly this error, line, column and caret."""
    with pytest.raises(CeqlValidationError) as info:
        check(text, schema)
    err = info.value
    assert type(err) is cls
    assert err.message == message
    assert (err.line, err.column) == (line, column)
    assert err.snippet == f"{text.splitlines()[line - 1]}\n{' ' * (column - 1)}{'^' * width}"
    assert str(err).startswith(f"{message} (line {line}, column {column})\n")


def syntax(text: str, message: str, column: int, width: int, line: int = 1) -> CeqlSyntaxError:
    """``text`` does not parse, with exactly this message, line, column and caret."""
    with pytest.raises(CeqlSyntaxError) as info:
        parse(text)
    err = info.value
    assert err.message == message
    assert (err.line, err.column) == (line, column)
    assert err.snippet == f"{text.splitlines()[line - 1]}\n{' ' * (column - 1)}{'^' * width}"
    return err


def where(formula: str) -> A.Formula:
    return parse(f"SELECT * FROM S WHERE {formula}").where


def cond(formula: str) -> A.FilterExpr:
    f = where(formula)
    assert isinstance(f, A.Filter)
    return f.cond


# ---------------------------------------------------------------- the IR the parser gives

def test_qualified_attributes_parse() -> None:
    c = cond("A AS a ; (B AS b)+ FILTER b[price > a.price]")
    assert c == A.FilterAtom("b", A.Compare(">", A.Attr("price"), A.Attr("price", var="a")))
    # X.attr inside X[…] keeps its qualifier in the IR (the same meaning as plain attr)
    assert cond("B AS b FILTER b[b.price > 1]") == A.FilterAtom(
        "b", A.Compare(">", A.Attr("price", var="b"), A.Literal(1)))
    # spaces around the dot, backquoted parts and keyword attribute names
    assert cond("A AS `odd v` FILTER `odd v`[x > `odd v` . `odd a` + a.max]") == A.FilterAtom(
        "odd v", A.Compare(">", A.Attr("x"), A.Arith("+", A.Attr("odd a", var="odd v"),
                                                      A.Attr("max", var="a"))))


def test_prev_and_aggregates_parse() -> None:
    assert cond("(B AS b)+ FILTER b[price > PREV(price)]") == A.FilterAtom(
        "b", A.Compare(">", A.Attr("price"), A.Prev("price")))
    c = cond("(B AS b)+ FILTER [count(b) >= 3 AND Sum(b.amount) > 10000 AND "
             "MAX(b.price) - MIN(b.price) < 5 AND FIRST(b.x) = LAST(b.x) AND AVG(b.x) > 1]")
    assert isinstance(c, A.FilterMatch)
    aggs = [e for e in _exprs(c.pred) if isinstance(e, A.Agg)]
    assert aggs == [A.Agg("COUNT", "b"), A.Agg("SUM", "b", "amount"), A.Agg("MAX", "b", "price"),
                    A.Agg("MIN", "b", "price"), A.Agg("FIRST", "b", "x"),
                    A.Agg("LAST", "b", "x"), A.Agg("AVG", "b", "x")]
    # a name that is a function's is an attribute when no parenthesis follows
    assert cond("B FILTER B[count > 1]") == A.FilterAtom(
        "B", A.Compare(">", A.Attr("count"), A.Literal(1)))


def test_distinct_aggregates_parse() -> None:
    """``COUNT|SUM|AVG(DISTINCT y.attr)``: the natural "three different countries"."""
    assert cond("(B AS b)+ FILTER [COUNT(DISTINCT b.country) >= 3]") == A.FilterMatch(
        A.Compare(">=", A.Agg("COUNT", "b", "country", distinct=True), A.Literal(3)))
    c = cond("(B AS b)+ FILTER b[x > sum(distinct b.x) - Avg(Distinct b.`odd a`)]")
    assert isinstance(c, A.FilterAtom)
    assert [e for e in _exprs(c.pred) if isinstance(e, A.Agg)] == [
        A.Agg("SUM", "b", "x", distinct=True), A.Agg("AVG", "b", "odd a", distinct=True)]
    # DISTINCT changes the aggregate, and is still an attribute name without parentheses
    assert A.Agg("SUM", "b", "x", distinct=True) != A.Agg("SUM", "b", "x")
    assert cond("B FILTER B[distinct > 1]") == A.FilterAtom(
        "B", A.Compare(">", A.Attr("distinct"), A.Literal(1)))


def _exprs(p: A.Pred) -> list[A.Expr]:
    from ceql.ir import expr_nodes

    return list(expr_nodes(p))


def test_match_conditions_parse_anywhere_a_condition_may_stand() -> None:
    c = cond("(B AS b)+ FILTER b[x > 1] AND ([COUNT(b) > 2] OR [b.x = 0])")
    assert c == A.FilterAnd(
        A.FilterAtom("b", A.Compare(">", A.Attr("x"), A.Literal(1))),
        A.FilterOr(A.FilterMatch(A.Compare(">", A.Agg("COUNT", "b"), A.Literal(2))),
                   A.FilterMatch(A.Compare("=", A.Attr("x", var="b"), A.Literal(0)))))


def test_stream_qualified_variables_parse() -> None:
    q = parse("SELECT S1>BUY, `s 2` > `T t` FROM S1, `s 2` WHERE S1>BUY ; `s 2`>`T t` "
              "FILTER S1>BUY[name = 'MSFT'] AND `s 2` > `T t`[x > 1]")
    assert q.select == ("S1>BUY", "s 2>T t")
    assert isinstance(q.where, A.Filter)
    assert [leaf.var for leaf in _atoms(q.where.cond)] == ["S1>BUY", "s 2>T t"]


def _atoms(c: A.FilterExpr) -> list[A.FilterAtom]:
    from ceql.ir import filter_atoms

    return list(filter_atoms(c))


# ---------------------------------------------------------------- the formatter

ROUND_TRIPS = [
    "SELECT * FROM S WHERE A AS a ; (B AS b)+ FILTER b[price > a.price]",
    "SELECT * FROM S WHERE (B AS b)+ FILTER b[price > PREV(price)]",
    "SELECT * FROM S WHERE (B AS b)+ FILTER b[-PREV(price) < -a.price]",
    "SELECT * FROM S WHERE H AS h ; (T AS t)+ ; H AS k FILTER [COUNT(t) >= 2] AND t[id = 1] "
    "AND h[id = 1] AND k[id = 1]",
    "SELECT * FROM S WHERE (B AS b)+ FILTER [COUNT(b) >= 3 AND SUM(b.amount) > 10000]",
    "SELECT * FROM S WHERE (B AS b)+ FILTER [AVG(b.x) * 2 IN RANGE(MIN(b.x), MAX(b.x) + 1)] "
    "OR [FIRST(b.x) IN {1, 2}] OR [LAST(b.name) LIKE '^a']",
    "SELECT * FROM S WHERE (B AS b)+ FILTER [NOT (b.x > 1 OR b.y < 2)]",
    "SELECT * FROM S WHERE (B AS b)+ FILTER b[x > -COUNT(b)] AND (b[x > 1] OR [COUNT(b) = 1])",
    "SELECT * FROM S WHERE (B AS b)+ FILTER [COUNT(DISTINCT b.country) >= 3 AND "
    "SUM(DISTINCT b.x) > AVG(DISTINCT b.`odd a`)]",
    "SELECT S1>BUY FROM S1, S2 WHERE S1>BUY ; S2>BUY FILTER S1>BUY[name = 'MSFT']",
    "SELECT `s 1`>`T t`, `odd v` FROM `s 1` WHERE `s 1`>`T t` ; A AS `odd v` "
    "FILTER `odd v`[`odd a` > `odd v`.`odd a` + `s 1`.x] AND `s 1`>`T t`[x = 1]",
    "SELECT * FROM S WHERE (A AS `select`)+ FILTER [SUM(`select`.`from`) > COUNT(`select`)] "
    "AND `select`[`all` > PREV(`all`)]",
    "SELECT * FROM S WHERE (A AS a)+ FILTER a[x > MAX(a.max) + LAST(a.last) + a.all]",
    "SELECT * FROM S WHERE A LIMIT 0",
]


@pytest.mark.parametrize("text", ROUND_TRIPS)
def test_format_round_trips(text: str) -> None:
    q = parse(text)
    out = format_query(q)
    assert parse(out) == q, out
    assert format_query(parse(out)) == out


def test_format_text_of_every_new_node() -> None:
    q = parse("select s1>buy from s1 where (s1>buy as `odd v`)+ filter `odd v`[price > "
              "`odd v`.`odd a` + prev(price)] and [count(`odd v`) >= 3 and sum(x.amount) > 1 "
              "and -avg(x.`all`) < max(x.y)] limit 0")
    assert format_query(q) == (
        "SELECT ANY s1>buy FROM s1\n"
        "WHERE (s1>buy AS `odd v`)+ FILTER `odd v`[price > `odd v`.`odd a` + PREV(price)] AND "
        "[COUNT(`odd v`) >= 3 AND SUM(x.amount) > 1 AND -AVG(x.`all`) < MAX(x.y)]\n"
        "LIMIT 0")


FORMAT_IR = [
    A.Compare(">", A.Attr("p"), A.Attr("p", var="a b")),
    A.Compare(">", A.Neg(A.Prev("select")), A.Neg(A.Agg("COUNT", "x y"))),
    A.Compare("=", A.Arith("-", A.Agg("SUM", "b", "p q"), A.Prev("p")), A.Literal(-1)),
    A.InRange(A.Agg("AVG", "b", "x"), A.Attr("lo", var="a"), A.Neg(A.Attr("hi", var="a"))),
    A.InSet(A.Agg("FIRST", "b", "s"), (A.Literal("x"), A.Literal("y")), True),
    A.Like(A.Agg("LAST", "b", "s"), "^a"),
]


@pytest.mark.parametrize("pred", FORMAT_IR, ids=range(len(FORMAT_IR)))
def test_format_ir_round_trips(pred: A.Pred) -> None:
    for c in (A.FilterAtom("b", pred), A.FilterMatch(pred), A.FilterAtom("S>b", pred)):
        q = A.Query("ANY", ("S>b",), ("S",), A.Filter(A.Plus(A.EventType("b", "S")), c))
        assert parse(format_query(q)) == q, format_query(q)


def test_format_refuses_what_the_parser_never_gives() -> None:
    with pytest.raises(ValueError, match="unknown aggregate 'MEDIAN'"):
        format_expr(A.Agg("MEDIAN", "b", "x"))
    with pytest.raises(ValueError, match="COUNT takes a variable"):
        format_expr(A.Agg("COUNT", "b", "x"))
    with pytest.raises(ValueError, match="SUM needs an attribute"):
        format_expr(A.Agg("SUM", "b"))
    with pytest.raises(ValueError, match=r"MIN\(DISTINCT …\) needs one of COUNT, SUM, AVG"):
        format_expr(A.Agg("MIN", "b", "x", distinct=True))
    with pytest.raises(ValueError, match=r"COUNT\(DISTINCT …\) needs one of"):
        format_expr(A.Agg("COUNT", "b", distinct=True))


# ---------------------------------------------------------------- sound queries

SOUND = [
    # SEMANTICS.md's examples of conditions between events
    "SELECT * FROM S WHERE A AS a ; (B AS b)+ FILTER b[price > a.price]",
    "SELECT * FROM S WHERE (B AS b)+ FILTER b[price > PREV(price)]",
    "SELECT * FROM S WHERE T AS x ; H AS y FILTER y[id = x.id]",
    "SELECT * FROM S WHERE H AS h ; (T AS t)+ ; H AS k FILTER [COUNT(t) >= 2] AND t[id = 1] "
    "AND h[id = 1] AND k[id = 1]",
    "SELECT * FROM S WHERE H AS h ; (T AS t)+ ; H AS k FILTER [AVG(t.value) > 33] AND "
    "t[id = 1] AND h[id = 1] AND k[id = 1]",
    "SELECT * FROM S WHERE (T AS x)+ FILTER x[value < PREV(value)] AND x[id = 0]",
    "SELECT * FROM S WHERE (B AS b)+ FILTER [COUNT(b) >= 3 AND SUM(b.amount) > 10000]",
    # X.attr in X[…] is plain attr; a type name qualifies like an AS name
    "SELECT * FROM S WHERE B AS b FILTER b[b.price > 1]",
    "SELECT * FROM S WHERE A ; B FILTER B[price > A.price]",
    # PREV of an event type or a variable that binds two events
    "SELECT * FROM S WHERE A ; A FILTER A[price > PREV(price)]",
    "SELECT * FROM S WHERE (A ; B) AS x FILTER x[price > PREV(price)]",
    # a variable bound in one branch of an OR (empty in the other: the condition holds)
    "SELECT * FROM S WHERE (A AS a OR B AS b) ; C AS c FILTER c[x > a.x] AND [COUNT(b) < 2]",
    # stream-qualified variables
    "SELECT S1>BUY FROM S1, S2 WHERE S1>BUY ; S2>BUY FILTER S1>BUY[name = 'MSFT'] AND "
    "S2>BUY[price > `S1>BUY`.price]",
    "SELECT * FROM S WHERE A LIMIT 0",
]


@pytest.mark.parametrize("text", SOUND)
def test_sound_queries_validate(text: str) -> None:
    q = parse(text)
    assert validate(q, text) is q


def test_sound_queries_validate_with_a_schema() -> None:
    for text in SOUND[:7]:
        check(text, SCHEMA | {"x": "number", "amount": "number"})
    # MIN/MAX/FIRST/LAST keep their attribute's kind; COUNT, SUM and AVG are numbers
    check("SELECT * FROM S WHERE (B AS b)+ FILTER [MAX(b.name) = 'z' AND FIRST(b.ts) < "
          "LAST(b.ts) AND COUNT(b) + SUM(b.price) / AVG(b.amount) > 1]", SCHEMA)
    # a variable that is also an attribute of the schema may stand plainly
    check("SELECT * FROM S WHERE A AS a ; B AS b FILTER b[temp > a]",
          {"temp": "number", "a": "number"})


# ---------------------------------------------------------------- validation errors

def test_qualified_variable_not_bound_where_the_filter_applies() -> None:
    fails("SELECT * FROM S WHERE A AS a ; (B AS b FILTER b[price > a.price])",
          UnsafeVariableError,
          "b[price > a.price]: 'a' is not bound in the formula this FILTER applies to (which "
          "binds only B, b), so it has no events there. Put the FILTER after the formula that "
          "binds both 'a' and 'b', e.g. (A AS a ; B AS b) FILTER b[price > a.price]", 57, 1)
    # the other conditions of the FILTER stay where they are
    fails("SELECT * FROM S WHERE A AS a ; (B AS b FILTER b[x = 1] AND b[price > a.price]) ; C",
          UnsafeVariableError,
          "b[price > a.price]: 'a' is not bound in the formula this FILTER applies to (which "
          "binds only B, b), so it has no events there. Put the FILTER after the formula that "
          "binds both 'a' and 'b', e.g. (A AS a ; (B AS b FILTER b[x = 1])) FILTER "
          "b[price > a.price]", 70, 1)
    # under an OR the whole condition moves (moving one side would change its meaning)
    fails("SELECT * FROM S WHERE A AS a ; (B AS b FILTER b[x = 1] OR b[price > a.price])",
          UnsafeVariableError,
          "b[price > a.price]: 'a' is not bound in the formula this FILTER applies to (which "
          "binds only B, b), so it has no events there. Put the FILTER after the formula that "
          "binds both 'a' and 'b', e.g. (A AS a ; B AS b) FILTER b[x = 1] OR b[price > "
          "a.price]", 69, 1)
    # several variables, backquoted names (the caret under the variable as written)
    fails("SELECT * FROM S WHERE C AS c ; A AS `odd v` ; (B AS b FILTER b[x > `odd v`.y + c.y])",
          UnsafeVariableError,
          "b[x > `odd v`.y + c.y]: 'odd v' is not bound in the formula this FILTER applies to "
          "(which binds only B, b), so it has no events there. Put the FILTER after the formula "
          "that binds 'c', 'odd v' and 'b', e.g. (C AS c ; A AS `odd v` ; B AS b) FILTER "
          "b[x > `odd v`.y + c.y]", 68, 7)


def test_aggregate_variable_not_bound_where_the_filter_applies() -> None:
    fails("SELECT * FROM S WHERE H AS h ; (T AS t FILTER [COUNT( h) >= 2])+ ; H AS k",
          UnsafeVariableError,
          "[COUNT( h) >= 2]: 'h' is not bound in the formula this FILTER applies to (which "
          "binds only T, t), so it has no events there. Put the FILTER after the formula that "
          "binds 'h', e.g. (H AS h ; (T AS t)+) FILTER [COUNT(h) >= 2]", 55, 1)


def test_unknown_qualified_variables() -> None:
    fails("SELECT * FROM S WHERE A AS a ; B AS b FILTER b[price > zz.price]",
          UnknownVariableError,
          "Unknown variable 'zz' in FILTER: the WHERE formula binds A, a, B, b; bind it with AS "
          "or fix the name", 56, 2)
    fails("SELECT * FROM S WHERE A AS a ; B AS b FILTER [SUM(bb.price) > 1]",
          UnknownVariableError,
          "Unknown variable 'bb' in FILTER: the WHERE formula binds A, a, B, b; bind it with AS "
          "or fix the name (did you mean 'b'?)", 51, 2)


def test_prev_in_a_match_condition() -> None:
    fails("SELECT * FROM S WHERE A AS a ; (B AS b)+ FILTER [PREV(price) > 3]",
          CeqlValidationError,
          "PREV(price) cannot stand in the match condition [PREV(price) > 3]: PREV reads the "
          "previous event of the variable whose brackets it is in, and a match condition [...] "
          "has no variable. Write it inside a variable's brackets, e.g. b[price > PREV(price)]",
          50, 11)


def _vacuous(text: str) -> str:
    """The one VacuousConditionWarning compiling ``text`` gives (it compiles)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ceql.compile(text)
    found = [str(w.message) for w in caught if w.category is VacuousConditionWarning]
    assert len(found) == 1, [str(w.message) for w in caught]
    return found[0]


def test_prev_of_a_variable_with_at_most_one_event() -> None:
    """Valid and always true (SEMANTICS.md: the first event of X is exempt), with a warning
    that keeps the advice: another variable's event, or a run."""
    text = "SELECT * FROM S WHERE A AS a ; B AS b FILTER b[price > PREV(price)]"
    assert validate(parse(text), text) is not None
    assert _vacuous(text) == (
        "b[price > PREV(price)] (line 1, column 56) never rejects anything: 'b' binds at most "
        "one event in the formula this FILTER applies to, so no b event has a previous one for "
        "PREV(price) to read, and a condition with PREV exempts the first event: it always "
        "holds. To compare with a's event write a.price; for a run of b events, iterate it: "
        "(B AS b)+")
    assert _vacuous("SELECT * FROM S WHERE A ; B FILTER A[price > PREV(price)]") == (
        "A[price > PREV(price)] (line 1, column 46) never rejects anything: 'A' binds at most "
        "one event in the formula this FILTER applies to, so no A event has a previous one for "
        "PREV(price) to read, and a condition with PREV exempts the first event: it always "
        "holds. For a run of A events, iterate it: A+")


def test_prev_of_a_written_stream_qualified_leaf_with_one_event() -> None:
    """WHERE writes S1>BUY once: S1>BUY is that leaf's event alone, whatever the plain BUY."""
    assert _vacuous("SELECT * FROM S1, S2 WHERE S1>BUY ; BUY "
                    "FILTER S1>BUY[price > PREV(price)] WITHIN 5 EVENTS").startswith(
        "S1>BUY[price > PREV(price)] (line 1, column 63) never rejects anything: 'S1>BUY' "
        "binds at most one event")


def test_prev_of_a_variable_with_two_events_gives_no_warning() -> None:
    for text in ("SELECT * FROM S WHERE (B AS b)+ FILTER b[price > PREV(price)] WITHIN 9 EVENTS",
                 "SELECT * FROM S WHERE A ; A FILTER A[price > PREV(price)] WITHIN 9 EVENTS",
                 # no S1>BUY leaf: S1>BUY is the BUYs of S1 of both leaves
                 "SELECT * FROM S1, S2 WHERE BUY ; BUY FILTER S1>BUY[price > PREV(price)] "
                 "WITHIN 9 EVENTS"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ceql.compile(text)


def test_plain_names_in_a_match_condition() -> None:
    fails("SELECT * FROM S WHERE A AS a ; (B AS b)+ FILTER [price > 3]",
          CeqlValidationError,
          "Attribute 'price' in the match condition [price > 3] needs a variable: a match "
          "condition is checked once per match, not on one event. Write a.price (true when every "
          "a event passes), an aggregate such as MAX(a.price), or put the condition in a[…]",
          50, 5)
    # the variable the condition already reads is the one suggested
    fails("SELECT * FROM S WHERE A AS a ; (B AS b)+ FILTER [COUNT(b) > 1 AND price > 3]",
          CeqlValidationError,
          "Attribute 'price' in the match condition [COUNT(b) > 1 AND price > 3] needs a "
          "variable: a match condition is checked once per match, not on one event. Write "
          "b.price (true when every b event passes), an aggregate such as MAX(b.price), or put "
          "the condition in b[…]", 67, 5)
    fails("SELECT * FROM S WHERE A AS a ; (B AS b)+ FILTER [b > 3]",
          CeqlValidationError,
          "'b' in the match condition [b > 3] is a variable, not a value: write COUNT(b) for its "
          "number of events, or b.attr for an attribute of its events", 50, 1)


def test_a_variable_read_as_an_attribute_suggests_the_qualified_form() -> None:
    fails("SELECT * FROM S WHERE A AS a ; B AS b FILTER b[temp > a]",
          CeqlValidationError,
          "'a' is a variable of this query, not an attribute: inside b[…] a plain name is an "
          "attribute of b's events; to compare with an attribute of a's events, qualify it: "
          "b[temp > a.temp]. If the events have an attribute 'a', rename the variable (AS a1) "
          "or compile with a schema that lists the attribute", 55, 1)


def test_aggregates_of_the_wrong_kind() -> None:
    fails("SELECT * FROM S WHERE (B AS b)+ FILTER [SUM(DISTINCT b.name) > 3]", TypeClashError,
          "Type clash in SUM(DISTINCT b.name): SUM adds numbers, but name is string", 41, 20,
          SCHEMA)
    fails("SELECT * FROM S WHERE (B AS b)+ FILTER [COUNT(DISTINCT b.name) = 'x']",
          TypeClashError,
          "Type clash in comparison COUNT(DISTINCT b.name) = 'x': COUNT(DISTINCT b.name) is "
          "number but 'x' is string", 41, 28, SCHEMA)
    fails("SELECT * FROM S WHERE (B AS b)+ FILTER [COUNT(DISTINCT b.nme) > 2]",
          UnknownAttributeError,
          "Unknown attribute 'nme' in FILTER: the schema has amount, flag, id, name, price, ts, "
          "value (did you mean 'name'?)", 41, 21, SCHEMA)
    fails("SELECT * FROM S WHERE (B AS b)+ FILTER [SUM(b.name) > 3]", TypeClashError,
          "Type clash in SUM(b.name): SUM adds numbers, but name is string", 41, 11, SCHEMA)
    fails("SELECT * FROM S WHERE (B AS b)+ FILTER b[price > AVG(b.flag)]", TypeClashError,
          "Type clash in AVG(b.flag): AVG averages numbers, but flag is bool", 50, 11, SCHEMA)
    fails("SELECT * FROM S WHERE (B AS b)+ FILTER [MAX(b.name) > 3]", TypeClashError,
          "Type clash in comparison MAX(b.name) > 3: MAX(b.name) is string but 3 is number",
          41, 15, SCHEMA)
    fails("SELECT * FROM S WHERE (B AS b)+ FILTER [COUNT(b) = 'x']", TypeClashError,
          "Type clash in comparison COUNT(b) = 'x': COUNT(b) is number but 'x' is string",
          41, 14)
    fails("SELECT * FROM S WHERE (B AS b)+ FILTER [MIN(b.nme) > 3]", UnknownAttributeError,
          "Unknown attribute 'nme' in FILTER: the schema has amount, flag, id, name, price, ts, "
          "value (did you mean 'name'?)", 41, 10, SCHEMA)


def test_comparisons_across_variables_of_clashing_kinds() -> None:
    fails("SELECT * FROM S WHERE A AS a ; (B AS b)+ FILTER b[price > a.name]", TypeClashError,
          "Type clash in comparison price > a.name: price is number but a.name is string",
          51, 14, SCHEMA)
    fails("SELECT * FROM S WHERE (B AS b)+ FILTER b[name = PREV(price)]", TypeClashError,
          "Type clash in comparison name = PREV(price): name is string but PREV(price) is "
          "number", 42, 18, SCHEMA)
    fails("SELECT * FROM S WHERE A AS a ; (B AS b)+ FILTER b[price > a.nme]",
          UnknownAttributeError,
          "Unknown attribute 'nme' in FILTER: the schema has amount, flag, id, name, price, ts, "
          "value (did you mean 'name'?)", 59, 5, SCHEMA)


def test_stream_qualified_variables_name_the_events_of_plain_leaves() -> None:
    """Where WHERE writes no ``S>T`` leaf, ``S>T`` is the ``T`` events from stream ``S`` of any
    ``T`` leaf (CORE's meaning): valid wherever WHERE has a ``T`` leaf and FROM lists ``S``."""
    for text in ["SELECT S1>BUY FROM S1, S2 WHERE S2>BUY ; BUY",
                 "SELECT * FROM S1, S2 WHERE BUY FILTER S1>BUY[name = 'MSFT'] AND "
                 "S2>BUY[name = 'INTL']",
                 "SELECT * FROM S1, S2 WHERE BUY ; BUY FILTER S1>BUY[price > PREV(price)] AND "
                 "S2>BUY[price > `S1>BUY`.price] AND [COUNT(`S1>BUY`) < 2]"]:
        assert check(text, SCHEMA) is not None


def test_a_written_stream_qualified_leaf_is_what_its_name_names() -> None:
    """Where WHERE writes ``S>T`` (under a NOT too), ``S>T`` names those leaves' events only:
    the plain ``T`` leaves' do not make it positive."""
    text = "SELECT * FROM S1, S2 WHERE BUY ; NOT S1>BUY ; BUY FILTER S1>BUY[price > 1]"
    fails(text, NegatedVariableError,
          "S1>BUY[price > 1] tests the S1>BUY events of the match, and S1>BUY stands only under "
          "NOT (NOT S1>BUY), so no match has one. To put a condition on the events the NOT "
          "forbids, name them and test that name: NOT S1>BUY AS n … FILTER n[price > 1]", 58, 6)
    # a condition on a negated event reads S1>BUY of the first leaf only, which comes before
    # the NOT: evaluated (the plain BUY after the NOT is not S1>BUY)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ceql.compile("SELECT * FROM S1, S2 WHERE S1>BUY ; NOT SELL AS n ; BUY "
                            "FILTER n[price > `S1>BUY`.price]") is not None


def test_stream_qualified_variables_without_such_leaves() -> None:
    fails("SELECT * FROM S1, S2 WHERE S2>BUY ; SELL FILTER S1>SELL[x > 1] AND S1 > BOY[x > 1]",
          UnknownVariableError,
          "Unknown variable 'S1>BOY' in FILTER: S1>BOY means the BOY events from stream S1, and "
          "WHERE has no BOY (it has S2>BUY, SELL); write BOY or S1>BOY in the formula or fix the "
          "name (did you mean 'S2>BUY'?)", 68, 8)
    fails("SELECT S3>BUY FROM S1, S2 WHERE S2>BUY ; BUY", UnknownVariableError,
          "Unknown variable 'S3>BUY' in SELECT: S3>BUY means the BUY events from stream S3, and "
          "FROM lists S1, S2; add S3 to FROM or fix the name (did you mean 'S2>BUY'?)", 8, 6)
    fails("SELECT * FROM S1, S2 WHERE A ; NOT BUY ; C FILTER S1>BUY[x > 1]",
          NegatedVariableError,
          "S1>BUY[x > 1] tests the S1>BUY events of the match, and S1>BUY stands only under NOT "
          "(NOT BUY), so no match has one. To put a condition on the events the NOT forbids, "
          "name them and test that name: NOT BUY AS n … FILTER n[x > 1]", 51, 6)


def test_limit_zero_stays_valid() -> None:
    assert check("SELECT * FROM S WHERE (B AS b)+ FILTER [COUNT(b) > 1] LIMIT 0").limit == 0


def test_errors_come_in_text_order() -> None:
    fails("SELECT * FROM S WHERE A AS a ; (B AS b FILTER [price > 1] AND b[x > zz.x])",
          CeqlValidationError,
          "Attribute 'price' in the match condition [price > 1] needs a variable: a match "
          "condition is checked once per match, not on one event. Write b.price (true when every "
          "b event passes), an aggregate such as MAX(b.price), or put the condition in b[…]",
          48, 5)


# ---------------------------------------------------------------- syntax errors

def test_syntax_errors_around_qualified_attributes() -> None:
    syntax("SELECT * FROM S WHERE A AS a ; B AS b FILTER b[price > a.]",
           "Expected an attribute after '.', found ']': a qualified attribute is written "
           "variable.attribute, e.g. a.price", 58, 1)
    syntax("SELECT * FROM S WHERE A AS a ; B AS b FILTER b[x]",
           "Expected a comparison (=, !=, <, <=, >, >=), IN, LIKE, NOT, '%', '*', '+', '-' or "
           "'/' after 'x', found ']'", 49, 1)
    syntax("SELECT * FROM S WHERE A AS a ; B AS b FILTER b[price > a.price.x]",
           "Expected AND, OR, '%', '*', '+', '-', '/' or ']' after 'price', found '.'", 63, 1)


def test_syntax_errors_around_calls() -> None:
    syntax("SELECT * FROM S WHERE (B AS b)+ FILTER b[price > PREV()]",
           "PREV() needs an argument, an attribute of the filtered event: PREV(price)", 50, 6)
    syntax("SELECT * FROM S WHERE (B AS b)+ FILTER [COUNT() > 2]",
           "COUNT() needs an argument, a variable: COUNT(b)", 41, 7)
    syntax("SELECT * FROM S WHERE (B AS b)+ FILTER [SUM() > 2]",
           "SUM() needs an argument, a variable's attribute: SUM(b.price)", 41, 5)
    syntax("SELECT * FROM S WHERE (B AS b)+ FILTER [COUNT(b.x) > 1]",
           "COUNT takes a variable, e.g. COUNT(b)", 47, 3)
    syntax("SELECT * FROM S WHERE (B AS b)+ FILTER [SUM(x) > 1]",
           "SUM takes a variable's attribute, e.g. SUM(b.x)", 45, 1)
    syntax("SELECT * FROM S WHERE (B AS b)+ FILTER [MEDIAN(b.x) > 1]",
           "Unknown function MEDIAN: the functions are PREV(attr), COUNT(Y) and SUM, AVG, MIN, "
           "MAX, FIRST, LAST of Y.attr", 41, 6)
    syntax("SELECT * FROM S WHERE (B AS b)+ FILTER [MAX(DISTINCT b.x) > 1]",
           "MAX(DISTINCT …) is not supported: DISTINCT applies to COUNT, SUM and AVG "
           "(COUNT(DISTINCT b.country)); write MAX(b.x), the same value", 41, 3)
    syntax("SELECT * FROM S WHERE (B AS b)+ FILTER [COUNT(DISTINCT b) >= 3]",
           "COUNT(DISTINCT b) needs an attribute of b: COUNT(b) counts b's events (each one is "
           "distinct), and COUNT(DISTINCT b.attr) is over the distinct values of attr among them",
           41, 17)
    syntax("SELECT * FROM S WHERE (B AS b)+ FILTER [COUNT(DISTINCT country) >= 3]",
           "COUNT(DISTINCT country) needs a variable's attribute: COUNT(DISTINCT b.country) is "
           "over the distinct values of country among the b events of the match", 41, 23)
    syntax("SELECT * FROM S WHERE (B AS b)+ FILTER [COUNT(b, a) > 1]",
           "COUNT(b, a) is not supported in CEQL; COUNT takes one argument: COUNT(b)", 41, 11)
    # no '(' offered after a name that is no function
    syntax("SELECT * FROM S WHERE (B AS b)+ FILTER b[price ]",
           "Expected a comparison (=, !=, <, <=, >, >=), IN, LIKE, NOT, '%', '*', '+', '-' or "
           "'/' after 'price', found ']'", 48, 1)


def test_syntax_errors_around_match_conditions() -> None:
    syntax("SELECT * FROM S WHERE (B AS b)+ FILTER []",
           "Empty brackets: write a condition between them, e.g. [COUNT(b) >= 3]", 40, 2)
    syntax("SELECT * FROM S WHERE (B AS b)+ FILTER b[x > 1] AND [ ]",
           "Empty brackets: write a condition between them, e.g. [COUNT(b) >= 3]", 53, 1)
    syntax("SELECT * FROM S WHERE (B AS b)+ FILTER b[]",
           "Empty brackets: write a condition between them, e.g. b[price > 100]", 41, 2)


def test_syntax_errors_around_stream_qualified_names() -> None:
    err = syntax("SELECT * FROM S WHERE A FILTER price > 10",
                 "Expected '[' after 'price', found '>': a FILTER condition is written "
                 "variable[predicate], e.g. SELL[price > 100]", 38, 1)
    assert err.expected == ("'['",)
    syntax("SELECT * FROM S1 WHERE S1>A FILTER S1>[x > 1]",
           "Expected a variable after '>', found '['", 39, 1)
    syntax("SELECT S1> FROM S1 WHERE S1>A",
           "Expected a variable after '>', found FROM", 12, 4)


# ---------------------------------------------------------------- other languages

# (query, message, column, caret width, the query with the rewrite offered)
FOREIGN: list[tuple[str, str, int, int, str | None]] = [
    # a FILTER condition outside brackets (MATCH_RECOGNIZE's DEFINE style)
    ("SELECT * FROM S WHERE A AS a ; B AS b FILTER b.price > a.price AND a[x = 1]",
     "'b.price' is not supported in CEQL outside brackets; a condition on b's events is "
     "written b[…]: b[price > a.price]",
     46, 17,
     "SELECT * FROM S WHERE A AS a ; B AS b FILTER b[price > a.price] AND a[x = 1]"),
    ("SELECT * FROM S WHERE A AS a ; B AS b FILTER b.price",
     "'b.price' is not supported in CEQL outside brackets; a condition on b's events is "
     "written b[…], e.g. b[price > 0]",
     46, 7,
     "SELECT * FROM S WHERE A AS a ; B AS b FILTER b[price > 0]"),
    # MATCH_RECOGNIZE's PREV, FIRST and LAST with an offset
    ("SELECT * FROM S WHERE (B AS b)+ FILTER b[price > PREV(price, 1)]",
     "PREV(price, 1) (MATCH_RECOGNIZE's PREV with an offset) is not supported in CEQL; CEQL's "
     "PREV(attr) is attr of the previous event of the variable whose brackets it is in (not of "
     "the previous row), with no offset: write PREV(price)",
     50, 14,
     "SELECT * FROM S WHERE (B AS b)+ FILTER b[price > PREV(price)]"),
    ("SELECT * FROM S WHERE (B AS b)+ FILTER b[price > PREV(b.price, 2)]",
     "PREV(b.price, 2) (MATCH_RECOGNIZE's PREV with an offset) is not supported in CEQL; "
     "CEQL's PREV(attr) is attr of the previous event of the variable whose brackets it is in "
     "(not of the previous row), with no offset: write PREV(price) inside b[…]",
     50, 16,
     "SELECT * FROM S WHERE (B AS b)+ FILTER b[price > PREV(price)]"),
    ("SELECT * FROM S WHERE (B AS b)+ FILTER b[price > LAST(b.price, 1)]",
     "LAST(b.price, 1) (MATCH_RECOGNIZE's LAST with an offset) is not supported in CEQL; "
     "LAST(b.price) is the last b event's price, with no offset; for the b event before each "
     "b, write PREV(price) inside b[…]",
     50, 16,
     "SELECT * FROM S WHERE (B AS b)+ FILTER b[price > PREV(price)]"),
    ("SELECT * FROM S WHERE (B AS b)+ FILTER [COUNT(*) > 2]",
     "COUNT(*) is not supported in CEQL; COUNT takes a variable and counts its events in the "
     "match: COUNT(b)",
     41, 8,
     "SELECT * FROM S WHERE (B AS b)+ FILTER [COUNT(b) > 2]"),
    # MATCH_RECOGNIZE's DEFINE and HAVING
    ("SELECT * FROM S WHERE A ; B+ DEFINE B AS B.price > PREV(B.price), A AS price > 10",
     "DEFINE is not supported in CEQL; a condition on a variable goes in FILTER, in that "
     "variable's brackets: FILTER B[price > PREV(price)] AND A[price > 10] (PREV there is the "
     "previous event of the same variable in the match, not the previous row)",
     30, 6,
     "SELECT * FROM S WHERE A ; B+ FILTER B[price > PREV(price)] AND A[price > 10]"),
    ("SELECT * FROM S WHERE A AS a ; B AS b DEFINE b AS b.price > a.price",
     "DEFINE is not supported in CEQL; a condition on a variable goes in FILTER, in that "
     "variable's brackets: FILTER b[price > a.price]",
     39, 6,
     "SELECT * FROM S WHERE A AS a ; B AS b FILTER b[price > a.price]"),
    ("SELECT * FROM S WHERE A ; B HAVING COUNT(B) > 2",
     "HAVING is not supported in CEQL; a condition on the whole match goes in FILTER as a match "
     "condition, in brackets with no variable before them: FILTER [COUNT(b) >= 3 AND "
     "AVG(b.price) > 100]",
     29, 6,
     "SELECT * FROM S WHERE A ; (B AS b)+ FILTER [COUNT(b) >= 3 AND AVG(b.price) > 100]"),
    # SASE's indexed events
    ("SELECT * FROM S WHERE (B AS b)+ FILTER b[i].price > b[i-1].price AND b[x = 1]",
     "SASE's indexed events ('b[i].price > b[i-1].price') are not supported in CEQL; inside "
     "b[…] a name is the current b event's attribute and PREV(attr) the previous one's: "
     "b[price > PREV(price)]",
     40, 25,
     "SELECT * FROM S WHERE (B AS b)+ FILTER b[price > PREV(price)] AND b[x = 1]"),
    ("SELECT * FROM S WHERE (B AS b)+ FILTER b[i].price > b[1].price",
     "SASE's indexed events ('b[i].price > b[1].price') are not supported in CEQL; inside "
     "b[…] a name is the current b event's attribute and PREV(attr) the previous one's: "
     "b[price > FIRST(b.price)]",
     40, 23,
     "SELECT * FROM S WHERE (B AS b)+ FILTER b[price > FIRST(b.price)]"),
    ("SELECT * FROM S WHERE (B AS b)+ FILTER b[i].price > b[i-2].price",
     "SASE's indexed events ('b[i]') are not supported in CEQL; inside b[…] a name is the "
     "current b event's attribute and PREV(attr) the previous one's, e.g. b[price > "
     "PREV(price)]",
     40, 4,
     "SELECT * FROM S WHERE (B AS b)+ FILTER b[price > PREV(price)]"),
    ("SELECT * FROM S WHERE (B AS b)+ FILTER b[price > b[i-1].price]",
     "'b[i-1].price' (SASE) is not supported in CEQL; write PREV(price)",
     50, 12,
     "SELECT * FROM S WHERE (B AS b)+ FILTER b[price > PREV(price)]"),
    ("SELECT * FROM S WHERE (A AS a)+ ; (B AS b)+ FILTER b[price > a[i-1].price]",
     "'a[i-1].price' (SASE) is not supported in CEQL; PREV and plain names read the events of "
     "the variable whose brackets they are in: write a[… PREV(price) …]",
     62, 12,
     None),
    # b[price > a[price]]: another variable's attribute is a.price
    ("SELECT * FROM S WHERE A AS a ; B AS b FILTER b[price > a[price]]",
     "'a[price]' is not supported in CEQL inside a condition; an attribute of a's events is "
     "written a.price",
     56, 8,
     "SELECT * FROM S WHERE A AS a ; B AS b FILTER b[price > a.price]"),
]


@pytest.mark.parametrize(("text", "message", "column", "width", "fixed"), FOREIGN,
                         ids=[c[0][22:] for c in FOREIGN])
def test_constructs_of_other_languages(text: str, message: str, column: int, width: int,
                                       fixed: str | None) -> None:
    syntax(text, message, column, width)
    if fixed is not None:
        check(fixed)  # the rewrite offered is valid CEQL


def test_qualified_names_that_used_to_be_foreign_are_ceql() -> None:
    check("SELECT * FROM S WHERE A AS a ; B AS b FILTER b[temp > a.temp]")
    check("SELECT * FROM S WHERE A AS a ; B AS b FILTER b[b.temp > 1]")
