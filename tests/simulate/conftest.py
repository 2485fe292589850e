"""Files for ``karpy simulate`` tests: a snapshot and a catalog on disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import factories as f

CATALOG: dict[str, Any] = {
    "instanceTypes": [
        {
            "name": "m5.large",
            "capacity": {"cpu": "2", "memory": "8Gi", "pods": "29"},
            "overhead": {"cpu": "70m", "memory": "1Gi"},
            "labels": {"kubernetes.io/arch": "amd64"},
            "offerings": [
                {"zone": "us-west-2a", "capacityType": "spot", "price": 0.0312},
                {"zone": "us-west-2a", "capacityType": "on-demand", "price": 0.096},
            ],
        }
    ]
}


def write_yaml(path: Path, *docs: Any) -> Path:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


@pytest.fixture
def catalog_file(tmp_path: Path) -> Path:
    return write_yaml(tmp_path / "catalog.yaml", CATALOG)


@pytest.fixture
def snapshot_file(tmp_path: Path) -> Path:
    return write_yaml(
        tmp_path / "snapshot.yaml",
        f.nodepool("default"),
        f.pod("web", requests={"cpu": "1"}),
        f.pod("huge", requests={"memory": "100Gi"}),
    )
