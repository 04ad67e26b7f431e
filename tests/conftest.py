"""Imports ``strategies`` first so that its hypothesis profile is every test's default."""

import strategies  # noqa: F401
