"""DAG tests use the pool tests' real pools and helpers."""

from __future__ import annotations

from tests.pool.conftest import fresh_pool, pool  # noqa: F401 - fixtures shared with tests/pool
