"""The error tree: one root, and each kind also the builtin a caller would catch for it."""

from __future__ import annotations

from typing import Any

import pytest

import ceql
from ceql import errors
from ceql.errors import (
    CeqlError,
    CeqlInputError,
    CeqlResourceError,
    CeqlSyntaxError,
    CeqlTypeError,
    CeqlValidationError,
    NegatedVariableError,
    NegationError,
    TypeClashError,
    UnknownAttributeError,
    UnknownStreamError,
    UnknownVariableError,
    UnsafeVariableError,
)

BUILTINS = (ValueError, TypeError, RuntimeError, MemoryError, LookupError, ArithmeticError)

# every class, the one builtin among BUILTINS it is, and an instance
TREE: dict[type[CeqlError], tuple[type[Exception] | None, CeqlError]] = {
    CeqlError: (None, CeqlError("x")),
    CeqlSyntaxError: (ValueError, CeqlSyntaxError("x", line=1, column=2, snippet="A\n ^")),
    CeqlValidationError: (ValueError, CeqlValidationError("x")),
    UnknownVariableError: (ValueError, UnknownVariableError("x", line=1, column=1)),
    UnknownStreamError: (ValueError, UnknownStreamError("x")),
    UnknownAttributeError: (ValueError, UnknownAttributeError("x")),
    TypeClashError: (ValueError, TypeClashError("x")),
    UnsafeVariableError: (ValueError, UnsafeVariableError("x")),
    NegationError: (ValueError, NegationError("x")),
    NegatedVariableError: (ValueError, NegatedVariableError("x")),
    CeqlInputError: (ValueError, CeqlInputError("x")),
    CeqlResourceError: (RuntimeError, CeqlResourceError("x")),
    CeqlTypeError: (TypeError, CeqlTypeError("x")),
}


def test_the_table_covers_every_error_class() -> None:
    public = {getattr(errors, n) for n in errors.__all__}
    assert {c for c in public if isinstance(c, type) and issubclass(c, CeqlError)} == set(TREE)


def test_every_warning_is_a_ceql_warning_and_a_user_warning() -> None:
    warns = {getattr(errors, n) for n in errors.__all__ if n.endswith("Warning")}
    assert {w.__name__ for w in warns} == {
        "CeqlWarning", "UnseenNameWarning", "LikePatternWarning", "ValueTypeWarning",
        "UnboundedOutputWarning", "ExponentialChoiceWarning", "VacuousConditionWarning"}
    for w in warns:
        assert issubclass(w, errors.CeqlWarning) and issubclass(w, UserWarning)
        assert not issubclass(w, CeqlError)


@pytest.mark.parametrize("cls", TREE, ids=lambda c: c.__name__)
def test_each_class_is_a_ceql_error_and_exactly_its_builtin(cls: type[CeqlError]) -> None:
    builtin, instance = TREE[cls]
    assert type(instance) is cls
    assert isinstance(instance, CeqlError)
    assert [b for b in BUILTINS if isinstance(instance, b)] == ([builtin] if builtin else [])


def test_validation_subclasses_stay_validation_errors() -> None:
    for cls in (UnknownVariableError, UnknownStreamError, UnknownAttributeError, TypeClashError,
                UnsafeVariableError, NegationError, NegatedVariableError):
        assert issubclass(cls, CeqlValidationError)


def test_the_builtin_base_keeps_the_message_and_fields() -> None:
    err = CeqlSyntaxError("Unexpected ';'", line=1, column=23, snippet="A ;\n  ^",
                          expected=("NAME",))
    assert (err.line, err.column, err.expected) == (1, 23, ("NAME",))
    assert str(err) == "Unexpected ';' (line 1, column 23)\nA ;\n  ^"
    assert err.args == (str(err),)


def _raised(fn: Any, catch: type[BaseException]) -> BaseException:
    try:
        fn()
    except catch as exc:
        return exc
    raise AssertionError(f"nothing raised (expected {catch.__name__})")


def test_except_value_error_catches_a_syntax_error() -> None:
    err = _raised(lambda: ceql.compile("SELECT * FROM S WHERE A ;"), ValueError)
    assert isinstance(err, CeqlSyntaxError)


def test_except_value_error_catches_a_validation_error() -> None:
    err = _raised(lambda: ceql.compile("SELECT * FROM S WHERE A FILTER x[v > 1]"), ValueError)
    assert isinstance(err, UnknownVariableError)


def test_except_value_error_catches_bad_events() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B")
    err = _raised(lambda: list(q.run([{"type": "A", "t": 2}, {"type": "B", "t": 1}], time="t")),
                  ValueError)
    assert isinstance(err, CeqlInputError)


def test_except_runtime_error_catches_the_state_cap() -> None:
    q = ceql.compile("SELECT * FROM S WHERE (A ; B)+ ; (A OR B) ; C", max_states=2)
    err = _raised(lambda: list(q.run([{"type": t} for t in "ABABC"])), RuntimeError)
    assert isinstance(err, CeqlResourceError)
    assert not isinstance(err, (ValueError, MemoryError))


@pytest.mark.parametrize("query", [b"SELECT * FROM S WHERE A", None, 3])
def test_except_type_error_catches_a_query_that_is_not_a_string(query: Any) -> None:
    err = _raised(lambda: ceql.compile(query), TypeError)
    assert isinstance(err, CeqlTypeError)
    assert type(query).__name__ in str(err)
