"""The errors of the RDF layer, under ceql's error tree (:mod:`ceql.errors`)."""

from __future__ import annotations

from ceql.errors import CeqlInputError, CeqlValidationError

__all__ = ["GpmError", "RdfInputError"]


class RdfInputError(CeqlInputError):
    """An event graph or a static dataset that cannot be read: bad RDF (with its line and
    column when the parser gives them), a bad triple, an unknown format.

    ``source`` names what was read (``"event 3"``, ``"dataset file kb.ttl"``); ``line`` and
    ``column`` are 1-based, 0 when unknown.
    """

    def __init__(self, message: str, *, source: str = "", line: int = 0, column: int = 0,
                 snippet: str = "") -> None:
        self.message = message
        self.source = source
        self.line = line
        self.column = column
        self.snippet = snippet
        tail = f"\n{snippet}" if snippet else ""
        super().__init__(f"{source}: {message}{tail}" if source else f"{message}{tail}")


class GpmError(CeqlValidationError):
    """A graph pattern (GPM) that is not a SPARQL 1.1 SELECT query the engine can run."""
