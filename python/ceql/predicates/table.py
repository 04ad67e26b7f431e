"""The atoms of one query, numbered once, and the classes of events over them.

:class:`AtomTable` wires the row path (:mod:`.row`) and the column path (:mod:`.arrow`) of
each atom and packs their codes into class integers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from ..ir import nodes as _ast
from .arrow import (
    BatchAtom,
    BatchContext,
    Classes,
    Codes,
    Fallback,
    assemble,
    compile_batch_atom,
    row_fallback,
    string_weight,
)
from .atoms import Atom, StreamIs, TypeIs, attr_names, structural_key
from .row import RowFn, check_regex, compile_row_atom

__all__ = ["AtomTable"]

_log = logging.getLogger(__name__)


class AtomTable:
    """The atoms of one query, in index order, with their row and batch evaluators.

    A failure of the column path other than its planned fallbacks is a bug; the row path still
    gives the result, and the first such failure of each atom is logged as a warning, with its
    traceback, on the ``ceql.predicates`` logger.
    """

    def __init__(self, *, type_key: str = "type", stream_key: str = "stream") -> None:
        self.type_key = type_key
        self.stream_key = stream_key
        self._atoms: list[Atom] = []
        self._index: dict[Any, int] = {}
        self._row_fns: list[RowFn] = []
        self._batch_fns: list[BatchAtom] = []
        self._attr_names: list[tuple[str, ...]] = []
        self._row_class: Callable[[Mapping[str, Any]], int] | None = None
        self._hints: dict[str, int] = {}
        self._failed: set[int] = set()

    @property
    def atoms(self) -> tuple[Atom, ...]:
        """The atoms, atom ``k`` at index ``k``."""
        return tuple(self._atoms)

    def __len__(self) -> int:
        return len(self._atoms)

    def add(self, atom: Atom) -> int:
        """Register ``atom`` (deduplicated structurally, spans ignored); return its index."""
        key = structural_key(atom)
        k = self._index.get(key)
        if k is not None:
            return k
        if isinstance(atom, _ast.Like):
            check_regex(atom)
        row_fn = compile_row_atom(atom, self.type_key, self.stream_key)
        batch_fn = compile_batch_atom(atom, self.type_key, self.stream_key, row_fn)
        k = len(self._atoms)
        self._atoms.append(atom)
        self._index[key] = k
        self._row_fns.append(row_fn)
        self._batch_fns.append(batch_fn)
        names = attr_names(atom)
        if isinstance(atom, (TypeIs, StreamIs)):
            names.add(self.type_key if isinstance(atom, TypeIs) else self.stream_key)
        self._attr_names.append(tuple(sorted(names)))
        col, weight = string_weight(atom)
        if isinstance(atom, (TypeIs, StreamIs)):
            col, weight = (self.type_key if isinstance(atom, TypeIs) else self.stream_key), 1
        if col is not None:
            self._hints[col] = self._hints.get(col, 0) + weight
        self._row_class = None
        return k

    def row_class(self, event: Mapping[str, Any]) -> int:
        """The class of one event (a mapping; missing keys are NULL)."""
        fn = self._row_class
        if fn is None:
            fn = self._row_class = self._compile_row_class()
        return fn(event)

    def _compile_row_class(self) -> Callable[[Mapping[str, Any]], int]:
        if not self._row_fns:
            return lambda ev: 0
        names: dict[str, Any] = {f"f{k}": f for k, f in enumerate(self._row_fns)}
        names["__name__"] = __name__  # its frames belong to ceql (warnings skip them)
        body = " | ".join(f"f{k}(ev) << {2 * k}" for k in range(len(self._row_fns)))
        fn: Callable[[Mapping[str, Any]], int] = eval(f"lambda ev: {body}", names)
        return fn

    def atom_codes(self, k: int, batch: Any) -> Codes:
        """Codes (0 unknown, 1 true, 2 false) of atom ``k`` over one record batch."""
        return self._batch_atom(k, BatchContext(batch, self._hints))

    def _batch_atom(self, k: int, ctx: BatchContext) -> Codes:
        try:
            return self._batch_fns[k](ctx)
        except (Fallback, pa.ArrowException):
            pass
        except Exception:
            # The row path is the reference: a column-path bug costs speed, not results.
            if k not in self._failed:
                self._failed.add(k)
                _log.warning("column path failed on atom %d (%r); using the row path",
                             k, self._atoms[k], exc_info=True)
        return row_fallback(ctx, self._row_fns[k], self._attr_names[k])

    def batch_classes(self, batch: Any) -> Classes:
        """One class per row of a ``pa.RecordBatch`` or ``pa.Table``."""
        if isinstance(batch, pa.Table):
            parts = [self.batch_classes(b) for b in batch.to_batches()]
            if parts:
                return np.concatenate(parts) if len(parts) > 1 else parts[0]
            dtype = np.uint64 if 2 * len(self._atoms) <= 64 else object
            return np.zeros(0, dtype)
        ctx = BatchContext(batch, self._hints)
        codes = [self._batch_atom(k, ctx) for k in range(len(self._atoms))]
        return assemble(codes, ctx.n)
