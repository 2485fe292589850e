"""NodeClaims are written as Karpenter writes them, and pass the NodeClaim CRD."""

from __future__ import annotations

import random

from karpy.apis.hashes import nodepool_template_hash
from karpy.apis.nodeclaim import NodeClaim
from karpy.apis.nodepool import NodePool
from karpy.rounds.nodeclaims import nodeclaim_for, random_suffix
from karpy.scheduling.solver import Scheduler
from karpy.simulate.snapshot import build_input
from tests import factories as f
from tests.simulate.conftest import CATALOG

CATALOG_TWO = {
    "instanceTypes": [
        *CATALOG["instanceTypes"],
        {
            "name": "m5.xlarge",
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "58"},
            "overhead": {"cpu": "80m", "memory": "1Gi"},
            "labels": {"kubernetes.io/arch": "amd64"},
            "offerings": [
                {"zone": "us-west-2a", "capacityType": "spot", "price": 0.06},
                {"zone": "us-west-2a", "capacityType": "on-demand", "price": 0.192},
            ],
        },
    ]
}


def decide(pool_obj, *pods):
    inputs = build_input([pool_obj, *pods], CATALOG_TWO, only_unschedulable=True)
    results = Scheduler(inputs.context, inputs.cluster).solve(inputs.pods)
    return inputs.context, results


def test_a_nodeclaim_carries_the_pools_template_owner_hash_and_the_decision():
    pool_obj = f.nodepool(
        "general",
        labels={"team": "web"},
        annotations={"example.com/owner": "ops"},
        taints=[f.taint("dedicated", "web")],
        startup_taints=[f.taint("example.com/booting")],
        termination_grace_period="1h",
    )
    pool_obj["metadata"]["uid"] = "pool-uid"
    pod = f.unschedulable_pod("web-1", requests={"cpu": "1", "memory": "1Gi"},
                              tolerations=[f.toleration("dedicated", value="web")])  # fmt: skip
    context, results = decide(pool_obj, pod)
    (plan,) = results.new_nodeclaims
    nodepool = NodePool.from_dict(pool_obj)
    body = nodeclaim_for(plan, nodepool, context.templates["general"], name="general-abcde",
                         well_known=context.well_known_labels)  # fmt: skip
    claim = NodeClaim.from_dict(body)
    assert claim.validate_schema() == []
    meta = body["metadata"]
    assert meta["name"] == "general-abcde"
    assert meta["finalizers"] == ["karpenter.sh/termination"]
    assert meta["ownerReferences"] == [
        {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "name": "general",
         "uid": "pool-uid", "blockOwnerDeletion": True}
    ]  # fmt: skip
    assert meta["labels"] == {
        "team": "web",
        "karpenter.sh/nodepool": "general",
        "karpenter.k8s.aws/ec2nodeclass": "default",
    }
    assert meta["annotations"]["example.com/owner"] == "ops"
    assert meta["annotations"]["karpenter.sh/nodepool-hash"] == nodepool_template_hash(
        nodepool.spec.template
    )
    assert meta["annotations"]["karpenter.sh/nodepool-hash-version"] == "v3"
    assert meta["annotations"]["karpenter.sh/nodeclaim-min-values-relaxed"] == "false"
    spec = body["spec"]
    by_key = {r["key"]: r for r in spec["requirements"]}
    assert by_key["node.kubernetes.io/instance-type"]["values"] == ["m5.large", "m5.xlarge"]
    assert by_key["karpenter.sh/capacity-type"]["values"] == ["on-demand", "spot"]
    assert by_key["karpenter.sh/nodepool"]["values"] == ["general"]
    assert "karpenter.sh/registered" not in by_key, "simulation-only keys stay out"
    assert spec["resources"]["requests"] == {"cpu": "1", "memory": "1Gi", "pods": "1"}
    assert spec["taints"] == [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}]
    assert spec["startupTaints"] == [{"key": "example.com/booting", "effect": "NoSchedule"}]
    assert spec["terminationGracePeriod"] == "1h"
    assert spec["expireAfter"] == "720h"
    assert spec["nodeClassRef"] == {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                    "name": "default"}  # fmt: skip


def test_names_use_the_generate_name_alphabet():
    rng = random.Random(7)
    names = {random_suffix(rng) for _ in range(200)}
    assert len(names) == 200
    assert all(len(n) == 5 and set(n) <= set("bcdfghjklmnpqrstvwxz2456789") for n in names)
