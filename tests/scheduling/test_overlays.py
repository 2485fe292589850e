"""NodeOverlays: price and capacity adjustments per NodePool."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from karpy.apis.nodeoverlay import NodeOverlay
from karpy.scheduling.overlays import adjusted_price, apply_overlays
from tests import factories as f
from tests.scheduling.builders import instance_type, offerings

SMALL = instance_type(
    "small", offers=offerings(1.0, zones=["zone-a"], capacity_types=["spot", "on-demand"])
)
LARGE = instance_type("large", "16", "64Gi", offers=offerings(4.0, zones=["zone-a"]))


def overlay(name: str, **options: Any) -> NodeOverlay:
    return NodeOverlay.from_dict(f.node_overlay(name, **options))


@pytest.mark.parametrize(
    ("change", "price"),
    [
        ("0.5", 0.5),
        ("+0.25", 1.25),
        ("-0.25", 0.75),
        ("+10%", 1.1),
        ("-50%", 0.5),
        ("-5", 0.0),
        (None, 1.0),
    ],
)
def test_adjusted_price(change: str | None, price: float) -> None:
    assert adjusted_price(1.0, change) == pytest.approx(price)


def test_a_price_overlay_changes_the_selected_offerings_only() -> None:
    spot = overlay(
        "spot-discount",
        requirements=[f.match_expression("karpenter.sh/capacity-type", "In", ["spot"])],
        price_adjustment="-50%",
    )
    small, large = apply_overlays("default", {}, [SMALL, LARGE], [spot])
    prices = {o.capacity_type: o.price for o in small.offerings}
    assert prices == {"spot": 0.5, "on-demand": 1.0}
    assert small.price_overlaid
    assert large is LARGE


def test_overlays_can_select_by_nodepool() -> None:
    other = overlay(
        "other-pool",
        requirements=[f.match_expression("karpenter.sh/nodepool", "In", ["gpu"])],
        price="9",
    )
    assert apply_overlays("default", {}, [SMALL], [other]) == (SMALL,)
    (changed,) = apply_overlays("gpu", {}, [SMALL], [other])
    assert {o.price for o in changed.offerings} == {9.0}


def test_the_heaviest_overlay_wins_and_equal_weights_conflict() -> None:
    everything = [f.match_expression("node.kubernetes.io/instance-type", "Exists")]
    heavy = overlay("heavy", requirements=everything, price="2", weight=10)
    light = overlay("light", requirements=everything, price="3", weight=1)
    (small,) = apply_overlays("default", {}, [SMALL], [light, heavy])
    assert {o.price for o in small.offerings} == {2.0}
    twin_a = overlay("a", requirements=everything, price="5", weight=10)
    (small,) = apply_overlays("default", {}, [SMALL], [twin_a, heavy])
    # same weight, same offerings: the later name ("heavy") applies, "a" is ignored
    assert {o.price for o in small.offerings} == {2.0}


def test_capacity_overlays_add_extended_resources_to_allocatable() -> None:
    gpus = overlay(
        "gpus",
        requirements=[f.match_expression("node.kubernetes.io/instance-type", "In", ["large"])],
        capacity={"example.com/fpga": "2"},
    )
    small, large = apply_overlays("default", {}, [SMALL, LARGE], [gpus])
    assert large.allocatable["example.com/fpga"] == 2000
    assert large.capacity_overlaid
    assert "example.com/fpga" not in small.allocatable


def test_overlaid_types_keep_their_volume_attachment_limits() -> None:
    # Karpenter's overlay store carries VolumeAttachmentLimits over to the types it rewrites.
    limited = attrs.evolve(LARGE, volume_attachment_limits={"ebs.csi.aws.com": 26})
    both = overlay("both", price_adjustment="+10%", capacity={"example.com/fpga": "2"})
    (overlaid,) = apply_overlays("default", {}, [limited], [both])
    assert overlaid.capacity_overlaid and overlaid.price_overlaid
    assert overlaid.volume_attachment_limits == {"ebs.csi.aws.com": 26}
