"""A started `SandboxCluster` per test, with short delays so flows finish quickly."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from karpy.sandbox.cluster import SandboxCluster


@pytest.fixture
async def cluster() -> AsyncIterator[SandboxCluster]:
    async with SandboxCluster(
        node_ready_delay=0.05,
        pod_start_delay=0.05,
        scheduler_debounce=0.02,
        max_pod_grace_seconds=0.2,
        orphan_pod_quarantine=0.3,
    ) as started:
        yield started
