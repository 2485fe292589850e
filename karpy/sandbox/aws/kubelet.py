"""`EC2Kubelets`: turn the cluster's running EC2 instances into Nodes, and back.

With the AWS provider an instance is not a Node: karpy launches an instance and waits for
a Node with its provider ID to register. In a real cluster the instance boots, its
kubelet reads the user data and registers the Node, and the cloud-controller-manager
adds the cloud's facts and deletes the Node once the instance is gone. In the sandbox,
moto's instances never boot, so this stand-in does both jobs, polling EC2 about once a
second as a cloud-controller-manager does:

- **Register.** For each instance tagged ``kubernetes.io/cluster/<cluster>: owned`` that
  is ``running`` and has no Node: a Node named after its ``PrivateDnsName``, with
  ``spec.providerID`` ``aws:///<zone>/<instance id>``; the labels of its user data plus
  those kubelet and cloud-controller-manager set (instance type, zone, zone id, region,
  arch, os, hostname); its user data's register-with-taints; ``status.capacity`` and
  ``allocatable`` computed as a kubelet would (`karpy.sandbox.aws.nodecapacity`), from
  the instance type, the user data (`karpy.sandbox.aws.userdata`) and the volume sizes
  of its launch template; its private IP and DNS name as addresses.
- **Deregister.** A Node with an ``aws:///`` provider ID whose instance is no longer
  pending or running (terminated, or gone) is deleted; karpy's finalizer then runs as it
  would on EKS.

Readiness, leases and pods are left to the sandbox's generic kubelets
(`karpy.sandbox.cluster.kubelet`), which keep the capacity set here. The stand-in's own
EC2 calls carry a header that exempts them from injected throttling: faults are meant
for karpy, not for the cluster's machinery.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from karpy.cloud.aws.clients import AWSClients
from karpy.sandbox.apiserver.discovery import KUBERNETES_VERSION
from karpy.sandbox.apiserver.errors import APIError
from karpy.sandbox.aws.nodecapacity import node_resources
from karpy.sandbox.aws.userdata import parse_user_data
from karpy.sandbox.cluster import facts

if TYPE_CHECKING:
    from karpy.sandbox.aws.userdata import NodeBootstrap
    from karpy.sandbox.cluster.access import ClusterAccess

__all__ = ["EXEMPT_HEADER", "EC2Kubelets", "build_node"]

log = logging.getLogger("karpy.sandbox.aws.kubelet")

PROVIDER_PREFIX: Final = "aws:///"
LT_ID_TAG: Final = "aws:ec2launchtemplate:id"
LT_VERSION_TAG: Final = "aws:ec2launchtemplate:version"
EXEMPT_HEADER: Final = "x-karpy-sandbox-component"
DEFAULT_VOLUME_GIB: Final = 20
# The emulator's Kubernetes version, as the EKS AMIs the account is seeded with run it.
KUBELET_VERSION: Final = (
    f"v{KUBERNETES_VERSION['major']}.{KUBERNETES_VERSION['minor']}.2-eks-7f9249a"
)


def provider_id(instance: dict[str, Any]) -> str:
    return f"{PROVIDER_PREFIX}{instance['Placement']['AvailabilityZone']}/{instance['InstanceId']}"


def instance_id_of(node: dict[str, Any]) -> str | None:
    found = str((node.get("spec") or {}).get("providerID") or "")
    if not found.startswith(PROVIDER_PREFIX):
        return None
    return found.rsplit("/", 1)[-1] or None


def build_node(
    instance: dict[str, Any],
    type_info: dict[str, Any],
    bootstrap: NodeBootstrap,
    volume_gib: int,
    region: str,
    *,
    zone_id: str | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Node (object, status) a kubelet and cloud-controller-manager would register."""
    name = instance["PrivateDnsName"]
    zone = instance["Placement"]["AvailabilityZone"]
    archs = type_info.get("ProcessorInfo", {}).get("SupportedArchitectures") or ["x86_64"]
    arch = "arm64" if "arm64" in archs else "amd64"
    resources = node_resources(
        int(type_info["VCpuInfo"]["DefaultVCpus"]),
        int(type_info["MemoryInfo"]["SizeInMiB"]),
        volume_gib,
        bootstrap,
    )
    labels = dict(bootstrap.labels)
    labels.update({
        "node.kubernetes.io/instance-type": instance["InstanceType"],
        "beta.kubernetes.io/instance-type": instance["InstanceType"],
        "topology.kubernetes.io/zone": zone,
        "topology.kubernetes.io/region": region,
        "failure-domain.beta.kubernetes.io/zone": zone,
        "failure-domain.beta.kubernetes.io/region": region,
        "kubernetes.io/arch": arch,
        "beta.kubernetes.io/arch": arch,
        "kubernetes.io/os": "linux",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/hostname": name,
    })  # fmt: skip
    if zone_id:
        labels["topology.k8s.aws/zone-id"] = zone_id
    spec: dict[str, Any] = {"providerID": provider_id(instance)}
    if bootstrap.taints:
        spec["taints"] = [t.to_dict() for t in bootstrap.taints]
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "alpha.kubernetes.io/provided-node-ip": instance.get("PrivateIpAddress", ""),
            },
        },
        "spec": spec,
    }
    status = {
        "capacity": resources.capacity,
        "allocatable": resources.allocatable,
        "addresses": [
            {"type": "InternalIP", "address": instance.get("PrivateIpAddress", "")},
            {"type": "InternalDNS", "address": name},
            {"type": "Hostname", "address": name},
        ],
        "nodeInfo": {
            "machineID": secrets.token_hex(16), "systemUUID": secrets.token_hex(16),
            "bootID": secrets.token_hex(16), "kernelVersion": "6.1.112-124.190.amzn2023.x86_64",
            "osImage": "Bottlerocket OS" if bootstrap.format == "bottlerocket"
            else "Amazon Linux 2023.6.20241031",
            "containerRuntimeVersion": "containerd://1.7.22", "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": arch,
        },
    }  # fmt: skip
    return node, status


