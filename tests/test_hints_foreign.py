"""Constructs from other languages (regex quantifiers, SQL, MATCH_RECOGNIZE, SASE, Esper) get
"X is not supported in CEQL; write …" with line, column and caret, and every rewrite offered
compiles (and, where it claims a meaning, has it)."""

from __future__ import annotations

import pytest

import ceql
from ceql.errors import CeqlSyntaxError

# (query, message, line, column, caret width, the query with the rewrite offered, if concrete)
CASES: list[tuple[str, str, int, int, int, str | None]] = [
    # SQL's and MATCH_RECOGNIZE's SELECT of attributes: CEQL selects variables
    ('SELECT a.amount FROM S WHERE A AS a ; B AS b',
     "SELECT a.amount is not supported in CEQL: SELECT lists variables, and a match reports "
     "their events with every attribute. Write SELECT a and read amount from a's events in each "
     "match (in Python: match.events, with match.variables['a'] the positions of a's events; in "
     "Spark: MATCH_CEQL's output column a, an array of a's events, so a[0].amount)",
     1, 8, 8,
     'SELECT a FROM S WHERE A AS a ; B AS b'),
    ('SELECT NEXT a.amount, b.amount, c FROM S WHERE A AS a ; B AS b ; C AS c',
     "SELECT a.amount, b.amount, c is not supported in CEQL: SELECT lists variables, and a match "
     "reports their events with every attribute. Write SELECT a, b, c and read amount from a's "
     "events in each match (in Python: match.events, with match.variables['a'] the positions of "
     "a's events; in Spark: MATCH_CEQL's output column a, an array of a's events, so "
     "a[0].amount)",
     1, 13, 21,
     'SELECT NEXT a, b, c FROM S WHERE A AS a ; B AS b ; C AS c'),
    # MATCH_RECOGNIZE's AFTER MATCH SKIP: CONSUME BY, or every match (the default)
    ('SELECT * FROM S WHERE A ; B AFTER MATCH SKIP PAST LAST ROW',
     "AFTER MATCH SKIP PAST LAST ROW (MATCH_RECOGNIZE) is not supported in CEQL; write CONSUME "
     "BY ANY: once a match is output, later matches start after its last event (CONSUME BY "
     "comes after PARTITION BY and WITHIN, before LIMIT)",
     1, 29, 30,
     'SELECT * FROM S WHERE A ; B CONSUME BY ANY'),
    ('SELECT * FROM S WHERE A ; B PARTITION BY [u] WITHIN 5 EVENTS AFTER MATCH SKIP PAST LAST '
     'ROW LIMIT 1',
     "AFTER MATCH SKIP PAST LAST ROW (MATCH_RECOGNIZE) is not supported in CEQL; write CONSUME "
     "BY PARTITION (a match's events are used up in its partition, as MATCH_RECOGNIZE skips "
     "within one): once a match is output, later matches start after its last event (CONSUME "
     "BY comes after PARTITION BY and WITHIN, before LIMIT)",
     1, 62, 30,
     'SELECT * FROM S WHERE A ; B PARTITION BY [u] WITHIN 5 EVENTS CONSUME BY PARTITION '
     'LIMIT 1'),
    ('SELECT * FROM S WHERE A ; B WITHIN 5 EVENTS AFTER MATCH SKIP TO NEXT ROW',
     "AFTER MATCH SKIP TO NEXT ROW (MATCH_RECOGNIZE) is not supported in CEQL; leave it out: "
     "CEQL reports every match, overlapping ones included (SELECT ALL, the default); for one "
     "match per end event write SELECT NEXT * or SELECT LAST * (docs/strategies.md)",
     1, 45, 28,
     'SELECT * FROM S WHERE A ; B WITHIN 5 EVENTS'),
    ('SELECT * FROM S WHERE A AS a ; B AFTER MATCH SKIP TO LAST a',
     "AFTER MATCH SKIP TO LAST a (MATCH_RECOGNIZE) is not supported in CEQL; CEQL cannot resume "
     "from an event of the match; the nearest are CONSUME BY ANY (later matches start after the "
     "whole match) and the default, every match",
     1, 34, 26,
     None),
    ('SELECT * FROM S WHERE A ; B* ; C',
     "'B*' (zero or more) is not supported in CEQL; write A ; B+ ; C OR A ; C (the OR adds "
     'the matches without B)',
     1, 27, 2,
     'SELECT * FROM S WHERE A ; B+ ; C OR A ; C'),
    ('SELECT * FROM S WHERE B* ; C FILTER B[x > 1]',
     "'B*' (zero or more) is not supported in CEQL; write B+ ; C OR C (the OR adds the "
     'matches without B)',
     1, 23, 2,
     'SELECT * FROM S WHERE B+ ; C OR C FILTER B[x > 1]'),
    ('SELECT * FROM S WHERE A*',
     "'A*' (zero or more) is not supported in CEQL; a pattern needs at least one event: write "
     'A+, and for the matches without A join the sequence without it by OR',
     1, 23, 2,
     'SELECT * FROM S WHERE A+'),
    ('SELECT * FROM S WHERE A ; B? ; C',
     "'B?' (optional) is not supported in CEQL; write A ; B ; C OR A ; C (the OR adds the "
     'matches without B)',
     1, 27, 2,
     'SELECT * FROM S WHERE A ; B ; C OR A ; C'),
    ('SELECT * FROM S WHERE (A : B? : C)+',
     "'B?' (optional) is not supported in CEQL; write A : B : C OR A : C (the OR adds the "
     'matches without B)',
     1, 28, 2,
     'SELECT * FROM S WHERE (A : B : C OR A : C)+'),
    ('SELECT * FROM S WHERE A{3}',
     "'A{3}' (exactly 3 times) is not supported in CEQL; write A ; A ; A (';' lets other "
     "events come between, ':' does not)",
     1, 23, 4,
     'SELECT * FROM S WHERE A ; A ; A'),
    ('SELECT * FROM S WHERE X ; A{2,4} ; Y',
     "'A{2,4}' (2 to 4 times) is not supported in CEQL; write X ; (A ; A OR A ; A ; A OR A ; "
     "A ; A ; A) ; Y (';' lets other events come between, ':' does not)",
     1, 27, 6,
     'SELECT * FROM S WHERE X ; (A ; A OR A ; A ; A OR A ; A ; A ; A) ; Y'),
    ('SELECT * FROM S WHERE A{2,}',
     "'A{2,}' (2 or more times) is not supported in CEQL; write A ; A+ (';' lets other events "
     "come between, ':' does not)",
     1, 23, 5,
     'SELECT * FROM S WHERE A ; A+'),
    ('SELECT * FROM S WHERE A ; B{0,2}',
     "'B{0,2}' (0 to 2 times) is not supported in CEQL; write A ; (B OR B ; B) OR A (the OR "
     'adds the matches without B)',
     1, 27, 6,
     'SELECT * FROM S WHERE A ; (B OR B ; B) OR A'),
    ('SELECT * FROM S WHERE (A ; B){2} WITHIN 5 EVENTS',
     "'(A ; B){2}' (exactly 2 times) is not supported in CEQL; write (A ; B) ; (A ; B) (';' "
     "lets other events come between, ':' does not)",
     1, 23, 10,
     'SELECT * FROM S WHERE (A ; B) ; (A ; B) WITHIN 5 EVENTS'),
    ('SELECT * FROM S WHERE A{20}',
     "'A{20}' (exactly 20 times) is not supported in CEQL; write A 20 times joined by ';' "
     "(';' lets other events come between, ':' does not)",
     1, 23, 5,
     None),
    ('SELECT * FROM S WHERE A{0}',
     "'A{0}' (exactly 0 times) is not supported in CEQL; it matches no event: leave it out",
     1, 23, 4,
     'SELECT * FROM S WHERE A'),
    ('SELECT * FROM S WHERE A+?',
     "'A+?' (a lazy quantifier) is not supported in CEQL; write A+: CEQL reports every match, "
     'and SELECT NEXT * or SELECT LAST * keeps one per end event',
     1, 23, 3,
     'SELECT * FROM S WHERE A+'),
    ('SELECT * FROM S\nWHERE SELL AS s FOLLOWED BY BUY AS b',
     "FOLLOWED BY is not supported in CEQL; write SELL AS s ; BUY AS b (';' lets other events "
     "come between, ':' does not)",
     2, 17, 11,
     'SELECT * FROM S\nWHERE SELL AS s ; BUY AS b'),
    ('SELECT * FROM S WHERE A AS a FOLLOWED BY (B OR C)+ AS b',
     "FOLLOWED BY is not supported in CEQL; write A AS a ; (B OR C)+ AS b (';' lets other "
     "events come between, ':' does not)",
     1, 30, 11,
     'SELECT * FROM S WHERE A AS a ; (B OR C)+ AS b'),
    ('SELECT * FROM S WHERE A -> S>B',
     "'->' is not supported in CEQL; write A ; S>B (';' lets other events come between, ':' "
     'does not)',
     1, 25, 2,
     'SELECT * FROM S WHERE A ; S>B'),
    ('SELECT * FROM S WHERE A THEN B',
     "THEN is not supported in CEQL; write A ; B (';' lets other events come between, ':' "
     'does not)',
     1, 25, 4,
     'SELECT * FROM S WHERE A ; B'),
    ('SELECT * FROM S WHERE A FILTER A[x IN (1, 2)]',
     'IN (…) is not supported in CEQL; write x IN {1, 2} (a set is written in braces)',
     1, 36, 9,
     'SELECT * FROM S WHERE A FILTER A[x IN {1, 2}]'),
    ("SELECT * FROM S WHERE A FILTER A[name NOT IN ('a', 'b')]",
     "IN (…) is not supported in CEQL; write name NOT IN {'a', 'b'} (a set is written in "
     'braces)',
     1, 39, 17,
     "SELECT * FROM S WHERE A FILTER A[name NOT IN {'a', 'b'}]"),
    ('SELECT * FROM S WHERE A FILTER A[x BETWEEN 1 AND 5]',
     'BETWEEN is not supported in CEQL; write x IN RANGE(1, 5) (inclusive at both ends)',
     1, 36, 15,
     'SELECT * FROM S WHERE A FILTER A[x IN RANGE(1, 5)]'),
    ('SELECT * FROM S WHERE A FILTER A[x * 2 NOT BETWEEN -1 AND y + 1 AND z = 1]',
     'BETWEEN is not supported in CEQL; write x * 2 NOT IN RANGE(-1, y + 1) (inclusive at '
     'both ends)',
     1, 40, 24,
     'SELECT * FROM S WHERE A FILTER A[x * 2 NOT IN RANGE(-1, y + 1) AND z = 1]'),
    ('SELECT * FROM S WHERE A FILTER A[x IS NULL]',
     'IS NULL is not supported in CEQL, and CEQL has no test for a missing value: a missing '
     'or NULL attribute makes every comparison on it false, and NOT of such a comparison '
     'false too',
     1, 36, 7,
     None),
    ('SELECT * FROM S WHERE A FILTER A[x IS NOT NULL AND x > 1]',
     'IS NOT NULL is not supported in CEQL, and not needed: a comparison is false when its '
     'attribute is missing or NULL (x[price > 0] keeps only events that have a price)',
     1, 36, 11,
     'SELECT * FROM S WHERE A FILTER A[x > 1]'),
    ('SELECT * FROM S WHERE A && B',
     "'&&' is not supported in CEQL; write AND",
     1, 25, 2,
     'SELECT * FROM S WHERE A AND B'),
    ('SELECT * FROM S WHERE A FILTER A[x = 1 && y = 2]',
     "'&&' is not supported in CEQL; write AND",
     1, 40, 2,
     'SELECT * FROM S WHERE A FILTER A[x = 1 AND y = 2]'),
    ('SELECT * FROM S WHERE A OR B FILTER A[x = 1] || B[y = 2]',
     "'||' is not supported in CEQL; write OR",
     1, 46, 2,
     'SELECT * FROM S WHERE A OR B FILTER A[x = 1] OR B[y = 2]'),
    ('SELECT * FROM S WHERE A ; !B ; C',
     "'!' is not supported in CEQL; the absence of an event is written NOT: A ; NOT B ; C",
     1, 27, 1,
     'SELECT * FROM S WHERE A ; NOT B ; C'),
    ('SELECT * FROM S WHERE A AS a ; !(B OR C) ; D WITHIN 5 EVENTS',
     "'!' is not supported in CEQL; the absence of an event is written NOT: A AS a ; "
     "NOT (B OR C) ; D",
     1, 32, 1,
     'SELECT * FROM S WHERE A AS a ; NOT (B OR C) ; D WITHIN 5 EVENTS'),
    ('SELECT * FROM S WHERE A NOT B ; C',
     "'A NOT B' is not supported in CEQL; a NOT is an element of a ';' sequence: A ; NOT B ; "
     "C matches A then C with no B between them (a NOT at the end of the pattern also needs "
     "WITHIN)",
     1, 23, 7,
     'SELECT * FROM S WHERE A ; NOT B ; C'),
    ('SELECT * FROM S WHERE A ; NOT B* ; C',
     "'B*' (zero or more) is not supported in CEQL after NOT; NOT B already forbids every B "
     "event in its gap: write A ; NOT B ; C",
     1, 31, 2,
     'SELECT * FROM S WHERE A ; NOT B ; C'),
    ('SELECT * FROM S WHERE A ; B? ; NOT D ; E',
     "'B?' (optional) is not supported in CEQL; write A ; B ; NOT D ; E OR A ; NOT D ; E (the "
     "OR adds the matches without B)",
     1, 27, 2,
     'SELECT * FROM S WHERE A ; B ; NOT D ; E OR A ; NOT D ; E'),
    ('SELECT * FROM S WHERE A ; NOT B ; C? ; NOT D ; E',
     "'C?' (optional) is not supported in CEQL; write A ; NOT B ; C ; NOT D ; E OR A ; NOT "
     "(B OR D) ; E (the OR adds the matches without C, where the NOTs around it make one)",
     1, 35, 2,
     'SELECT * FROM S WHERE A ; NOT B ; C ; NOT D ; E OR A ; NOT (B OR D) ; E'),
    ('SELECT * FROM S WHERE A FILTER A[!(x = 1)]',
     "'!' is not supported in CEQL; write NOT, or != for 'not equal'",
     1, 34, 1,
     'SELECT * FROM S WHERE A FILTER A[NOT (x = 1)]'),
    ('SELECT * FROM S WHERE A, B',
     "',' between formulas is not supported in CEQL; write A ; B for one after the other, or "
     'A OR B for either',
     1, 24, 1,
     'SELECT * FROM S WHERE A ; B'),
    ('SELECT * FROM S WHERE A B',
     "'A B' is not supported in CEQL; write A ; B for B after A, or A AS B to name the event "
     'B',
     1, 23, 3,
     'SELECT * FROM S WHERE A ; B'),
    ('SELECT * FROM S WHERE A a ; B b',
     "'A a' is not supported in CEQL; write A ; a for a after A, or A AS a to name the event "
     'a',
     1, 23, 3,
     'SELECT * FROM S WHERE A AS a ; B AS b'),
    ('SELECT * FROM S WHERE A ; B HAVING COUNT(B) > 2',
     'HAVING is not supported in CEQL; a condition on the whole match goes in FILTER as a match '
     'condition, in brackets with no variable before them: FILTER [COUNT(b) >= 3 AND '
     'AVG(b.price) > 100]',
     1, 29, 6,
     None),  # the rewrite is checked in tests/test_correlation_language.py
    ('SELECT * FROM S WHERE A ; B GROUP BY name, id',
     'GROUP BY is not supported in CEQL; to match within each key write PARTITION BY [name, '
     'id]',
     1, 29, 8,
     'SELECT * FROM S WHERE A ; B PARTITION BY [name, id]'),
    ('SELECT * FROM S WHERE A ; B ORDER BY ts',
     'ORDER BY is not supported in CEQL; matches come out in the order of the events that '
     'complete them: leave it out',
     1, 29, 8,
     'SELECT * FROM S WHERE A ; B'),
    ('SELECT * FROM S MATCH_RECOGNIZE (PATTERN (A B+ C))',
     'MATCH_RECOGNIZE is not supported in CEQL; a CEQL query is the pattern itself: SELECT * '
     "FROM S WHERE A : B:+ : C FILTER A[price > 10] (':' for the next event, ';' for any "
     'later one)',
     1, 17, 15,
     'SELECT * FROM S WHERE A : B:+ : C FILTER A[price > 10]'),
    ('SELECT * FROM S PATTERN (A B+ C)',
     'PATTERN (…) (MATCH_RECOGNIZE) is not supported in CEQL; write the pattern after WHERE, '
     "':' for the next event and ';' for any later one: WHERE A : B:+ : C; conditions from "
     'DEFINE go in FILTER, e.g. FILTER A[price > 10]',
     1, 17, 16,
     'SELECT * FROM S WHERE A : B:+ : C FILTER A[price > 10]'),
    ('SELECT * FROM S WHERE PATTERN (A B* C)',
     'PATTERN (…) (MATCH_RECOGNIZE) is not supported in CEQL; write the pattern after WHERE, '
     "':' for the next event and ';' for any later one: WHERE A : B:+ : C; conditions from "
     'DEFINE go in FILTER, e.g. FILTER A[price > 10]',
     1, 23, 9,
     'SELECT * FROM S WHERE A : B:+ : C'),
    ('SELECT * FROM S PATTERN SEQ(A a, B+ b[], C c)',
     "PATTERN SEQ(…) (SASE) is not supported in CEQL; write the pattern after WHERE with ';' "
     'between the events: WHERE A AS a ; B+ AS b ; C AS c',
     1, 17, 29,
     'SELECT * FROM S WHERE A AS a ; B+ AS b ; C AS c'),
    ('SELECT * FROM S WHERE SEQ(A a, B b)',
     "SEQ(…) (SASE) is not supported in CEQL; write the pattern after WHERE with ';' between "
     'the events: WHERE A AS a ; B AS b',
     1, 23, 13,
     'SELECT * FROM S WHERE A AS a ; B AS b'),
    ('SELECT * FROM S WHERE A ; B DEFINE A AS price > 10',
     "DEFINE is not supported in CEQL; a condition on a variable goes in FILTER, in that "
     "variable's brackets: FILTER A[price > 10]",
     1, 29, 6,
     'SELECT * FROM S WHERE A ; B FILTER A[price > 10]'),
    ('SELECT * FROM S WHERE EVERY A -> B',
     'EVERY is not supported in CEQL; CEQL reports every match by default (SELECT ALL): leave '
     'it out',
     1, 23, 5,
     None),
    # (b[temp > a.temp] and b[b.temp > 1] are CEQL now: tests/test_correlation_language.py)
    ('SELECT * FROM S WHERE A AS a ; B AS b FILTER a.price > 10 AND b[x = 1]',
     "'a.price' is not supported in CEQL outside brackets; a condition on a's events is "
     'written a[…]: a[price > 10]',
     1, 46, 12,
     'SELECT * FROM S WHERE A AS a ; B AS b FILTER a[price > 10] AND b[x = 1]'),
    ('SELECT * FROM S WHERE A WITHIN 10 s',
     "'10 s' is not supported in CEQL; write 10 SECONDS",
     1, 32, 4,
     'SELECT * FROM S WHERE A WITHIN 10 SECONDS'),
    ('SELECT * FROM S WHERE A WITHIN 2 days',
     "'2 days' is not supported in CEQL; write 48 HOURS",
     1, 32, 6,
     'SELECT * FROM S WHERE A WITHIN 48 HOURS'),
    ('SELECT * FROM S WHERE A WITHIN 500 us',
     "'500 us' is not supported in CEQL; write 0.5 MILLISECONDS",
     1, 32, 6,
     'SELECT * FROM S WHERE A WITHIN 0.5 MILLISECONDS'),
    ("SELECT * FROM S WHERE A WITHIN INTERVAL '1' DAY",
     "DAY is not supported in CEQL as a unit; write INTERVAL '24' HOURS",
     1, 32, 16,
     "SELECT * FROM S WHERE A WITHIN INTERVAL '24' HOURS"),
    ("SELECT * FROM S WHERE A FILTER A[x RLIKE 'a']",
     "RLIKE is not supported in CEQL; LIKE takes a regular expression here: x LIKE '^ab+'",
     1, 36, 5,
     "SELECT * FROM S WHERE A FILTER A[x LIKE '^ab+']"),
    ("SELECT * FROM S WHERE A FILTER A[x ILIKE 'a']",
     'ILIKE is not supported in CEQL; LIKE takes a regular expression here, and (?i) at its '
     "start ignores case: x LIKE '(?i)^abc'",
     1, 36, 5,
     "SELECT * FROM S WHERE A FILTER A[x LIKE '(?i)^abc']"),
]


