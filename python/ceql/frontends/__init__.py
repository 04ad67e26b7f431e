"""Front ends: one folder per query language, each turning text into the IR (:mod:`ceql.ir`).

A front end owns its grammar (package data), parser, diagnostics and formatter; everything after
the IR is shared, so a second language is a sibling folder.
"""

__all__: list[str] = []
