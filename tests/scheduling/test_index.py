"""The bitset index over instance types."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from karpy.scheduling.index import InstanceTypeIndex, bitset_bytes, iter_bits, iter_set_bits
from karpy.scheduling.requirements import Requirement, Requirements
from tests.scheduling.builders import instance_type, offerings

SMALL = instance_type("small", "2", "4Gi", price=0.1, labels={"size": "small"})
LARGE = instance_type("large", "8", "32Gi", price=0.4, labels={"size": "large"})
ARM = instance_type(
    "arm",
    "4",
    "8Gi",
    price=0.2,
    labels={"kubernetes.io/arch": "arm64"},
    offers=offerings(0.2, zones=["zone-a"], capacity_types=["spot"]),
)
INDEX = InstanceTypeIndex([LARGE, ARM, SMALL])


def names(mask: int) -> set[str]:
    return {it.name for it in INDEX.members(mask)}


def test_types_are_numbered_cheapest_first() -> None:
    assert [it.name for it in INDEX.types] == ["small", "arm", "large"]
    assert list(iter_bits(0b101)) == [0, 2]


def test_requirement_masks_follow_label_requirements() -> None:
    amd = Requirement.new("kubernetes.io/arch", "In", ["amd64"])
    assert names(INDEX.requirement_mask(amd)) == {"small", "large"}
    not_small = Requirement.new("size", "NotIn", ["small"])
    # arm defines no size: NotIn is satisfied by a missing label
    assert names(INDEX.requirement_mask(not_small)) == {"large", "arm"}
    undefined = Requirement.new("example.com/custom", "In", ["x"])
    assert INDEX.requirement_mask(undefined) == INDEX.all_mask


def test_offering_masks_combine_zone_and_capacity_type() -> None:
    spot_a = Requirements(
        [
            Requirement.new("topology.kubernetes.io/zone", "In", ["zone-a"]),
            Requirement.new("karpenter.sh/capacity-type", "In", ["spot"]),
        ]
    )
    assert names(INDEX.offering_mask(spot_a)) == {"arm"}
    zone_b = Requirements([Requirement.new("topology.kubernetes.io/zone", "In", ["zone-b"])])
    assert names(INDEX.offering_mask(zone_b)) == {"small", "large"}


def test_fits_mask_checks_every_requested_resource() -> None:
    assert names(INDEX.fits_mask({"cpu": 3000, "memory": 5 * 2**30 * 1000})) == {"arm", "large"}
    assert names(INDEX.fits_mask({"cpu": 3000, "memory": 16 * 2**30 * 1000})) == {"large"}
    assert INDEX.fits_mask({"nvidia.com/gpu": 1000}) == 0
    assert INDEX.fits_mask({"nvidia.com/gpu": 0}) == INDEX.all_mask


def test_capacity_masks_for_limits() -> None:
    assert names(INDEX.capacity_at_most_mask("cpu", 4000)) == {"small", "arm"}
    assert INDEX.max_capacity(INDEX.all_mask, "cpu") == 8000
    assert INDEX.capacity_at_most_mask("nvidia.com/gpu", 0) == INDEX.all_mask


def test_price_order_and_cheapest_types() -> None:
    reqs = Requirements()
    assert [it.name for _, it in INDEX.order_by_price(INDEX.all_mask, reqs)] == [
        "small",
        "arm",
        "large",
    ]
    assert [it.name for _, it in INDEX.order_by_price(INDEX.all_mask, reqs, limit=2)] == [
        "small",
        "arm",
    ]
    assert [it.name for it in INDEX.cheapest_types(INDEX.all_mask ^ 1, reqs)] == ["arm"]
    assert names(INDEX.first(INDEX.all_mask, reqs, 2)) == {"small", "arm"}


def test_price_order_follows_the_offerings_requirements_allow() -> None:
    # zone-c is cheaper for "large" than "small" there: the order changes
    small = instance_type("s", offers=[*offerings(0.1, ["zone-a"]), *offerings(0.5, ["zone-c"])])
    large = instance_type("l", offers=offerings(0.3, ["zone-a", "zone-c"]))
    index = InstanceTypeIndex([small, large])
    zone_c = Requirements([Requirement.new("topology.kubernetes.io/zone", "In", ["zone-c"])])
    assert [it.name for _, it in index.order_by_price(index.all_mask, zone_c)] == ["l", "s"]
    assert [p for p, _ in index.order_by_price(index.all_mask, zone_c)] == [0.3, 0.5]


def test_capacity_types_of_a_set() -> None:
    assert INDEX.capacity_types(INDEX.all_mask, Requirements()) == ["on-demand", "spot"]


def test_max_allocatable_is_the_largest_option() -> None:
    assert INDEX.max_allocatable(INDEX.all_mask, "cpu") == 8000
    small_or_arm = INDEX.all_mask & ~(1 << INDEX.position(LARGE))
    assert INDEX.max_allocatable(small_or_arm, "cpu") == 4000
    assert INDEX.max_allocatable(0, "cpu") == 0
    assert INDEX.max_allocatable(INDEX.all_mask, "nvidia.com/gpu") == 0


@settings(max_examples=60, deadline=None)
@given(st.sets(st.integers(min_value=0, max_value=300)), st.integers(min_value=0, max_value=310))
def test_set_bits_are_read_back_from_bytes_in_order(positions: set[int], first: int) -> None:
    mask = sum(1 << p for p in positions)
    data = bitset_bytes(mask, 320)
    assert data is not None
    assert list(iter_set_bits(data, first)) == sorted(p for p in positions if p >= first)
    assert list(iter_bits(mask)) == sorted(positions)
