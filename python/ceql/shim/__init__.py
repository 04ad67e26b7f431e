"""The JVM shim's build tooling, apart from the runtime package ``ceql.spark``: the Scala it
generates from :mod:`ceql.constants` and :mod:`ceql.spark.conf` (:mod:`ceql.shim.scala`) and the
jar compiled with the Scala compiler pyspark ships (``python -m ceql.shim.jar``,
:mod:`ceql.shim.jar`). The jar itself is package data, ``ceql/jars/ceql-shim.jar``."""

from __future__ import annotations

__all__: list[str] = []