@pytest.mark.parametrize(("text", "message", "line", "column", "width", "fixed"), CASES,
                         ids=[c[0][22:] for c in CASES])
def test_foreign_construct_is_explained(text: str, message: str, line: int, column: int,
                                        width: int, fixed: str | None) -> None:
    with pytest.raises(CeqlSyntaxError) as info:
        ceql.compile(text)
    err = info.value
    assert err.message == message
    assert (err.line, err.column) == (line, column)
    assert err.snippet == f"{text.splitlines()[line - 1]}\n{' ' * (column - 1)}{'^' * width}"
    assert str(err).startswith(f"{message} (line {line}, column {column})\n")
    if fixed is not None:
        ceql.compile(fixed)  # the rewrite offered is CEQL


def _sets(text: str, types: str) -> set[tuple[int, ...]]:
    events = [{"type": t} for t in types.split()]
    return {m.positions for m in ceql.compile(text).run(events)}


def test_rewrites_mean_what_the_quantifier_meant() -> None:
    # zero or more B between A and C: any subset of the Bs
    assert _sets("SELECT * FROM S WHERE A ; B+ ; C OR A ; C", "A B B C") == {
        (0, 3), (0, 1, 3), (0, 2, 3), (0, 1, 2, 3)}
    # an optional B: none or one of them
    assert _sets("SELECT * FROM S WHERE A ; B ; C OR A ; C", "A B B C") == {
        (0, 3), (0, 1, 3), (0, 2, 3)}
    # two to four As
    assert _sets("SELECT * FROM S WHERE X ; (A ; A OR A ; A ; A OR A ; A ; A ; A) ; Y",
                 "X A A A Y") == {(0, 1, 2, 4), (0, 1, 3, 4), (0, 2, 3, 4), (0, 1, 2, 3, 4)}
    # two or more As
    assert _sets("SELECT * FROM S WHERE A ; A+", "A A A") == {
        (0, 1), (0, 2), (1, 2), (0, 1, 2)}


