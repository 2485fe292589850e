"""Instance selection: the cheapest compatible offering launches, and minValues is kept.

These follow the Its of Karpenter's ``instance_selection_test.go``.
"""

from __future__ import annotations

from typing import Any

from karpy.base.quantity import parse_quantity
from karpy.scheduling.clustersnapshot import ClusterSnapshot
from karpy.scheduling.solver import Scheduler
from tests import factories as f
from tests.scheduling.builders import context, instance_type, nodepool, offerings, pod
from tests.scheduling.scenario import Round, catalog, entry

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ARCH = "kubernetes.io/arch"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
FAKE_OVERHEAD = {"cpu": "100m", "memory": "10Mi"}
NEARLY_ONE_CPU = {"cpu": "900m", "memory": "900Mi"}


def spot_type(name: str, cpu: int, price: float, arch: str = "arm64") -> dict[str, Any]:
    return entry(
        name,
        cpu,
        cpu,
        price=price,
        zones=("test-zone-1-spot",),
        capacity_types=("spot",),
        labels={ARCH: arch},
        overhead=FAKE_OVERHEAD,
    )


def one_and_four_cpu(arch_of_second: str = "arm64") -> dict[str, Any]:
    """A 1-cpu type that holds one NEARLY_ONE_CPU pod and a 4-cpu type that holds several."""
    return catalog(
        spot_type("instance-type-1", 1, 0.52), spot_type("instance-type-2", 4, 1.0, arch_of_second)
    )


def pool(*requirements: dict[str, Any]) -> dict[str, Any]:
    return f.nodepool("default", requirements=list(requirements))


def two_pods() -> list[dict[str, Any]]:
    return [f.pod(f"p{i}", requests=NEARLY_ONE_CPU) for i in range(2)]


def test_the_cheapest_on_demand_type_wins_whatever_spot_would_cost() -> None:
    def priced(name: str, on_demand: float, spot: float) -> dict[str, Any]:
        it = entry(name, 1, 1, zones=("test-zone-1a",), overhead=FAKE_OVERHEAD)
        it["offerings"] = [
            {"zone": "test-zone-1a", "capacityType": "on-demand", "price": on_demand},
            {"zone": "test-zone-1a", "capacityType": "spot", "price": spot},
        ]
        return it

    types = catalog(priced("test-instance1", 1.0, 0.2), priced("test-instance2", 1.3, 0.1))
    web = f.pod("web")
    done = Round(pool(f.match_expression(CAPACITY_TYPE, "In", ["on-demand"])), web, types=types)
    assert done.claim_of(web)["instanceType"] == "test-instance1"


def test_three_pods_share_one_node_whose_every_option_holds_them() -> None:
    sizes = {"small": (2, 4), "medium": (4, 16), "large": (16, 64)}  # cores, GiB
    types = catalog(*(entry(name, cpu, gib) for name, (cpu, gib) in sizes.items()))
    for cpu, memory in [("100m", "100Mi"), ("1", "1Gi"), ("1", "4Gi"), ("4", "16Gi")]:
        pods = [f.pod(f"p{i}", requests={"cpu": cpu, "memory": memory}) for i in range(3)]
        done = Round(pods, types=types)
        (claim,) = done.claims.values()
        assert sorted(claim["pods"]) == sorted(Round.key(p) for p in pods)
        for option in claim["instanceTypeOptions"]:
            cores, gib = sizes[option]
            # three pods plus the catalog's overhead (100m, 100Mi) fit every option
            assert 3 * parse_quantity(cpu) + 100 <= cores * 1000
            assert 3 * parse_quantity(memory) + parse_quantity("100Mi") <= parse_quantity(
                f"{gib}Gi"
            )


