"""``CLOUD_PROVIDER`` picks the provider; one that cannot be built is a usage error."""

from __future__ import annotations

import importlib

import pytest

from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.factory import (
    PROVIDERS,
    ProviderDependencies,
    build_provider,
    check_provider,
    node_class_kinds,
    provider_module,
)
from karpy.cloud.fake import FakeCloudProvider
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.errors import UsageError
from karpy.kube.backoff import TokenBucket
from karpy.kube.client import KubeClient
from karpy.settings import Settings
from karpy.state.cluster import ClusterState

THROTTLED = KubeClient(None, limiter=TokenBucket(200, 300))  # type: ignore[arg-type]


def build(env=None, **settings):
    return build_provider(ProviderDependencies(
        settings=Settings(cluster_name="c", **settings), client=THROTTLED,
        state=ClusterState(), unavailable=UnavailableOfferings(), clock=SYSTEM_CLOCK,
        **({} if env is None else {"env": env}),
    ))  # fmt: skip


def test_fake_builds_the_fake_provider_with_its_settings(tmp_path):
    provider = build(cloud_provider="fake", fake_registration_delay=5 * 10**9,
                     fake_insufficient_capacity=(("c-*", "*", "spot"),))  # fmt: skip
    assert isinstance(provider, FakeCloudProvider)
    assert provider.registration_delay == 5.0
    assert provider.faults.no_capacity(("c-4x-amd64-linux", "test-zone-a", "spot"))
    assert not provider.faults.no_capacity(("c-4x-amd64-linux", "test-zone-a", "on-demand"))


def test_the_fake_clouds_nodes_do_not_spend_karpys_request_budget():
    """They stand in for kubelets, which write with their own credentials and limits."""
    provider = build(cloud_provider="fake")
    assert isinstance(provider, FakeCloudProvider)
    assert provider.client.limiter is None
    assert provider.client.name == "fake-kubelets"


def test_aws_without_a_region_is_a_usage_error_saying_what_to_set(monkeypatch):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/karpy-test-config")
    with pytest.raises(UsageError, match="AWS_REGION"):
        build(cloud_provider="aws")


def test_aws_builds_the_aws_provider_for_the_region(monkeypatch):
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    provider = build(cloud_provider="aws")
    assert provider.name == "aws"
    assert provider.clients.region == "eu-west-1"


def test_a_bad_catalog_file_stops_the_build(tmp_path):
    with pytest.raises(UsageError, match="FAKE_INSTANCE_TYPES"):
        build(cloud_provider="fake", fake_instance_types=str(tmp_path / "missing.yaml"))


def test_an_unknown_provider_is_a_usage_error_naming_the_registered_ones():
    with pytest.raises(UsageError, match='expected "aws" or "fake"'):
        build(cloud_provider="gcp")
    with pytest.raises(UsageError, match="'gcp'"):
        check_provider(Settings(cluster_name="c", cloud_provider="gcp"), {})


def test_the_region_comes_from_the_environment_the_operator_was_given(monkeypatch):
    monkeypatch.delenv("AWS_REGION", raising=False)
    provider = build(cloud_provider="aws", env={"AWS_REGION": "ap-south-1"})
    assert provider.clients.region == "ap-south-1"
    check_provider(Settings(cluster_name="c", cloud_provider="aws"), {"AWS_REGION": "x-1"})
    with pytest.raises(UsageError, match="AWS_REGION"):
        check_provider(Settings(cluster_name="c", cloud_provider="aws"),
                       {"AWS_CONFIG_FILE": "/nonexistent/karpy-test-config"})  # fmt: skip


def test_every_registered_provider_module_exports_check_build_and_its_node_classes():
    for name, module in PROVIDERS.items():
        loaded = provider_module(name)
        assert loaded is importlib.import_module(module)
        assert callable(loaded.check) and callable(loaded.build)
        assert loaded.NODE_CLASSES, f"{name} serves no NodeClass kind"


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_the_node_classes_watched_before_the_build_are_those_the_provider_serves(name, monkeypatch):
    """The operator builds the informers from the module's declaration, before the
    provider exists; the built provider must answer readiness for the same kinds."""
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    settings = Settings(cluster_name="c", cloud_provider=name)
    assert tuple(build(cloud_provider=name).node_classes) == tuple(node_class_kinds(settings))


def test_both_providers_serve_ec2nodeclass_so_the_same_manifests_run_on_either():
    served = {name: [(k.group, k.kind) for k in provider_module(name).NODE_CLASSES]
              for name in PROVIDERS}  # fmt: skip
    assert served == {"aws": [("karpenter.k8s.aws", "EC2NodeClass")],
                      "fake": [("karpenter.k8s.aws", "EC2NodeClass")]}  # fmt: skip