def _exempt(request: Any, **_: Any) -> None:
    request.headers[EXEMPT_HEADER] = "kubelet"


class EC2Kubelets:
    """The register / deregister loop of the module docstring."""

    def __init__(
        self,
        clients: AWSClients,  # where to connect; the stand-in opens its own clients
        access: ClusterAccess,
        cluster_name: str,
        *,
        interval: float = 1.0,
    ) -> None:
        # Clients of its own: the exemption header must not reach the caller's clients
        # (which may be karpy's, in a test).
        self.clients = AWSClients(
            clients.region,
            endpoint_url=clients.endpoint_url,
            endpoints=clients.endpoints,
            credentials=clients.credentials,
        )
        self.access = access
        self.cluster_name = cluster_name
        self.interval = interval
        self._types: dict[str, dict[str, Any]] = {}
        self._volumes: dict[tuple[str, str], int] = {}
        self._zone_ids: dict[str, str] = {}
        self._task: asyncio.Task[None] | None = None
        self._ec2: Any = None

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        """Stop the loop (if started) and close the stand-in's clients."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self._ec2 = None
        await self.clients.aclose()

    async def _loop(self) -> None:
        while True:
            try:
                await self.sync_once()
            except (ClientError, BotoCoreError) as error:
                log.warning("ec2 kubelet: EC2 call failed, retrying: %s", error)
            except Exception:
                log.exception("ec2 kubelet: sync failed")
            await asyncio.sleep(self.interval)

    async def ec2(self) -> Any:
        if self._ec2 is None:
            ec2 = await self.clients.ec2()
            ec2.meta.events.register("before-sign.ec2.*", _exempt)
            self._ec2 = ec2
        return self._ec2

    async def sync_once(self) -> None:
        """One pass: register Nodes for new running instances, delete Nodes of gone ones."""
        ec2 = await self.ec2()
        live: dict[str, dict[str, Any]] = {}
        paginator = ec2.get_paginator("describe_instances")
        filters = [
            {"Name": f"tag:kubernetes.io/cluster/{self.cluster_name}", "Values": ["owned"]},
            {"Name": "instance-state-name", "Values": ["pending", "running"]},
        ]
        async for page in paginator.paginate(Filters=filters):
            for reservation in page["Reservations"]:
                for instance in reservation["Instances"]:
                    live[instance["InstanceId"]] = instance
        registered: dict[str, Any] = {}
        for entry in self.access.entries(self.access.nodes):
            instance_id = instance_id_of(entry.obj)
            if instance_id is None:
                continue
            registered[instance_id] = entry
            if instance_id not in live and not facts.is_deleting(entry.obj):
                log.info("ec2 kubelet: instance %s is gone, deleting node %s",
                         instance_id, entry.obj["metadata"]["name"])  # fmt: skip
                with contextlib.suppress(APIError):
                    self.access.delete(self.access.nodes, entry)
        for instance_id, instance in live.items():
            if instance["State"]["Name"] == "running" and instance_id not in registered:
                await self.register(instance)

    async def register(self, instance: dict[str, Any]) -> None:
        ec2 = await self.ec2()
        attribute = await ec2.describe_instance_attribute(
            InstanceId=instance["InstanceId"], Attribute="userData"
        )
        bootstrap = parse_user_data((attribute.get("UserData") or {}).get("Value"))
        for problem in bootstrap.problems:
            log.warning("ec2 kubelet: instance %s user data: %s", instance["InstanceId"], problem)
        node, status = build_node(
            instance,
            await self._type_info(instance["InstanceType"]),
            bootstrap,
            await self._volume_gib(instance, bootstrap.format),
            self.clients.region,
            zone_id=await self._zone_id(instance["Placement"]["AvailabilityZone"]),
        )
        name = node["metadata"]["name"]
        if self.access.entry(self.access.nodes, "", name) is not None:
            return
        try:
            self.access.create(self.access.nodes, node)
        except APIError as error:
            log.warning("ec2 kubelet: cannot register node %s: %s", name, error)
            return
        entry = self.access.entry(self.access.nodes, "", name)
        if entry is not None:
            self.access.write_status(self.access.nodes, entry, {**entry.obj.get("status", {}),
                                                                **status})  # fmt: skip
        log.info("ec2 kubelet: registered node %s for %s", name, instance["InstanceId"])

    async def _type_info(self, instance_type: str) -> dict[str, Any]:
        found = self._types.get(instance_type)
        if found is None:
            ec2 = await self.ec2()
            answer = await ec2.describe_instance_types(InstanceTypes=[instance_type])
            found = answer["InstanceTypes"][0]
            self._types[instance_type] = found
        return found

    async def _zone_id(self, zone: str) -> str | None:
        if not self._zone_ids:
            ec2 = await self.ec2()
            answer = await ec2.describe_availability_zones()
            self._zone_ids = {z["ZoneName"]: z["ZoneId"] for z in answer["AvailabilityZones"]}
        return self._zone_ids.get(zone)

    async def _volume_gib(self, instance: dict[str, Any], image_format: str) -> int:
        """The size of the volume the kubelet's ephemeral storage lives on: from the launch
        template the instance came from (Bottlerocket: its data volume ``/dev/xvdb``; other
        images: the root volume), else the instance's largest volume."""
        tags = {t["Key"]: t["Value"] for t in instance.get("Tags") or ()}
        template = tags.get(LT_ID_TAG)
        if template:
            key = (template, tags.get(LT_VERSION_TAG, "$Latest"))
            if key not in self._volumes:
                self._volumes[key] = await self._template_volume(*key, image_format)
            if self._volumes[key]:
                return self._volumes[key]
        ec2 = await self.ec2()
        ids = [m["Ebs"]["VolumeId"] for m in instance.get("BlockDeviceMappings") or ()
               if m.get("Ebs", {}).get("VolumeId")]  # fmt: skip
        if ids:
            volumes = (await ec2.describe_volumes(VolumeIds=ids))["Volumes"]
            return max(int(v["Size"]) for v in volumes)
        return DEFAULT_VOLUME_GIB

    async def _template_volume(self, template: str, version: str, image_format: str) -> int:
        ec2 = await self.ec2()
        try:
            answer = await ec2.describe_launch_template_versions(
                LaunchTemplateId=template, Versions=[version]
            )
        except ClientError as error:
            log.warning("ec2 kubelet: launch template %s: %s", template, error)
            return 0
        versions = answer.get("LaunchTemplateVersions") or []
        data = versions[0].get("LaunchTemplateData", {}) if versions else {}
        sizes = {m.get("DeviceName"): int(m["Ebs"]["VolumeSize"])
                 for m in data.get("BlockDeviceMappings") or ()
                 if m.get("Ebs", {}).get("VolumeSize")}  # fmt: skip
        if not sizes:
            return 0
        preferred = "/dev/xvdb" if image_format == "bottlerocket" else "/dev/xvda"
        return sizes.get(preferred, max(sizes.values()))
