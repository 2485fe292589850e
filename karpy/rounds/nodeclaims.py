"""A scheduling decision (`NodeClaimPlan`) written as the NodeClaim object to create.

The object is what Karpenter's ``NodeClaimTemplate.ToNodeClaim`` makes:

* name ``<nodepool>-<5 random characters>``, an owner reference to its NodePool (with
  ``blockOwnerDeletion``), and the ``karpenter.sh/termination`` finalizer (Karpenter's
  lifecycle controller adds it before launching; adding it at creation saves a write);
* labels: the NodePool template's labels, ``karpenter.sh/nodepool``, the NodeClass label
  (``<group>/<kind in lower case>`` of its ``nodeClassRef``), and values resolved for
  custom (not well-known) requirement keys; well-known labels such as the zone come
  later, from the launch;
* annotations: the template's, the NodePool hash and its version (drift detection) and
  the plan's own (``karpenter.sh/nodeclaim-min-values-relaxed``, overlay markers);
* spec: the plan's requirements narrowed to the decision, with its instance types
  (cheapest first) and capacity types as ``In`` requirements; ``resources.requests`` (the
  pods plus the DaemonSet overhead it was sized for); taints and startup taints;
  ``nodeClassRef``, ``expireAfter`` and ``terminationGracePeriod`` from the template.

A static NodePool's NodeClaims (`template_nodeclaim_for`) are the same object without
a plan: the template's requirements as they stand and no requests.

Unlike Karpenter, the name is chosen here rather than by ``generateName``: a create
whose answer was lost can then be checked by name instead of creating a second NodeClaim.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, Final

from karpy.apis.hashes import NODEPOOL_HASH_VERSION, nodepool_template_hash
from karpy.apis.labels import (
    ANNOTATION_NODEPOOL_HASH,
    ANNOTATION_NODEPOOL_HASH_VERSION,
    FINALIZER_TERMINATION,
)
from karpy.apis.resources import format_resource_list
from karpy.scheduling.templates import SIMULATION_ONLY_KEYS, compile_nodepool

if TYPE_CHECKING:
    from karpy.apis.nodepool import NodePool
    from karpy.scheduling.requirements import Requirements
    from karpy.scheduling.results import NodeClaimPlan
    from karpy.scheduling.templates import NodeClaimTemplate

__all__ = ["nodeclaim_for", "random_suffix", "template_nodeclaim_for"]

# apimachinery's generateName alphabet: no vowels (no words), no 0/1/3 (look-alikes).
_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"


def random_suffix(rng: random.Random | None = None, length: int = 5) -> str:
    pick = (rng or random).choice
    return "".join(pick(_ALPHABET) for _ in range(length))


def nodeclaim_for(
    plan: NodeClaimPlan,
    nodepool: NodePool,
    template: NodeClaimTemplate,
    *,
    name: str,
    well_known: frozenset[str],
) -> dict[str, Any]:
    """The NodeClaim object for ``plan`` (see the module docstring)."""
    requirements = plan.launch_requirements().without(*SIMULATION_ONLY_KEYS)
    labels = {**template.labels, **template.custom_labels(plan.requirements, well_known)}
    annotations = {
        **template.annotations,
        ANNOTATION_NODEPOOL_HASH: nodepool_template_hash(nodepool.spec.template),
        ANNOTATION_NODEPOOL_HASH_VERSION: NODEPOOL_HASH_VERSION,
        **plan.annotations,
    }
    spec = _spec(nodepool, requirements)
    spec["resources"] = {"requests": format_resource_list(plan.requests)}
    return _nodeclaim(nodepool, name, labels, annotations, spec)


def template_nodeclaim_for(
    nodepool: NodePool, *, name: str, well_known: frozenset[str]
) -> dict[str, Any]:
    """The NodeClaim a static NodePool's template makes on its own, with no scheduling
    decision behind it: the template's requirements as they are (no instance types
    chosen, no requests), so the cloud provider picks the instance type at launch, as
    Karpenter does for static pools."""
    template = compile_nodepool(nodepool)
    requirements = template.requirements.without(*SIMULATION_ONLY_KEYS)
    labels = {**template.labels, **template.custom_labels(template.requirements, well_known)}
    annotations = {
        **template.annotations,
        ANNOTATION_NODEPOOL_HASH: nodepool_template_hash(nodepool.spec.template),
        ANNOTATION_NODEPOOL_HASH_VERSION: NODEPOOL_HASH_VERSION,
    }
    return _nodeclaim(nodepool, name, labels, annotations, _spec(nodepool, requirements))


def _spec(nodepool: NodePool, requirements: Requirements) -> dict[str, Any]:
    template_spec = nodepool.spec.template.spec.to_dict()
    spec: dict[str, Any] = {
        "nodeClassRef": template_spec["nodeClassRef"],
        "expireAfter": template_spec["expireAfter"],
        "requirements": requirements.to_node_selector(),
    }
    for field in ("taints", "startupTaints", "terminationGracePeriod"):
        if field in template_spec:
            spec[field] = template_spec[field]
    return spec


def _nodeclaim(
    nodepool: NodePool,
    name: str,
    labels: dict[str, str],
    annotations: dict[str, str],
    spec: dict[str, Any],
) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": name,
            # The lifecycle controller would add it first thing; writing it now saves a
            # write per NodeClaim, and no instance ever exists without it.
            "finalizers": [FINALIZER_TERMINATION],
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [
                {
                    "apiVersion": "karpenter.sh/v1",
                    "kind": "NodePool",
                    "name": nodepool.name,
                    "uid": nodepool.metadata.uid,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
    }
