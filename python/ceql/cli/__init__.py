"""The ``ceql`` command line.

``ceql run QUERY_FILE --input EVENTS`` evaluates a CEQL query over a CSV, Parquet or JSON-lines
file, batch by batch, and writes one JSON line (or CSV/Parquet row) per match;
``ceql explain QUERY_FILE`` describes the automaton the query compiles to.

Modules: :mod:`.arguments` (the parser, ``main``, the commands), :mod:`.readers` (input),
:mod:`.sinks` (output), :mod:`.progress` (standard error), :mod:`.local_run` and
:mod:`.spark_run` (the two engines), :mod:`.query` and :mod:`.errors` (shared by them).
"""

from __future__ import annotations

from .arguments import main

__all__ = ["main"]
