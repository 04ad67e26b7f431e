"""The module ``spark.python.daemon.module`` names (``ceql.spark._daemon``, a stable path that
users' Spark settings hold): it runs :mod:`ceql.spark.session.daemon`."""

from __future__ import annotations

from ceql.spark.session.daemon import main

__all__: list[str] = []

if __name__ == "__main__":
    main()
