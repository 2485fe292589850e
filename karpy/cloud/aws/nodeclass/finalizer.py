"""The ``karpenter.k8s.aws/termination`` finalizer of an EC2NodeClass: what has to happen
before a deleted class may go.

A class is deleted only after the AWS resources made for it are: its launch templates
(found by the tags ``karpenter.k8s.aws/ec2nodeclass=<name>``,
``kubernetes.io/cluster/<cluster>=owned`` and ``eks:eks-cluster-name=<cluster>`` and karpy's
name prefix, checked again on each answer) and its managed instance profiles. That must
wait until no NodeClaim refers to the class any more — their instances still use those
resources, and their termination needs the class — so while some do, the finalizer
stays, a ``WaitingOnNodeClaimTermination`` event names them (again every ten minutes),
and every NodeClaim deletion wakes the controller to look again.

Finalizer edits are JSON merge patches of the whole list carrying the resourceVersion
that was read, so a concurrent edit of the list fails with 409 instead of being lost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ClientError

from karpy.apis.labels import FINALIZER_AWS_TERMINATION, LABEL_AWS_NODECLASS
from karpy.cloud.aws.launch.tags import tags_of
from karpy.cloud.aws.launch.templates import is_owned_template, owned_template_filters
from karpy.cloud.aws.nodeclass.selectors import describe_all
from karpy.cloud.aws.nodeclasses import EC2NODECLASSES
from karpy.kube.events import Event, ObjectRef
from karpy.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Sequence

    from karpy.apis.ec2nodeclass import EC2NodeClass
    from karpy.kube.client import KubeClient

__all__ = [
    "WAITING_REQUEUE",
    "add_finalizer",
    "delete_launch_templates",
    "remove_finalizer",
    "waiting_event",
]

log = get_logger("aws.nodeclass.finalizer")

WAITING_REQUEUE: Final = 600.0  # seconds between WaitingOnNodeClaimTermination events


def pretty_names(names: Sequence[str], limit: int = 5) -> str:
    """``a, b, c, d, e and 2 other(s)``, as Karpenter lists names in messages."""
    shown = ", ".join(names[:limit])
    return f"{shown} and {len(names) - limit} other(s)" if len(names) > limit else shown


def waiting_event(nodeclass: EC2NodeClass, claims: Sequence[str]) -> Event:
    ref = ObjectRef("EC2NodeClass", nodeclass.name, uid=nodeclass.metadata.uid,
                    api_version=nodeclass.API_VERSION)  # fmt: skip
    message = f"Waiting on NodeClaim termination for {pretty_names(claims)}"
    return Event(
        ref, "Normal", "WaitingOnNodeClaimTermination", message,
        dedupe_values=(nodeclass.metadata.uid,), dedupe_timeout=WAITING_REQUEUE,
    )  # fmt: skip


async def add_finalizer(client: KubeClient, nodeclass: EC2NodeClass) -> str:
    """Add the termination finalizer; the class's new resourceVersion."""
    finalizers = [*nodeclass.metadata.finalizers, FINALIZER_AWS_TERMINATION]
    return await _patch_finalizers(client, nodeclass, finalizers)


async def remove_finalizer(client: KubeClient, nodeclass: EC2NodeClass) -> str:
    finalizers = [f for f in nodeclass.metadata.finalizers if f != FINALIZER_AWS_TERMINATION]
    return await _patch_finalizers(client, nodeclass, finalizers)


async def _patch_finalizers(
    client: KubeClient, nodeclass: EC2NodeClass, finalizers: list[str]
) -> str:
    patch = {"metadata": {"finalizers": finalizers,
                          "resourceVersion": nodeclass.metadata.resource_version}}  # fmt: skip
    answer = await client.patch(EC2NODECLASSES, nodeclass.name, patch)
    return str(answer["metadata"]["resourceVersion"])


async def delete_launch_templates(ec2: Any, nodeclass: str, cluster_name: str) -> list[str]:
    """Delete the launch templates karpy made for ``nodeclass``; their names. Only those
    `is_owned_template` accepts: a template made by hand that copies the class tag is kept."""
    found = await describe_all(
        ec2, "describe_launch_templates", "LaunchTemplates",
        Filters=[*owned_template_filters(cluster_name),
                 {"Name": f"tag:{LABEL_AWS_NODECLASS}", "Values": [nodeclass]}],
    )  # fmt: skip
    templates = [t for t in found
                 if is_owned_template(str(t.get("LaunchTemplateName", "")), tags_of(t.get("Tags")),
                                      cluster_name)]  # fmt: skip
    deleted = []
    for template in templates:
        try:
            await ec2.delete_launch_template(LaunchTemplateId=template["LaunchTemplateId"])
        except ClientError as exc:
            if "NotFound" not in str(exc.response.get("Error", {}).get("Code", "")):
                raise
            continue
        deleted.append(str(template.get("LaunchTemplateName")))
    if deleted:
        log.info("deleted launch templates", launchTemplates=deleted,
                 EC2NodeClass={"name": nodeclass})  # fmt: skip
    return deleted
