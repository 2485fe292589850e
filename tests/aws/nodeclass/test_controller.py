"""The EC2NodeClass controllers against the API server emulator and a seeded moto account:
status written and read back, written only on change, periodic re-resolution, the
finalizer waiting for NodeClaims and cleaning up, the hash annotations."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from karpy.apis.ec2nodeclass import EC2NodeClass
from karpy.apis.hashes import ec2nodeclass_hash
from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.aws.nodeclass import (
    KubernetesVersion,
    NodeClassController,
    NodeClassHash,
    NodeClassResolver,
    nodeclass_controllers,
)
from karpy.cloud.aws.nodeclass.version import server_version
from karpy.cloud.aws.nodeclasses import NODE_CLASS
from karpy.sandbox.aws.amis import publish_parameters
from karpy.sandbox.aws.amis import register_images as register_eks_images
from karpy.settings import Settings
from karpy.state import kinds
from karpy.state.cluster import StateChange
from karpy.state.keys import NodeClassName
from tests import factories as f
from tests.aws.conftest import REGION
from tests.aws.nodeclass.helpers import CLUSTER, newer_al2023_release, nodeclass_dict
from tests.fixtures.cluster import controller_world
from tests.fixtures.waiting import eventually
from tests.kube.fakeclock import FakeClock

if TYPE_CHECKING:
    from karpy.cloud.aws.clients import AWSClients
    from karpy.sandbox.apiserver import APIServer
    from karpy.sandbox.aws.seed import Account
    from tests.fixtures.cluster import World

NODECLASSES = "ec2nodeclasses.karpenter.k8s.aws"
NODECLAIMS = "nodeclaims.karpenter.sh"
FINALIZER = "karpenter.k8s.aws/termination"


def _controller(
    world: World, clients: AWSClients, clock: Any = None, *, isolated_vpc: bool = False
) -> NodeClassController:
    options = {"clock": clock} if clock is not None else {}
    resolver = NodeClassResolver(clients, cluster_name=CLUSTER, **options)
    version = KubernetesVersion(fixed="1.31")
    return NodeClassController(world.state, world.client, clients, resolver, version,
                               isolated_vpc=isolated_vpc, recorder=world.recorder)  # fmt: skip


def _conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or ()}


async def test_status_is_written_once_and_read_back(
    apiserver: APIServer, aws_account: Account, aws_clients: AWSClients
):
    async with controller_world(apiserver) as world:
        apiserver.store.create(NODECLASSES, nodeclass_dict())
        await world.settled()
        controller = _controller(world, aws_clients)
        result = await controller.reconcile(NodeClassName("default"))
        assert result.requeue_after == 60.0, "AMI_REFRESH_INTERVAL (and subnets) by default"
        stored = apiserver.store.get(NODECLASSES, "default")
        assert stored["metadata"]["finalizers"] == [FINALIZER]
        status = stored["status"]
        assert {s["zone"]: s["id"] for s in status["subnets"]} == aws_account.subnets
        assert status["securityGroups"] == [
            {"id": aws_account.security_group_id, "name": f"{CLUSTER}-node"}
        ]
        assert status["instanceProfile"].startswith(f"{CLUSTER}_")
        assert {a["id"] for a in status["amis"]} >= set(aws_account.amis["al2023"].values())
        found = _conditions(stored)
        assert found["Ready"]["status"] == "True"
        assert {c["observedGeneration"] for c in found.values()} == {1}

        await world.settled()
        parsed = world.state.snapshot().node_class(NODE_CLASS, "default")
        assert parsed.status.condition("Ready").is_true  # type: ignore[union-attr]
        version = stored["metadata"]["resourceVersion"]
        await controller.reconcile(NodeClassName("default"))
        assert apiserver.store.get(NODECLASSES, "default")["metadata"]["resourceVersion"] == (
            version
        ), "nothing changed, nothing written"

        stored["spec"]["subnetSelectorTerms"] = [{"tags": {"karpenter.sh/discovery": "gone"}}]
        apiserver.store.update(NODECLASSES, stored)
        await world.settled()
        await controller.reconcile(NodeClassName("default"))
        broken = apiserver.store.get(NODECLASSES, "default")
        found = _conditions(broken)
        assert (found["SubnetsReady"]["status"], found["SubnetsReady"]["observedGeneration"]) == (
            "False", 2)  # fmt: skip
        assert found["Ready"]["status"] == "False"
        assert "subnets" not in broken["status"], "a selector that matches nothing clears them"


async def test_a_newer_ami_is_picked_up_on_the_next_refresh(
    apiserver: APIServer, aws_account: Account, aws_clients: AWSClients
):
    clock = FakeClock()
    async with controller_world(apiserver) as world:
        apiserver.store.create(NODECLASSES, nodeclass_dict())
        await world.settled()
        controller = _controller(world, aws_clients, clock)
        result = await controller.reconcile(NodeClassName("default"))
        old = aws_account.amis["al2023"]["x86_64"]
        assert old in {
            a["id"] for a in apiserver.store.get(NODECLASSES, "default")["status"]["amis"]
        }

        ids = register_eks_images(REGION, newer_al2023_release(aws_account, "20241201"))
        publish_parameters(ids, REGION)
        (new,) = ids.values()
        await world.settled()
        await clock.advance(result.requeue_after or 0)
        await controller.reconcile(NodeClassName("default"))
        amis = [a["id"] for a in apiserver.store.get(NODECLASSES, "default")["status"]["amis"]]
        assert amis[0] == new and old not in amis


async def test_deletion_waits_for_nodeclaims_then_removes_templates_and_profile(
    apiserver: APIServer, aws_account: Account, aws_clients: AWSClients
):
    async with controller_world(apiserver) as world:
        apiserver.store.create(NODECLASSES, nodeclass_dict())
        await world.settled()
        controller = _controller(world, aws_clients)
        await controller.reconcile(NodeClassName("default"))
        profile = apiserver.store.get(NODECLASSES, "default")["status"]["instanceProfile"]
        ec2 = await aws_clients.ec2()
        ours = await _template(ec2, "karpenter.k8s.aws/ours", "default")
        theirs = await _template(ec2, "karpenter.k8s.aws/theirs", "other")
        by_hand = await _template(ec2, "made-by-hand", "default")
        copied = await _template(ec2, "karpenter.k8s.aws/copied", "default", eks_tag=False)
        apiserver.store.create(NODECLAIMS, f.nodeclaim("default-a1b2c", nodepool="default"))
        apiserver.store.delete(NODECLASSES, "default")
        await world.settled()

        result = await controller.reconcile(NodeClassName("default"))
        assert result.requeue_after == 600.0
        assert apiserver.store.try_get(NODECLASSES, "default") is not None
        await eventually(lambda: bool(world.events("WaitingOnNodeClaimTermination")))
        (event,) = world.events("WaitingOnNodeClaimTermination")
        assert event["message"] == "Waiting on NodeClaim termination for default-a1b2c"
        assert event["involvedObject"]["kind"] == "EC2NodeClass"
        iam = await aws_clients.iam()
        assert (await iam.get_instance_profile(InstanceProfileName=profile))["InstanceProfile"]

        claim = world.state.snapshot().nodeclaims["default-a1b2c"]
        apiserver.store.delete(NODECLAIMS, "default-a1b2c")
        gone = StateChange(kinds.NODECLAIM, "default-a1b2c", claim, None)
        assert list(controller.keys_for(gone)) == ["default"], "a claim's deletion wakes its class"
        await eventually(lambda: "default-a1b2c" not in world.state.snapshot().nodeclaims)
        await controller.reconcile(NodeClassName("default"))
        assert apiserver.store.try_get(NODECLASSES, "default") is None
        names = {t["LaunchTemplateId"] for t in
                 (await ec2.describe_launch_templates())["LaunchTemplates"]}  # fmt: skip
        assert names == {theirs, by_hand, copied}, (
            f"only the class's own templates go ({ours} deleted); a template without karpy's "
            "name prefix or every ownership tag is not karpy's"
        )
        assert (await iam.list_instance_profiles())["InstanceProfiles"] == []


async def test_an_isolated_vpc_leaves_instance_profiles_to_iam_users(
    apiserver: APIServer, aws_account: Account, aws_clients: AWSClients
):
    async with controller_world(apiserver) as world:
        apiserver.store.create(NODECLASSES, nodeclass_dict())
        await world.settled()
        controller = _controller(world, aws_clients, isolated_vpc=True)
        await controller.reconcile(NodeClassName("default"))
        profile = apiserver.store.get(NODECLASSES, "default")["status"]["instanceProfile"]
        apiserver.store.delete(NODECLASSES, "default")
        await world.settled()
        await controller.reconcile(NodeClassName("default"))
        assert apiserver.store.try_get(NODECLASSES, "default") is None
        iam = await aws_clients.iam()
        assert (await iam.get_instance_profile(InstanceProfileName=profile))["InstanceProfile"]


async def _template(ec2: Any, name: str, nodeclass: str, *, eks_tag: bool = True) -> str:
    tags = {
        "karpenter.k8s.aws/ec2nodeclass": nodeclass,
        f"kubernetes.io/cluster/{CLUSTER}": "owned",
    }
    if eks_tag:
        tags["eks:eks-cluster-name"] = CLUSTER
    answer = await ec2.create_launch_template(
        LaunchTemplateName=name, LaunchTemplateData={"InstanceType": "m5.large"},
        TagSpecifications=[{"ResourceType": "launch-template",
                            "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}],
    )  # fmt: skip
    template_id: str = answer["LaunchTemplate"]["LaunchTemplateId"]
    return template_id


async def test_only_spec_finalizer_and_deletion_changes_wake_the_controller(
    apiserver: APIServer, aws_account: Account, aws_clients: AWSClients
):
    async with controller_world(apiserver) as world:
        controller = _controller(world, aws_clients)
        base = EC2NodeClass.from_dict(nodeclass_dict())
        status_only = EC2NodeClass.from_dict(
            {**nodeclass_dict(), "status": {"instanceProfile": "x"}}
        )
        bumped = EC2NodeClass.from_dict(
            {**nodeclass_dict(), "metadata": {"name": "default", "generation": 2}}
        )

        def keys(old: Any, new: Any) -> list[str]:
            return list(controller.keys_for(StateChange(NODE_CLASS.kind, "default", old, new)))

        assert keys(None, base) == ["default"]
        assert keys(base, status_only) == []
        assert keys(base, bumped) == ["default"]
        live = f.nodeclaim("c1")
        assert list(controller.keys_for(StateChange(kinds.NODECLAIM, "c1", None, live))) == []


async def test_hash_annotations_and_nodeclaims_restamped_on_a_new_hash_version(
    apiserver: APIServer,
):
    async with controller_world(apiserver) as world:
        apiserver.store.create(NODECLASSES, nodeclass_dict())
        stale = {"karpenter.k8s.aws/ec2nodeclass-hash": "1",
                 "karpenter.k8s.aws/ec2nodeclass-hash-version": "v1"}  # fmt: skip
        apiserver.store.create(NODECLAIMS, f.nodeclaim("old", annotations=stale))
        drifted = apiserver.store.create(NODECLAIMS, f.nodeclaim("drifted", annotations=stale))
        drifted["status"] = {"conditions": [{
            "type": "Drifted", "status": "True", "reason": "NodeClassDrift", "message": "",
            "lastTransitionTime": "2024-01-01T00:00:00Z"}]}  # fmt: skip
        apiserver.store.update_status(NODECLAIMS, drifted)
        other = f.nodeclaim("other", annotations=stale,
                            node_class_ref={"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                            "name": "elsewhere"})  # fmt: skip
        apiserver.store.create(NODECLAIMS, other)
        await world.settled()
        stamp = NodeClassHash(world.state, world.client, ca_bundle="CA")
        await stamp.reconcile(NodeClassName("default"))
        expected = ec2nodeclass_hash(EC2NodeClass.from_dict(nodeclass_dict()), "CA")
        annotations = apiserver.store.get(NODECLASSES, "default")["metadata"]["annotations"]
        version = annotations["karpenter.k8s.aws/ec2nodeclass-hash-version"]
        assert annotations["karpenter.k8s.aws/ec2nodeclass-hash"] == expected
        old = apiserver.store.get(NODECLAIMS, "old")["metadata"]["annotations"]
        assert old == {"karpenter.k8s.aws/ec2nodeclass-hash": expected,
                       "karpenter.k8s.aws/ec2nodeclass-hash-version": version}  # fmt: skip
        kept = apiserver.store.get(NODECLAIMS, "drifted")["metadata"]["annotations"]
        assert kept["karpenter.k8s.aws/ec2nodeclass-hash"] == "1", "drifted stays drifted"
        assert kept["karpenter.k8s.aws/ec2nodeclass-hash-version"] == version
        assert apiserver.store.get(NODECLAIMS, "other")["metadata"]["annotations"] == stale

        await world.settled()
        written = apiserver.store.get(NODECLASSES, "default")["metadata"]["resourceVersion"]
        await stamp.reconcile(NodeClassName("default"))
        assert apiserver.store.get(NODECLASSES, "default")["metadata"]["resourceVersion"] == written


async def test_the_kubernetes_version_comes_from_the_api_server(apiserver: APIServer):
    from karpy.sandbox.apiserver.discovery import KUBERNETES_VERSION

    async with controller_world(apiserver) as world:
        expected = f"{KUBERNETES_VERSION['major']}.{KUBERNETES_VERSION['minor'].rstrip('+')}"
        assert await server_version(world.client) == expected
        assert await KubernetesVersion(world.client).get() == expected


async def test_the_controllers_run_as_components_until_the_class_is_ready(
    apiserver: APIServer, aws_account: Account, aws_clients: AWSClients
):
    async with controller_world(apiserver) as world:
        apiserver.store.create(NODECLASSES, nodeclass_dict())
        minutes = 60 * 10**9
        settings = Settings(cluster_name=CLUSTER, ami_refresh_interval=3 * minutes,
                            subnet_refresh_interval=2 * minutes,
                            security_group_refresh_interval=4 * minutes)  # fmt: skip
        components = nodeclass_controllers(aws_clients, settings, state=world.state,
                                           client=world.client, clock=SYSTEM_CLOCK,
                                           recorder=world.recorder, k8s_version="1.31")  # fmt: skip
        assert [c.name for c in components] == ["nodeclass", "nodeclass.hash"]
        stop = asyncio.Event()
        tasks = [asyncio.create_task(c.run(stop)) for c in components]
        try:

            def ready_and_hashed() -> bool:
                stored = apiserver.store.get(NODECLASSES, "default")
                ready = _conditions(stored).get("Ready", {}).get("status") == "True"
                return ready and "karpenter.k8s.aws/ec2nodeclass-hash" in (
                    stored["metadata"].get("annotations") or {})  # fmt: skip

            await eventually(ready_and_hashed, within=20.0)
            resolver = components[0].reconciler.resolver  # type: ignore[attr-defined]
            assert (resolver.ami_refresh, resolver.subnet_refresh,
                    resolver.security_group_refresh) == (180.0, 120.0, 240.0)  # fmt: skip
        finally:
            stop.set()
            await asyncio.gather(*tasks)
