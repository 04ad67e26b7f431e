"""Spark sessions with ceql: a local session and the settings of any session
(:mod:`.local`), Spark Connect (:mod:`.connect`), quiet logs (:mod:`.quiet`) and the Python
worker daemon (:mod:`.daemon`). Internal: the public face is :mod:`ceql.spark`."""

from __future__ import annotations

__all__: list[str] = []
