"""The fake cloud's own controllers: EC2NodeClass readiness without AWS, and booting
instances when ``FAKE_REGISTRATION_DELAY`` is set."""

from __future__ import annotations

from typing import Any

from karpy.apis.nodeclaim import NodeClaim
from karpy.cloud.fake import FakeCloudProvider
from karpy.cloud.fake.boot import FakeBoot
from karpy.cloud.fake.catalog import embedded_catalog
from karpy.cloud.fake.nodeclass import FakeNodeClassReadiness
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.kube.resources import NODES
from karpy.reconcile import DONE
from karpy.state.keys import NodeClaimName, NodeClassName
from tests import factories as f
from tests.fixtures.cluster import EXAMPLE_NODECLASS, controller_world
from tests.kube.fakeclock import START, FakeClock

NODECLASSES = "ec2nodeclasses.karpenter.k8s.aws"
NODECLAIMS = "nodeclaims.karpenter.sh"


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or ()}


async def test_every_ec2nodeclass_is_ready_once_and_again_per_generation(apiserver):
    clock = FakeClock()
    async with controller_world(apiserver) as world:
        created = apiserver.store.create(NODECLASSES, EXAMPLE_NODECLASS)
        custom = {"type": "Custom", "status": "True", "reason": "Custom", "message": "",
                  "lastTransitionTime": "2024-01-01T00:00:00Z"}  # fmt: skip
        created["status"] = {"conditions": [custom]}
        apiserver.store.update_status(NODECLASSES, created)
        await world.settled()
        readiness = FakeNodeClassReadiness(world.state, world.client, clock=clock)
        assert await readiness.reconcile(NodeClassName("default")) == DONE
        await world.settled()
        ready = apiserver.store.get(NODECLASSES, "default")
        found = conditions(ready)
        for type_ in ("Ready", "ValidationSucceeded"):
            assert (found[type_]["status"], found[type_]["observedGeneration"]) == ("True", 1)
            assert found[type_]["lastTransitionTime"] == "2025-01-01T00:00:00Z"
        assert "Custom" in found, "conditions others wrote are kept"

        await readiness.reconcile(NodeClassName("default"))
        assert (
            apiserver.store.get(NODECLASSES, "default")["metadata"]["resourceVersion"]
            == (ready["metadata"]["resourceVersion"])
        ), "nothing is written when nothing changed"

        ready["spec"]["role"] = "AnotherRole"
        apiserver.store.update(NODECLASSES, ready)
        await world.settled()
        await readiness.reconcile(NodeClassName("default"))
        observed = conditions(apiserver.store.get(NODECLASSES, "default"))["Ready"]
        assert observed["observedGeneration"] == 2


async def test_a_booting_instance_joins_after_the_delay_even_across_a_restart(apiserver):
    clock = FakeClock()
    async with controller_world(apiserver) as world:
        apiserver.store.create(NODECLASSES, EXAMPLE_NODECLASS)
        await world.settled()
        provider = FakeCloudProvider(embedded_catalog(), client=world.client, state=world.state,
                                     unavailable=UnavailableOfferings(clock=clock),
                                     registration_delay=30.0, clock=clock)  # fmt: skip
        spec = f.nodeclaim("default-boot1", nodepool="default", launched=False,
                           requests={"cpu": "500m", "memory": "1Gi", "pods": "1"})  # fmt: skip
        claim = NodeClaim.from_dict(spec)
        instance = await provider.create(claim)
        assert await world.client.try_get(NODES, "default-boot1") is None, "still booting"
        # What launch writes on the NodeClaim: its instance's labels, provider ID, Launched.
        labels = {**spec["metadata"]["labels"], **instance.labels}
        stored = apiserver.store.create(
            NODECLAIMS, {**spec, "metadata": {**spec["metadata"], "labels": labels}}
        )
        stored["status"] = {"providerID": instance.provider_id, "conditions": [{
            "type": "Launched", "status": "True", "reason": "Launched", "message": "",
            "lastTransitionTime": START.strftime("%Y-%m-%dT%H:%M:%SZ")}]}  # fmt: skip
        apiserver.store.update_status(NODECLAIMS, stored)
        await world.settled()
        assert [i.provider_id for i in await provider.list()] == [instance.provider_id]
        assert (await provider.get(instance.provider_id)).instance_type == instance.instance_type

        # A fresh reconciler (as after a restart) knows nothing but the API.
        boot = FakeBoot(world.state, world.client, provider.types_by_name, delay=30.0,
                        clock=clock)  # fmt: skip
        assert list(boot.all_keys(world.state.snapshot())) == ["default-boot1"]
        await clock.advance(10)
        result = await boot.reconcile(NodeClaimName("default-boot1"))
        assert result.requeue_after == 20.0
        await clock.advance(20)
        assert await boot.reconcile(NodeClaimName("default-boot1")) == DONE
        node = await world.client.get(NODES, "default-boot1")
        assert node["spec"]["providerID"] == instance.provider_id
        assert node["metadata"]["labels"]["node.kubernetes.io/instance-type"] == (
            instance.instance_type
        )
        await world.settled()
        assert list(boot.all_keys(world.state.snapshot())) == []
