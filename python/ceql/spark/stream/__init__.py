"""MATCH_CEQL over a Structured Streaming DataFrame (``ceql.spark.match_stream``): the Spark
operator (:mod:`.operator`), one key's state without Spark (:mod:`.keystate`) and its bytes
in the state store (:mod:`.state_codec`). Internal: the public face is :mod:`ceql.spark`."""

from __future__ import annotations

__all__: list[str] = []