def test_min_values_keeps_enough_types_even_when_that_costs_a_node() -> None:
    # Without minValues both pods would share instance-type-2; with minValues 2 every
    # claim must still allow both types, so each pod gets its own 1-cpu-compatible node.
    min_two = f.nodepool_requirement(
        INSTANCE_TYPE, "In", ["instance-type-1", "instance-type-2"], min_values=2
    )
    pods = two_pods()
    done = Round(pool(min_two), pods, types=one_and_four_cpu())
    assert done.node_of(pods[0]) != done.node_of(pods[1])
    assert all(len(c["instanceTypeOptions"]) >= 2 for c in done.claims.values())


def test_min_values_on_several_keys_is_kept_for_each() -> None:
    requirements = [
        f.nodepool_requirement(ARCH, "Exists", min_values=2),
        f.nodepool_requirement(
            INSTANCE_TYPE, "In", ["instance-type-1", "instance-type-2"], min_values=1
        ),
    ]
    pods = two_pods()
    done = Round(pool(*requirements), pods, types=one_and_four_cpu(arch_of_second="amd64"))
    assert done.node_of(pods[0]) != done.node_of(pods[1])
    assert all(len(c["instanceTypeOptions"]) >= 2 for c in done.claims.values())


def test_the_largest_min_values_of_one_key_applies() -> None:
    requirements = [
        f.nodepool_requirement(INSTANCE_TYPE, "Exists", min_values=1),
        f.nodepool_requirement(
            INSTANCE_TYPE, "In", ["instance-type-1", "instance-type-2"], min_values=2
        ),
    ]
    pods = two_pods()
    done = Round(pool(*requirements), pods, types=one_and_four_cpu())
    assert done.node_of(pods[0]) != done.node_of(pods[1])


def test_pods_stay_pending_when_min_values_exceeds_the_types_there_are() -> None:
    types = catalog(*(entry(f"type-{i}", 2 + i, 4) for i in range(10)))
    web = f.pod("web")
    requirement = f.nodepool_requirement(INSTANCE_TYPE, "Exists", min_values=11)
    done = Round(pool(requirement), web, types=types)
    assert done.node_of(web) is None
    assert "minValues" in (done.reason(web) or "")


def test_min_values_broken_by_truncating_the_options_leaves_pods_pending() -> None:
    types = [
        instance_type("instance-type-1", "1", "1Gi", overhead=FAKE_OVERHEAD, price=0.52),
        instance_type("instance-type-2", "4", "4Gi", overhead=FAKE_OVERHEAD, price=1.0),
    ]
    min_two = f.nodepool_requirement(
        INSTANCE_TYPE, "In", ["instance-type-1", "instance-type-2"], min_values=2
    )
    ctx = context(types, [nodepool(requirements=[min_two])])
    pods = [pod(f"p{i}", requests=NEARLY_ONE_CPU) for i in range(2)]
    results = Scheduler(ctx, ClusterSnapshot(), max_instance_types=1).solve(pods)
    assert not results.new_nodeclaims
    assert {u.pod.name for u in results.unschedulable} == {"p0", "p1"}


def test_min_values_with_gt_counts_the_numeric_values_above_the_bound() -> None:
    generation = "karpenter/numerical-value"
    types = catalog(
        *(entry(f"gen-{n}", 4, 4, price=0.1 * n, labels={generation: str(n)}) for n in (1, 2, 3)),
        well_known=[generation],
    )
    above_one = f.nodepool_requirement(generation, "Gt", ["1"], min_values=2)
    web = f.pod("web")
    done = Round(pool(above_one), web, types=types)
    assert sorted(done.claim_of(web)["instanceTypeOptions"]) == ["gen-2", "gen-3"]
    too_many = f.nodepool_requirement(generation, "Gt", ["1"], min_values=3)
    assert Round(pool(too_many), web, types=types).node_of(web) is None


def test_an_unavailable_offering_is_never_launched() -> None:
    cheap = instance_type("cheap", "4", "16Gi", offers=offerings(0.1, available=False))
    dear = instance_type("dear", "4", "16Gi", price=1.0)
    results = Scheduler(context([cheap, dear]), ClusterSnapshot()).solve([pod("web")])
    (claim,) = results.new_nodeclaims
    assert [it.name for it, _ in claim.instance_type_options()] == ["dear"]
