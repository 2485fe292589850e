"""A cloud provider's NodeClass kinds, end to end through the core: a provider that
declares a second kind beside EC2NodeClass gets it watched (an informer lists and watches
it), stored (cluster state holds its objects, read by the provider's projection) and
judged by NodePool readiness through the provider's own Ready rule. Nothing in the core
names the kind."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from karpy.apis.conditions import Condition
from karpy.apis.core import ObjectMeta
from karpy.apis.crd import CustomResource
from karpy.apis.ec2nodeclass_kind import EC2NODECLASS_KIND
from karpy.apis.nodeclass import NodeClassKind
from karpy.apis.openapi import Schema
from karpy.base.clock import SYSTEM_CLOCK
from karpy.nodepools.readiness import NodePoolReadiness
from karpy.sandbox.apiserver import APIServer
from karpy.state.cluster import StateChange
from karpy.state.keys import NodePoolName
from tests import factories as f
from tests.fixtures.cluster import World, controller_world
from tests.nodepools.test_nodepools import conditions

GROUP = "widgets.example.com"
PLURAL = "widgetnodeclasses"
RESOURCE = f"{PLURAL}.{GROUP}"


@attrs.frozen
class WidgetNodeClass:
    """The record the widget provider projects its NodeClass objects to: Ready when its
    ``status.phase`` says ``Provisioned``, not reconciled while it has no phase."""

    metadata: ObjectMeta
    phase: str

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WidgetNodeClass:
        status = data.get("status") or {}
        return cls(ObjectMeta.from_dict(data.get("metadata")), str(status.get("phase", "")))

    def ready(self) -> Condition | None:
        if not self.phase:
            return None
        provisioned = self.phase == "Provisioned"
        return Condition("Ready", "True" if provisioned else "False", self.phase,
                         "" if provisioned else f"phase is {self.phase}")  # fmt: skip


STRING = Schema("string")
WIDGET_DEFINITION = CustomResource(
    group=GROUP, version="v1", kind="WidgetNodeClass", plural=PLURAL,
    schema=Schema("object", properties={
        "spec": Schema("object", properties={"size": STRING}),
        "status": Schema("object", properties={"phase": STRING}),
    }),
)  # fmt: skip
WIDGET_KIND = NodeClassKind(WIDGET_DEFINITION, WidgetNodeClass.from_dict, WidgetNodeClass.ready)


class WidgetCloud:
    """The one part of a provider these controllers read: the NodeClass kinds it serves."""

    @property
    def node_classes(self) -> Sequence[NodeClassKind[Any]]:
        return (EC2NODECLASS_KIND, WIDGET_KIND)


def widget(name: str, phase: str | None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": f"{GROUP}/v1", "kind": "WidgetNodeClass",
                           "metadata": {"name": name}, "spec": {"size": "large"}}  # fmt: skip
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


def set_phase(apiserver: APIServer, name: str, phase: str) -> None:
    stored = apiserver.store.get(RESOURCE, name)
    stored["status"] = {"phase": phase}
    apiserver.store.update_status(RESOURCE, stored)


def pool_of(name: str, kind: str, node_class: str, group: str = GROUP) -> dict[str, Any]:
    ref = {"group": group, "kind": kind, "name": node_class}
    pool = f.nodepool(name)
    pool["spec"]["template"]["spec"]["nodeClassRef"] = ref
    return pool


def readiness_of(world: World, provider: WidgetCloud) -> NodePoolReadiness:
    return NodePoolReadiness(world.state, world.client, world.recorder,
                             node_classes=provider.node_classes, clock=SYSTEM_CLOCK)  # fmt: skip


async def test_a_second_node_class_kind_is_watched_stored_and_judged_by_its_rule(
    apiserver: APIServer,
) -> None:
    apiserver.store.create("customresourcedefinitions.apiextensions.k8s.io",
                           WIDGET_DEFINITION.to_crd())  # fmt: skip
    apiserver.store.create(RESOURCE, widget("blue", None))
    apiserver.store.create("nodepools.karpenter.sh", pool_of("widgets", "WidgetNodeClass", "blue"))
    provider = WidgetCloud()
    async with controller_world(apiserver, node_classes=provider.node_classes) as world:
        assert "WidgetNodeClass" in {spec.name for spec in world.watched}
        assert "WidgetNodeClass" in world.state.watched, "synced only once it has listed"
        stored = world.state.snapshot().node_class(WIDGET_KIND, "blue")
        assert stored is not None and stored.phase == "", "read by the provider's projection"
        readiness = readiness_of(world, provider)
        assert readiness.watches >= {"NodePool", "EC2NodeClass", "WidgetNodeClass"}

        await readiness.reconcile(NodePoolName("widgets"))
        assert conditions(apiserver, "widgets")["NodeClassReady"] == (
            "Unknown", "AwaitingReconciliation")  # fmt: skip

        set_phase(apiserver, "blue", "Provisioned")
        await world.settled()
        assert world.state.snapshot().node_class(WIDGET_KIND, "blue") is not None
        await readiness.reconcile(NodePoolName("widgets"))
        assert conditions(apiserver, "widgets")["Ready"] == ("True", "Ready")

        set_phase(apiserver, "blue", "Exhausted")
        await world.settled()
        await readiness.reconcile(NodePoolName("widgets"))
        assert conditions(apiserver, "widgets")["NodeClassReady"] == (
            "False", "NodeClassNotReady")  # fmt: skip
        pool = apiserver.store.get("nodepools.karpenter.sh", "widgets")
        ready = next(c for c in pool["status"]["conditions"] if c["type"] == "Ready")
        assert ready["message"] == 'WidgetNodeClass "blue" not ready: phase is Exhausted'


async def test_a_change_to_a_node_class_of_the_second_kind_rejudges_the_pools_naming_it(
    apiserver: APIServer,
) -> None:
    apiserver.store.create("customresourcedefinitions.apiextensions.k8s.io",
                           WIDGET_DEFINITION.to_crd())  # fmt: skip
    apiserver.store.create("nodepools.karpenter.sh", pool_of("widgets", "WidgetNodeClass", "blue"))
    apiserver.store.create(
        "nodepools.karpenter.sh", pool_of("other", "EC2NodeClass", "blue", "karpenter.k8s.aws")
    )
    provider = WidgetCloud()
    async with controller_world(apiserver, node_classes=provider.node_classes) as world:
        readiness = readiness_of(world, provider)
        blue = WidgetNodeClass.from_dict(widget("blue", "Provisioned"))
        change = StateChange("WidgetNodeClass", "blue", None, blue)
        assert list(readiness.keys_for(change)) == ["widgets"], "same name, other kind: not it"


async def test_a_kind_the_provider_does_not_serve_is_unsupported_naming_those_it_does(
    apiserver: APIServer,
) -> None:
    apiserver.store.create("nodepools.karpenter.sh", pool_of("gadgets", "GadgetNodeClass", "x"))
    provider = WidgetCloud()
    async with controller_world(apiserver) as world:
        readiness = readiness_of(world, provider)
        await readiness.reconcile(NodePoolName("gadgets"))
        pool = apiserver.store.get("nodepools.karpenter.sh", "gadgets")
        found = {c["type"]: c for c in pool["status"]["conditions"]}
        assert (found["NodeClassReady"]["status"], found["NodeClassReady"]["reason"]) == (
            "False", "UnsupportedNodeClass")  # fmt: skip
        assert found["NodeClassReady"]["message"] == (
            f"nodeClassRef {GROUP}/GadgetNodeClass is not supported (karpy serves "
            f"karpenter.k8s.aws/EC2NodeClass, {GROUP}/WidgetNodeClass)"
        )
