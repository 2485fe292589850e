"""Taints and tolerations."""

from __future__ import annotations

import pytest

from karpy.apis.core import Taint
from karpy.scheduling.taints import (
    Toleration,
    first_untolerated,
    is_ephemeral_taint,
    merge_taints,
    tolerates_all,
)

TAINT = Taint(key="dedicated", value="infra", effect="NoSchedule")


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        (Toleration(key="dedicated", operator="Equal", value="infra", effect="NoSchedule"), True),
        (Toleration(key="dedicated", operator="Equal", value="infra"), True),
        (Toleration(key="dedicated", operator="Equal", value="other"), False),
        (Toleration(key="dedicated", operator="Exists"), True),
        (Toleration(key="dedicated", operator="Exists", effect="NoExecute"), False),
        (Toleration(operator="Exists"), True),
        (Toleration(key="other", operator="Exists"), False),
    ],
)
def test_toleration_matching(toleration: Toleration, tolerated: bool) -> None:
    assert toleration.tolerates(TAINT) is tolerated


@pytest.mark.parametrize(
    ("operator", "value", "taint_value", "tolerated"),
    [
        ("Gt", "5", "7", True),
        ("Gt", "5", "5", False),
        ("Lt", "5", "3", True),
        ("Lt", "5", "x", False),
    ],
)
def test_threshold_tolerations_compare_integers(
    operator: str, value: str, taint_value: str, tolerated: bool
) -> None:
    taint = Taint(key="sla", value=taint_value, effect="NoSchedule")
    assert Toleration(key="sla", operator=operator, value=value).tolerates(taint) is tolerated


def test_prefer_no_schedule_taints_need_a_toleration_too() -> None:
    soft = Taint(key="soft", effect="PreferNoSchedule")
    assert first_untolerated([soft], ()) == soft
    assert tolerates_all([soft], (Toleration(operator="Exists", effect="PreferNoSchedule"),))


@pytest.mark.parametrize(
    ("key", "effect", "ephemeral"),
    [
        ("node.kubernetes.io/not-ready", "NoSchedule", True),
        ("node.kubernetes.io/not-ready", "NoExecute", True),
        ("node.kubernetes.io/unreachable", "NoSchedule", True),
        ("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule", True),
        ("karpenter.sh/unregistered", "NoExecute", True),
        ("readiness.k8s.io/network", "NoSchedule", True),
        ("node.kubernetes.io/unreachable", "NoExecute", False),
        ("dedicated", "NoSchedule", False),
    ],
)
def test_known_ephemeral_taints(key: str, effect: str, ephemeral: bool) -> None:
    assert is_ephemeral_taint(Taint(key=key, effect=effect)) is ephemeral


def test_merge_taints_adds_only_new_key_effect_pairs() -> None:
    other = Taint(key="dedicated", value="x", effect="NoSchedule")
    extra = Taint(key="gpu", effect="NoSchedule")
    assert merge_taints([TAINT], [other, extra]) == (TAINT, extra)
