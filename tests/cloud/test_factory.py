"""``CLOUD_PROVIDER`` picks the provider; one that cannot be built is a usage error."""

from __future__ import annotations

import pytest

from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.factory import build_provider
from karpy.cloud.fake import FakeCloudProvider
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.errors import UsageError
from karpy.settings import Settings
from karpy.state.cluster import ClusterState


def build(**settings):
    return build_provider(Settings(cluster_name="c", **settings), client=None,  # type: ignore[arg-type]
                          state=ClusterState(), unavailable=UnavailableOfferings(),
                          clock=SYSTEM_CLOCK)  # fmt: skip


def test_fake_builds_the_fake_provider_with_its_settings(tmp_path):
    provider = build(cloud_provider="fake", fake_registration_delay=5 * 10**9,
                     fake_insufficient_capacity=(("c-*", "*", "spot"),))  # fmt: skip
    assert isinstance(provider, FakeCloudProvider)
    assert provider.registration_delay == 5.0
    assert provider.faults.no_capacity(("c-4x-amd64-linux", "test-zone-a", "spot"))
    assert not provider.faults.no_capacity(("c-4x-amd64-linux", "test-zone-a", "on-demand"))


def test_aws_is_not_built_yet_and_says_how_to_run_instead():
    with pytest.raises(UsageError, match="CLOUD_PROVIDER=fake"):
        build(cloud_provider="aws")


def test_a_bad_catalog_file_stops_the_build(tmp_path):
    with pytest.raises(UsageError, match="FAKE_INSTANCE_TYPES"):
        build(cloud_provider="fake", fake_instance_types=str(tmp_path / "missing.yaml"))
