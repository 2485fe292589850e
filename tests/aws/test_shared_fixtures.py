"""What tests/aws/conftest.py shares between tests and workers to save CPU: the fetched
catalogue is kept for the run's other workers, and the shared botocore session loads a
CA bundle of one root (its clients speak plain HTTP to loopback)."""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING

from tests.aws.conftest import REGION, SHARED_SESSION

if TYPE_CHECKING:
    from pathlib import Path

    from karpy.cloud.aws.instancetypes.catalog import Catalog


def test_the_catalogue_is_kept_for_the_runs_other_workers(
    moto_catalog: Catalog, shared_moto_catalogue: Path
) -> None:
    kept = shared_moto_catalogue / f"catalog-{REGION}.pickle"
    assert pickle.loads(kept.read_bytes()).same_as(moto_catalog)
    assert len(moto_catalog.types) > 1300


def test_the_shared_session_loads_a_bundle_of_one_root(one_root_ca_bundle: Path) -> None:
    assert SHARED_SESSION.get_config_variable("ca_bundle") == str(one_root_ca_bundle)
    assert one_root_ca_bundle.read_text(encoding="utf-8").count("BEGIN CERTIFICATE") == 1
