"""Which NodeClaims `NodeClaimDisruptionConditions` re-judges when something changes: a
node class change re-judges the NodeClaims that refer to it (its status resolving a new
AMI drifts them now, not at the next periodic recheck)."""

from __future__ import annotations

import attrs

from karpy.apis.ec2nodeclass import EC2NodeClass
from karpy.apis.ec2nodeclass_kind import EC2NODECLASS_KIND
from karpy.apis.nodeclaim import NodeClaim
from karpy.apis.nodepool import NodePool
from karpy.base.clock import SYSTEM_CLOCK
from karpy.disruption.conditions import NodeClaimDisruptionConditions
from karpy.state import kinds
from karpy.state.cluster import ClusterState, StateChange
from tests import factories as f


@attrs.frozen
class ServesEC2NodeClass:
    """The one part of a cloud provider these tests reach: its NodeClass kinds."""

    node_classes = (EC2NODECLASS_KIND,)


def claim(name: str, nodeclass: str) -> NodeClaim:
    ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": nodeclass}
    return NodeClaim.from_dict(f.nodeclaim(name, nodepool="default", node_class_ref=ref))


def nodeclass(name: str) -> EC2NodeClass:
    return EC2NodeClass.from_dict({
        "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": {"role": "KarpenterNodeRole", "amiSelectorTerms": [{"alias": "al2023@latest"}],
                 "subnetSelectorTerms": [{"tags": {"k": "v"}}],
                 "securityGroupSelectorTerms": [{"tags": {"k": "v"}}]},
    })  # fmt: skip


def test_a_node_class_change_rejudges_the_nodeclaims_that_refer_to_it() -> None:
    state = ClusterState()
    claims = [claim("a-1", "a"), claim("a-2", "a"), claim("b-1", "b")]
    state.apply(kinds.NODECLAIM, [(c.name, c) for c in claims], [])
    provider = ServesEC2NodeClass()
    conditions = NodeClaimDisruptionConditions(state, client=None, provider=provider,  # type: ignore[arg-type]
                                               clock=SYSTEM_CLOCK)  # fmt: skip
    assert EC2NODECLASS_KIND.kind in conditions.watches
    old, new = nodeclass("a"), nodeclass("a")
    change = StateChange(EC2NODECLASS_KIND.kind, "a", old, new)
    assert sorted(conditions.keys_for(change)) == ["a-1", "a-2"]
    unreferred = StateChange(EC2NODECLASS_KIND.kind, "c", None, nodeclass("c"))
    assert list(conditions.keys_for(unreferred)) == []


def test_a_nodepool_change_rejudges_its_nodeclaims_unless_only_its_status_changed() -> None:
    """The counter rewrites a pool's status every few seconds during a scale-up; that
    must not re-judge thousands of NodeClaims each time. A spec or annotation change does."""
    state = ClusterState()
    claims = [claim("default-1", "a"), claim("default-2", "a")]
    state.apply(kinds.NODECLAIM, [(c.name, c) for c in claims], [])
    provider = ServesEC2NodeClass()
    conditions = NodeClaimDisruptionConditions(state, client=None, provider=provider,  # type: ignore[arg-type]
                                               clock=SYSTEM_CLOCK)  # fmt: skip
    pool = NodePool.from_dict(f.nodepool("default"))
    counted = attrs.evolve(pool, status=attrs.evolve(pool.status, nodes=2))
    assert list(conditions.keys_for(StateChange(kinds.NODEPOOL, "default", pool, counted))) == []
    edited = NodePool.from_dict(f.nodepool("default", labels={"team": "a"}))
    change = StateChange(kinds.NODEPOOL, "default", counted, edited)
    assert sorted(conditions.keys_for(change)) == ["default-1", "default-2"]
    created = StateChange(kinds.NODEPOOL, "default", None, pool)
    assert sorted(conditions.keys_for(created)) == ["default-1", "default-2"]
