"""SPAseq's validation errors: :class:`ceql.errors.CeqlValidationError` subclasses, each with
line, column and a caret. Unknown streams and variables raise CEQL's own
:class:`~ceql.errors.UnknownStreamError` and :class:`~ceql.errors.UnknownVariableError`."""

from __future__ import annotations

from ...errors import CeqlValidationError

__all__ = [
    "DuplicateNameError",
    "FilterPlacementError",
    "UnknownGpmError",
    "UnknownPrefixError",
    "UnusedGpmError",
    "WindowError",
]


class UnknownGpmError(CeqlValidationError):
    """SEQ names a GPM that no ``DEFINE GPM`` defines."""


class UnusedGpmError(CeqlValidationError):
    """A GPM is defined but SEQ does not use it."""


class DuplicateNameError(CeqlValidationError):
    """A GPM, stream name or stream IRI defined twice, or a GPM used twice in SEQ."""


class UnknownPrefixError(CeqlValidationError):
    """A prefixed name whose prefix no ``PREFIX`` declares."""


class WindowError(CeqlValidationError):
    """No ``WITHIN``, or a window that is not longer than 0."""


class FilterPlacementError(CeqlValidationError):
    """A FILTER reading other GPMs' variables where it cannot be a condition on its GPM's
    event: nested in OPTIONAL, UNION or GRAPH, or reading a GPM that comes later in SEQ."""
