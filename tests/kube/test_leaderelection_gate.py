"""The write gate the elector closes on losing the lease: once closed, writes through the
API client and launches or deletes through the cloud provider are refused before they are
sent; reads go on (a lost leader still answers probes and keeps its informers)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from karpy.apis.nodeclaim import NodeClaim
from karpy.cloud.metered import MeteredCloudProvider
from karpy.kube.client import KubeClient, WriteGate, WritesStopped
from karpy.kube.resources import LEASES
from karpy.observability.metrics import Metrics
from tests import factories as f
from tests.kube.helpers import transport_for


def lease(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {}}


@pytest.fixture
async def gated(apiserver):
    transport = transport_for(apiserver)
    gate = WriteGate()
    yield gate, KubeClient(transport, max_attempts=1, write_gate=gate), transport
    await transport.close()


async def test_a_closed_gate_refuses_writes_before_they_are_sent(gated):
    gate, client, transport = gated
    await client.create(LEASES, lease("before"))
    gate.close("could not renew lease kube-system/karpy-leader-election within 10.0s")
    sent = len(transport.sent)
    with pytest.raises(WritesStopped, match="could not renew lease"):
        await client.create(LEASES, lease("after"))
    with pytest.raises(WritesStopped):
        await client.delete(LEASES, "before", "default")
    assert len(transport.sent) == sent  # nothing went out
    assert (await client.get(LEASES, "before", "default"))["metadata"]["name"] == "before"
    assert await client.try_get(LEASES, "after", "default") is None


@attrs.define
class RecordingProvider:
    """The provider under the metering wrapper: notes what reached it."""

    name: str = "recording"
    well_known_labels: frozenset[str] = frozenset()
    calls: list[str] = attrs.field(factory=list)

    async def create(self, nodeclaim: NodeClaim) -> Any:
        self.calls.append(f"create {nodeclaim.name}")

    async def delete(self, nodeclaim: NodeClaim) -> None:
        self.calls.append(f"delete {nodeclaim.name}")


async def test_a_closed_gate_refuses_cloud_launches_and_deletes():
    gate = WriteGate()
    inner = RecordingProvider()
    provider = MeteredCloudProvider(
        inner,  # type: ignore[arg-type]
        Metrics().karpenter,
        write_gate=gate,
    )
    claim = NodeClaim.from_dict(f.nodeclaim("default-abcde"))
    await provider.create(claim)
    gate.close("lease lost")
    with pytest.raises(WritesStopped):
        await provider.create(claim)
    with pytest.raises(WritesStopped):
        await provider.delete(claim)
    assert inner.calls == ["create default-abcde"]
