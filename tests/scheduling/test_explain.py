"""One concise reason per unschedulable pod, naming the first constraint that failed."""

from __future__ import annotations

from karpy.scheduling.clustersnapshot import ClusterSnapshot
from karpy.scheduling.solver import Scheduler
from tests import factories as f
from tests.scheduling.builders import ZONES, context, instance_type, offerings, pod
from tests.scheduling.scenario import ZONE, Round, catalog, entry

GPU_POOL = f.nodepool(
    "gpu", requirements=[f.nodepool_requirement("karpenter.k8s.aws/instance-family", "In", ["g5"])]
)
TYPES = catalog(
    entry("g5.xlarge", 4, 16, labels={"karpenter.k8s.aws/instance-family": "g5"}),
    entry("r5a.8xlarge", 32, 256, labels={"karpenter.k8s.aws/instance-family": "r5a"}),
)


def test_a_requirement_conflict_names_the_pool_and_the_values_it_allows() -> None:
    pod = f.pod("p", node_selector={"karpenter.k8s.aws/instance-family": "p5"})
    done = Round(GPU_POOL, pod, types=TYPES)
    assert done.reason(pod) == (
        'incompatible with nodepool "gpu": '
        "node selector karpenter.k8s.aws/instance-family=p5 not in [g5]"
    )


def test_a_resource_misfit_names_the_largest_instance_type() -> None:
    pod = f.pod("big", requests={"memory": "300Gi"})
    done = Round(pod, types=TYPES)
    assert done.reason(pod) == (
        'nodepool "default": no instance type has 300Gi memory after overhead '
        "(largest: r5a.8xlarge, 262044Mi allocatable)"
    )


def test_an_undefined_label_is_explained() -> None:
    pod = f.pod("p", node_selector={"team": "search"})
    reason = Round(pod).reason(pod) or ""
    assert reason.startswith(
        'incompatible with nodepool "default": node selector requires label team'
    )


def test_an_untolerated_taint_is_named() -> None:
    pool = f.nodepool("infra", taints=[f.taint("dedicated", "infra")])
    pod = f.pod("p")
    assert Round(pool, pod).reason(pod) == (
        'incompatible with nodepool "infra": did not tolerate taint dedicated=infra:NoSchedule'
    )


def test_each_pool_gets_its_own_reason() -> None:
    infra = f.nodepool("infra", taints=[f.taint("dedicated", "infra")])
    pod = f.pod("p", node_selector={"karpenter.k8s.aws/instance-family": "p5"})
    reason = Round(infra, GPU_POOL, pod, types=TYPES).reason(pod) or ""
    assert reason.count("incompatible with nodepool") == 2
    assert reason.index('"gpu"') < reason.index('"infra"')


def test_a_missing_zone_offering_is_explained() -> None:
    pod = f.pod("p", node_selector={ZONE: "zone-z"})
    assert "zone-z" in (Round(pod).reason(pod) or "")


def test_ignored_pods_say_why() -> None:
    pod = f.pod("p", node_selector={"kubernetes.io/hostname": "n1"})
    assert (Round(pod).reason(pod) or "").startswith("ignored by karpenter: invalid node selector")


def test_no_nodepools_is_explained() -> None:
    pod = f.pod("p")
    done = Round(f.nodepool("down", ready=False), pod)
    assert done.reason(pod) == "no ready nodepools"


def test_a_spread_that_cannot_be_met_names_skew_and_counts() -> None:
    pool = f.nodepool("default", requirements=[f.nodepool_requirement(ZONE, "In", ["zone-a"])])
    spread = f.topology_spread(ZONE, match_labels={"app": "web"}, min_domains=2)
    pods = [
        f.pod(f"w{i}", labels={"app": "web"}, topology_spread_constraints=[spread])
        for i in range(2)
    ]
    reason = Round(pool, pods).reason(pods[1]) or ""
    assert reason.startswith(
        'nodepool "default": topology spread on topology.kubernetes.io/zone '
        "(maxSkew 1, minDomains 2)"
    )
    assert "counts {zone-a=1}" in reason


def test_affinity_to_nothing_says_so() -> None:
    pod = f.pod("app", pod_affinity=[f.pod_affinity_term(ZONE, match_labels={"app": "db"})])
    assert Round(pod).reason(pod) == (
        'nodepool "default": pod affinity on topology.kubernetes.io/zone: no pod with app=db '
        "is running or planned"
    )


def test_types_big_enough_but_not_purchasable_are_told_apart_from_types_too_small() -> None:
    # r5a.8xlarge would hold the pod, but its spot offerings are in the insufficient-
    # capacity cache: the reason must say so rather than blame the instance types' size.
    spot_and_on_demand = ("spot", "on-demand")
    small = instance_type(
        "m5.large", "2", "8Gi", offers=offerings(0.1, capacity_types=spot_and_on_demand)
    )
    big = instance_type(
        "r5a.8xlarge", "32", "256Gi", offers=offerings(1.0, capacity_types=spot_and_on_demand)
    )
    out = frozenset(("r5a.8xlarge", zone, "spot") for zone in ZONES)
    ctx = context([small, big], unavailable_offerings=out)
    web = pod("web", requests={"memory": "100Gi"},
              node_selector={"karpenter.sh/capacity-type": "spot"})  # fmt: skip
    (refused,) = Scheduler(ctx, ClusterSnapshot()).solve([web]).unschedulable
    assert refused.render() == (
        'nodepool "default": instance types with {memory: 100Gi, pods: 1} '
        "(e.g. r5a.8xlarge) have no available offering for karpenter.sh/capacity-type In "
        "[spot] (none offered, or insufficient capacity recently)"
    )
