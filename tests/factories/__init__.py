"""Builders of Kubernetes objects as plain dicts, for tests across karpy.

Every builder returns a fresh ``dict`` shaped exactly like the object's JSON on the wire
(what ``kubectl get -o json`` prints), so the same value can be handed to ``karpy
simulate``, written to the API server emulator or parsed by the API models. Builders take
keyword arguments with defaults that make a valid, minimal object; names default to
unique generated ones (``pod-17``), so tests never collide on names by accident.

Conventions:

- ``None`` means "leave the field out"; an empty sequence means "set it to ``[]``" where
  Kubernetes distinguishes the two (pod affinity terms, for instance).
- Quantities may be given as strings (``"1500m"``, ``"2Gi"``) or ints (cores, bytes).
- Small pieces (``match_expression``, ``toleration``, ``taint``, ``topology_spread``,
  ``pod_affinity_term`` ...) compose into the big builders.

The only module state is the counter behind :func:`unique_name`. Builders live in one
module per kind group (`base`, `pods`, `nodes`, `workloads`, `storage`); import them
from here.
"""

from __future__ import annotations

from tests.factories.base import (
    DEFAULT_IMAGE,
    DEFAULT_NODE_CLASS_REF,
    SOME_TIME,
    Obj,
    condition,
    label_selector,
    match_expression,
    metadata,
    nodepool_requirement,
    owned_by,
    owner_reference,
    pod_affinity_term,
    preferred_node_term,
    taint,
    toleration,
    topology_spread,
    unique_name,
    weighted,
)
from tests.factories.nodes import (
    node,
    node_overlay,
    nodeclaim,
    nodepool,
)
from tests.factories.pods import (
    container,
    ephemeral_volume,
    pod,
    pods,
    pvc_volume,
    sidecar,
    unschedulable_pod,
    unschedulable_pods,
)
from tests.factories.storage import (
    csi_node,
    persistent_volume,
    persistent_volume_claim,
    storage_class,
)
from tests.factories.workloads import (
    capacity_buffer,
    daemonset,
    deployment,
    namespace,
    pod_disruption_budget,
    pod_template,
    replica_set,
    runtime_class,
    service,
    stateful_set,
)

__all__ = [
    "DEFAULT_IMAGE",
    "DEFAULT_NODE_CLASS_REF",
    "SOME_TIME",
    "Obj",
    "capacity_buffer",
    "condition",
    "container",
    "csi_node",
    "daemonset",
    "deployment",
    "ephemeral_volume",
    "label_selector",
    "match_expression",
    "metadata",
    "namespace",
    "node",
    "node_overlay",
    "nodeclaim",
    "nodepool",
    "nodepool_requirement",
    "owned_by",
    "owner_reference",
    "persistent_volume",
    "persistent_volume_claim",
    "pod",
    "pod_affinity_term",
    "pod_disruption_budget",
    "pod_template",
    "pods",
    "preferred_node_term",
    "pvc_volume",
    "replica_set",
    "runtime_class",
    "service",
    "sidecar",
    "stateful_set",
    "storage_class",
    "taint",
    "toleration",
    "topology_spread",
    "unique_name",
    "unschedulable_pod",
    "unschedulable_pods",
    "weighted",
]
