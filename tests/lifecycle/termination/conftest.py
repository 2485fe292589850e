"""Pods terminate at once in these tests' API server (an evicted pod is gone as soon as
the kubelet would have stopped it), unless a test asks for ``manual``."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def apiserver_options() -> dict[str, Any]:
    return {"pod_termination": "immediate"}
