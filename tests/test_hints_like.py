"""LIKE is a regular expression in CEQL: a pattern written with SQL's % warns at compile time,
saying what it means here and the regex for what SQL meant."""

from __future__ import annotations

import warnings

import pytest

import ceql
from ceql.analysis import sql_like_to_regex
from ceql.errors import LikePatternWarning


@pytest.mark.parametrize(("sql", "regex"), [
    ("u%", "^u"),
    ("%x_y", "x.y$"),
    ("%ab%", "ab"),
    ("a%b", "^a.*b$"),
    ("%%a%%", "a"),
    ("%", ".*"),
    ("a.b%", r"^a\.b"),
    ("(1)_%", r"^\(1\)."),
])
def test_sql_like_to_regex(sql: str, regex: str) -> None:
    assert sql_like_to_regex(sql) == regex


def _names(events: list[str], query: str) -> list[str]:
    rows = [{"type": "A", "name": n} for n in events]
    return [events[m.end_position] for m in ceql.compile(query).run(rows)]


def test_the_regex_offered_means_what_sql_meant() -> None:
    names = ["user", "u%", "bu", "axby", "axbyz", "xy"]
    assert _names(names, "SELECT * FROM S WHERE A FILTER A[name LIKE '^u']") == ["user", "u%"]
    assert _names(names, "SELECT * FROM S WHERE A FILTER A[name LIKE 'x.y$']") == ["axby"]
    # ... while the SQL pattern itself matches only values containing 'u%'
    with pytest.warns(LikePatternWarning):
        assert _names(names, "SELECT * FROM S WHERE A FILTER A[name LIKE 'u%']") == ["u%"]


def test_warning_names_each_pattern_with_its_place_and_fix() -> None:
    text = ("SELECT * FROM S WHERE A ; B\n"
            "FILTER A[name LIKE 'u%'] AND B[NOT (page LIKE '%x_y')]\nWITHIN 5 EVENTS")
    with pytest.warns(LikePatternWarning) as record:
        ceql.compile(text)
    assert len(record) == 1
    assert str(record[0].message) == (
        "LIKE takes a regular expression in CEQL (RE2, matching any part of the value), not "
        "SQL's % and _ wildcards: LIKE 'u%' (line 2, column 10) matches values containing a "
        "match of the regular expression 'u%', where % and _ are ordinary characters; for SQL's "
        "meaning write LIKE '^u'; LIKE '%x_y' (line 2, column 37) matches values containing a "
        "match of the regular expression '%x_y', where % and _ are ordinary characters; for "
        "SQL's meaning write LIKE 'x.y$'. Write \\% for a literal % to silence this warning.")
    assert record[0].filename == __file__  # points at the caller's line


def test_warned_on_every_compile_even_when_cached() -> None:
    text = "SELECT * FROM S WHERE A FILTER A[name LIKE '%tail'] WITHIN 3 EVENTS"
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        first = ceql.compile(text)
        second = ceql.compile(text)
    assert first is second  # the cache answered the second call
    assert [w.category for w in record] == [LikePatternWarning, LikePatternWarning]


@pytest.mark.parametrize("pattern", ["^u", "page_view", r"100\%", "a.*b", ""])
def test_no_warning_without_an_sql_wildcard(pattern: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ceql.compile(f"SELECT * FROM S WHERE A FILTER A[name LIKE '{pattern}'] WITHIN 3 EVENTS")
