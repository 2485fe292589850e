"""The cluster as a scheduling round sees it, besides the pods to place: Nodes, the
capacity pods can go to (nodes and in-flight NodeClaims), bound and DaemonSet pods,
namespaces and volumes. Built by the caller (provisioning, disruption's what-ifs, the
simulator) and read by the solver and its helpers."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from karpy.scheduling.clusterindex import ClusterIndex
from karpy.scheduling.volumes import VolumeCatalog

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.scheduling.nodes import ClusterNode, Node
    from karpy.scheduling.pods import Pod

__all__ = ["ClusterSnapshot"]


@attrs.frozen(slots=True)
class ClusterSnapshot:
    """The cluster as a round sees it, besides the pods to place."""

    nodes: tuple[Node, ...] = ()  # every Node object (topology counts pods by node name)
    capacity: tuple[ClusterNode, ...] = ()  # nodes and in-flight NodeClaims
    bound_pods: tuple[Pod, ...] = ()  # pods with spec.nodeName
    daemonset_pods: tuple[Pod, ...] = ()  # one pod per DaemonSet, from its template
    namespaces: Mapping[str, Mapping[str, str]] = attrs.field(factory=dict)  # name -> labels
    volumes: VolumeCatalog = attrs.field(factory=VolumeCatalog)
    # derived from the bound pods once, shared by the copies that keep them (what-ifs)
    index: ClusterIndex = attrs.field(factory=ClusterIndex, eq=False, repr=False)
