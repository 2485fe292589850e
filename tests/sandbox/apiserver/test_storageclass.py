# mypy: disable-error-code="arg-type,call-arg"
# (kubernetes-asyncio types its bodies as model classes; it accepts plain dicts, as karpy sends.)
"""DefaultStorageClass admission: claims created without a class get the default class."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client

DEFAULT = {"storageclass.kubernetes.io/is-default-class": "true"}


class Clock:
    """A settable clock, so creation timestamps can be told apart."""

    def __init__(self) -> None:
        self.now = 1_780_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def apiserver_options(clock: Clock) -> dict[str, Any]:
    return {"clock": clock}


def storage_class(name: str, *, default: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if default:
        meta["annotations"] = dict(DEFAULT)
    return {"metadata": meta, "provisioner": "ebs.csi.aws.com"}


def claim(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            **spec,
        },
    }


async def test_a_claim_without_a_class_gets_the_newest_default_class(kube_api_client, clock):
    storage = client.StorageV1Api(kube_api_client)
    core = client.CoreV1Api(kube_api_client)
    await storage.create_storage_class(storage_class("plain"))
    await storage.create_storage_class(storage_class("gp2", default=True))
    clock.now += 5
    await storage.create_storage_class(storage_class("gp3", default=True))
    created = await core.create_namespaced_persistent_volume_claim("default", claim("data"))
    assert created.spec.storage_class_name == "gp3"


async def test_default_classes_created_together_go_by_name(kube_api_client):
    storage = client.StorageV1Api(kube_api_client)
    core = client.CoreV1Api(kube_api_client)
    await storage.create_storage_class(storage_class("zeta", default=True))
    await storage.create_storage_class(storage_class("alpha", default=True))
    created = await core.create_namespaced_persistent_volume_claim("default", claim("data"))
    assert created.spec.storage_class_name == "alpha"


@pytest.mark.parametrize(
    ("spec", "annotations", "expected"),
    [
        ({"storageClassName": ""}, {}, ""),
        ({"storageClassName": "plain"}, {}, "plain"),
        ({}, {"volume.beta.kubernetes.io/storage-class": "legacy"}, None),
    ],
    ids=["explicitly-none", "explicit", "legacy-annotation"],
)
async def test_a_claim_that_chose_its_class_keeps_it(
    kube_api_client, spec: dict[str, Any], annotations: dict[str, str], expected: str | None
):
    storage = client.StorageV1Api(kube_api_client)
    core = client.CoreV1Api(kube_api_client)
    await storage.create_storage_class(storage_class("gp3", default=True))
    body = claim("data", **spec)
    body["metadata"]["annotations"] = annotations
    created = await core.create_namespaced_persistent_volume_claim("default", body)
    assert created.spec.storage_class_name == expected


async def test_without_a_default_class_the_claim_stays_classless(kube_api_client):
    storage = client.StorageV1Api(kube_api_client)
    core = client.CoreV1Api(kube_api_client)
    await storage.create_storage_class(storage_class("plain"))
    created = await core.create_namespaced_persistent_volume_claim("default", claim("data"))
    assert created.spec.storage_class_name is None


async def test_only_creation_is_admitted(kube_api_client):
    storage = client.StorageV1Api(kube_api_client)
    core = client.CoreV1Api(kube_api_client)
    await core.create_namespaced_persistent_volume_claim("default", claim("data"))
    await storage.create_storage_class(storage_class("gp3", default=True))
    patched = await core.patch_namespaced_persistent_volume_claim(
        "data", "default", {"metadata": {"labels": {"touched": "yes"}}}
    )
    assert patched.spec.storage_class_name is None
