"""One local Spark session for every Spark test (local[2], UI off, 4 shuffle partitions)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The shared session, with the shim jar (built first if stale) and its extension."""
    from ceql.shim import jar as build_jar
    from ceql.spark import local_session

    build_jar.build()
    session = local_session(**{"spark.log.level": "FATAL"})
    session.sparkContext.setLogLevel("FATAL")
    yield session
    session.stop()
