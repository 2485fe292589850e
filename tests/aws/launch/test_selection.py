"""Which instance types and offerings a launch may use (pure)."""

from __future__ import annotations

from karpy.cloud.aws.launch.selection import MAX_INSTANCE_TYPES, select
from karpy.scheduling.requirements import Requirement, Requirements
from tests.aws.launch.conftest import instance_type

CT = "karpenter.sh/capacity-type"


def reqs(*extra: Requirement, capacity: tuple[str, ...] = ("on-demand",)) -> Requirements:
    return Requirements([Requirement.new(CT, "In", capacity), *extra])


def test_keeps_compatible_types_that_fit_cheapest_first() -> None:
    types = [instance_type("m5.xlarge"), instance_type("m5.large"), instance_type("m6g.large")]
    arch = Requirement.new("kubernetes.io/arch", "In", ["amd64"])
    chosen = select(types, reqs(arch), {"cpu": 1000})
    assert [c.name for c in chosen.candidates] == ["m5.large", "m5.xlarge"]
    chosen = select(types, reqs(arch), {"cpu": 3000})
    assert [c.name for c in chosen.candidates] == ["m5.xlarge"]


def test_skips_offerings_in_the_insufficient_capacity_cache() -> None:
    iced = frozenset({("m5.large", "us-west-2a", "on-demand")})
    zone = Requirement.new("topology.kubernetes.io/zone", "In", ["us-west-2a"])
    chosen = select([instance_type("m5.large")], reqs(zone), {}, iced)
    assert chosen.candidates == ()
    assert chosen.known_unavailable == (("m5.large", "us-west-2a", "on-demand"),)


def test_drops_exotic_types_unless_nothing_else_fits() -> None:
    types = [instance_type("m5.metal", prices={"us-west-2a": 0.01}), instance_type("m5.large"),
             instance_type("g5.xlarge", gpus=1, prices={"us-west-2a": 0.05})]  # fmt: skip
    assert [c.name for c in select(types, reqs(), {}).candidates] == ["m5.large"]
    gpu = select(types, reqs(), {"nvidia.com/gpu": 1000})
    assert [c.name for c in gpu.candidates] == ["g5.xlarge"]


def test_prefers_spot_and_drops_spot_pricier_than_the_cheapest_on_demand() -> None:
    cheap = instance_type("m5.large", prices={"us-west-2a": 0.096}, zones=["us-west-2a"],
                          spot={"us-west-2a": 0.04})  # fmt: skip
    pricey = instance_type("m5.xlarge", prices={"us-west-2a": 0.192}, zones=["us-west-2a"],
                           spot={"us-west-2a": 0.12})  # fmt: skip
    chosen = select([cheap, pricey], reqs(capacity=("spot", "on-demand")), {})
    assert chosen.capacity_type == "spot"
    assert [(c.name, [o.capacity_type for o in c.offerings]) for c in chosen.candidates] == [
        ("m5.large", ["spot"])
    ]


def test_falls_back_to_on_demand_when_spot_is_not_offered() -> None:
    chosen = select([instance_type("m5.large")], reqs(capacity=("spot", "on-demand")), {})
    assert chosen.capacity_type == "on-demand"


def test_caps_the_candidates_at_sixty_cheapest() -> None:
    types = [instance_type(f"t{i}.large", prices={"us-west-2a": 1 + i}, zones=["us-west-2a"])
             for i in range(70)]  # fmt: skip
    chosen = select(reversed(types), reqs(), {})
    assert len(chosen.candidates) == MAX_INSTANCE_TYPES
    assert chosen.candidates[0].name == "t0.large"
    assert chosen.candidates[-1].name == "t59.large"
