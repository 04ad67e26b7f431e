"""The table functions MATCH_CEQL and MATCH_SPASEQ as Spark's Arrow Python UDTFs: one shared
base (:mod:`.base`: arguments, ``analyze``'s errors, partitions split out of Arrow batches,
errors a task reports), each language's plan of a call and its per-partition runner, and the
pieces a task's output needs (batches, ids, times, ties, the prefilter). Internal: the public
face is :mod:`ceql.spark`."""

from __future__ import annotations

__all__: list[str] = []