def test_symbols_that_are_ceql_elsewhere_keep_their_meaning() -> None:
    ceql.compile("SELECT * FROM S WHERE A FILTER A[x * 2 > 1 AND y IN {1, 2} AND z IN RANGE(1, 5) "
                 "AND w != 1 AND v == 2 AND NOT u LIKE 'a'] WITHIN 10 SECONDS")


def test_a_construct_on_a_later_line_is_located_there() -> None:
    text = "SELECT *\nFROM S\nWHERE A ;\n  B{2}\nWITHIN 3 EVENTS"
    with pytest.raises(CeqlSyntaxError) as info:
        ceql.compile(text)
    err = info.value
    assert err.message == ("'B{2}' (exactly 2 times) is not supported in CEQL; write A ; B ; B "
                           "(';' lets other events come between, ':' does not)")
    assert (err.line, err.column) == (4, 3)
    assert err.snippet == "  B{2}\n  ^^^^"


@pytest.mark.parametrize(("text", "found", "keyword"), [
    ("SELECT * FROM S WHERE A LIMT 5", "LIMT", "LIMIT"),
    ("SELECT * FROM S WHERE A WITHN 5 EVENTS", "WITHN", "WITHIN"),
    ("SELECT * FROM S WHERE A FILTR A[x > 1]", "FILTR", "FILTER"),
    ("SELECT * FROM S WHERE A PARTITON BY [x]", "PARTITON", "PARTITION BY"),
])
def test_a_misspelt_keyword_is_not_read_as_two_event_types(text: str, found: str,
                                                          keyword: str) -> None:
    with pytest.raises(CeqlSyntaxError) as info:
        ceql.compile(text)
    assert info.value.message == (
        "Expected AND, AS, CONSUME, FILTER, LIMIT, OR, PARTITION, WITHIN, '+', ':', ':+', ';', "
        f"'>' or end of query after 'A', found name '{found}' (did you mean {keyword}?)")
    assert (info.value.line, info.value.column) == (1, 25)
