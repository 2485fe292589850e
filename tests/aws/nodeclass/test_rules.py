"""The node class controller's rules that need no AWS: filters from selector terms, the
newest image per requirement set, conditions and Ready, capacity reservation records,
instance profile names, version parsing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from karpy.apis.conditions import Condition, ConditionUpdate
from karpy.apis.core import NodeSelectorRequirement
from karpy.cloud.aws.nodeclass.aliases import Variant
from karpy.cloud.aws.nodeclass.amis import ImageQuery, select_images
from karpy.cloud.aws.nodeclass.conditions import apply_outcomes, nodeclass_conditions
from karpy.cloud.aws.nodeclass.finalizer import pretty_names
from karpy.cloud.aws.nodeclass.instanceprofile import (
    legacy_profile_name,
    profile_name,
    profile_path,
)
from karpy.cloud.aws.nodeclass.reservations import (
    reservation_queries,
    reservation_statuses,
    reservations_requeue,
)
from karpy.cloud.aws.nodeclass.securitygroups import security_group_filter_sets
from karpy.cloud.aws.nodeclass.subnets import subnet_filter_sets, subnet_statuses
from karpy.cloud.aws.nodeclass.version import parse_server_version
from tests.aws.nodeclass.helpers import nodeclass

NOW = datetime(2025, 1, 1, tzinfo=UTC)
ARCH_AMD = NodeSelectorRequirement("kubernetes.io/arch", "In", ("amd64",))


def test_tag_terms_are_queried_apart_and_ids_together():
    spec = nodeclass(subnetSelectorTerms=[
        {"tags": {"team": "a", "tier": "*"}}, {"id": "subnet-1"}, {"id": "subnet-2"},
    ]).spec  # fmt: skip
    assert subnet_filter_sets(spec.subnet_selector_terms) == [
        [{"Name": "tag:team", "Values": ["a"]}, {"Name": "tag-key", "Values": ["tier"]}],
        [{"Name": "subnet-id", "Values": ["subnet-1", "subnet-2"]}],
    ]


def test_security_groups_by_name_use_the_group_name_filter():
    spec = nodeclass(securityGroupSelectorTerms=[
        {"name": "nodes"}, {"id": "sg-1"}, {"tags": {"a": "b"}}, {"name": "other"},
    ]).spec  # fmt: skip
    assert security_group_filter_sets(spec.security_group_selector_terms) == [
        [{"Name": "tag:a", "Values": ["b"]}],
        [{"Name": "group-id", "Values": ["sg-1"]}],
        [{"Name": "group-name", "Values": ["nodes", "other"]}],
    ]


def test_subnets_are_listed_by_available_addresses_then_id():
    found = [
        {"SubnetId": "subnet-b", "AvailabilityZone": "z1", "AvailableIpAddressCount": 10},
        {"SubnetId": "subnet-c", "AvailabilityZone": "z2", "AvailableIpAddressCount": 250},
        {"SubnetId": "subnet-a", "AvailabilityZone": "z3", "AvailableIpAddressCount": 10},
    ]
    assert [s.id for s in subnet_statuses(found)] == ["subnet-c", "subnet-a", "subnet-b"]


def _image(image_id: str, created: str, name: str = "", *, deprecated: str | None = None,
           arch: str = "x86_64") -> dict[str, str]:  # fmt: skip
    out = {"ImageId": image_id, "Name": name or image_id, "Architecture": arch,
           "CreationDate": created}  # fmt: skip
    if deprecated:
        out["DeprecationTime"] = deprecated
    return out


def test_the_newest_image_wins_per_architecture():
    query = ImageQuery(filters=(("name", ("mine-*",)),))
    images = [
        _image("ami-old", "2024-01-01T00:00:00.000Z"),
        _image("ami-new", "2024-06-01T00:00:00.000Z"),
        _image("ami-arm", "2024-03-01T00:00:00.000Z", arch="arm64"),
        _image("ami-mac", "2024-09-01T00:00:00.000Z", arch="x86_64_mac"),
    ]
    amis = select_images([(query, images)], NOW)
    assert [a.id for a in amis] == ["ami-new", "ami-arm"], "newest first, unknown arch skipped"
    assert amis[0].requirements == (ARCH_AMD,)


def test_a_deprecated_image_loses_to_an_older_current_one_but_is_kept_alone():
    query = ImageQuery(filters=())
    newer_deprecated = _image("ami-dep", "2024-06-01T00:00:00Z", deprecated="2024-12-01T00:00:00Z")
    older = _image("ami-ok", "2024-01-01T00:00:00Z")
    assert [a.id for a in select_images([(query, [newer_deprecated, older])], NOW)] == ["ami-ok"]
    (alone,) = select_images([(query, [newer_deprecated])], NOW)
    assert alone.deprecated
    not_yet = _image("ami-later", "2024-06-01T00:00:00Z", deprecated="2026-01-01T00:00:00Z")
    assert not select_images([(query, [not_yet])], NOW)[0].deprecated


def test_same_second_images_are_told_apart_by_name():
    query = ImageQuery(filters=())
    images = [_image("ami-1", "2024-01-01T00:00:00Z", "build-b"),
              _image("ami-2", "2024-01-01T00:00:00Z", "build-a")]  # fmt: skip
    assert [a.id for a in select_images([(query, images)], NOW)] == ["ami-1"]


def test_alias_variants_become_requirements_sorted_as_karpenter_shows_them():
    query = ImageQuery(filters=(), known={
        "ami-std": (Variant.STANDARD.requirements,),
        "ami-gpu": (Variant.NEURON.requirements, Variant.NVIDIA.requirements),
    })  # fmt: skip
    images = [_image("ami-std", "2024-01-01T00:00:00Z"), _image("ami-gpu", "2024-01-01T00:00:00Z")]
    shown = {
        (a.id, tuple((r.key, r.operator) for r in a.requirements))
        for a in select_images([(query, images)], NOW)
    }
    assert shown == {
        ("ami-std", (("kubernetes.io/arch", "In"),
                     ("karpenter.k8s.aws/instance-gpu-count", "DoesNotExist"),
                     ("karpenter.k8s.aws/instance-accelerator-count", "DoesNotExist"))),
        ("ami-gpu", (("kubernetes.io/arch", "In"),
                     ("karpenter.k8s.aws/instance-accelerator-count", "Exists"))),
        ("ami-gpu", (("kubernetes.io/arch", "In"),
                     ("karpenter.k8s.aws/instance-gpu-count", "Exists"))),
    }  # fmt: skip


TYPES = nodeclass_conditions(reserved_capacity=False)
DEPENDENTS = TYPES.dependents


def _all_true() -> list[ConditionUpdate]:
    return [ConditionUpdate.true(t) for t in DEPENDENTS]


def test_ready_is_true_only_when_every_dependent_is_true_for_this_generation():
    conditions = apply_outcomes((), _all_true(), generation=2, now=NOW, types=TYPES)
    ready = next(c for c in conditions if c.type == "Ready")
    assert (ready.status, ready.observed_generation) == ("True", 2)
    assert [c.type for c in conditions] == sorted(c.type for c in conditions)
    assert all(c.observed_generation == 2 for c in conditions)

    again = apply_outcomes(conditions, _all_true(), generation=2, now=NOW + timedelta(1),
                           types=TYPES)  # fmt: skip
    assert again is conditions, "nothing changed: the same tuple"

    failed = [*_all_true()[:-1], ConditionUpdate.false("SubnetsReady", "SubnetsNotFound", "none")]
    later = NOW + timedelta(minutes=5)
    updated = apply_outcomes(conditions, failed, generation=2, now=later, types=TYPES)
    by_type = {c.type: c for c in updated}
    assert (by_type["Ready"].status, by_type["Ready"].reason) == ("False", "UnhealthyDependents")
    assert by_type["Ready"].message == "SubnetsReady=False"
    assert by_type["Ready"].last_transition_time == later
    assert by_type["AMIsReady"].last_transition_time == NOW, "unchanged status keeps its time"


def test_a_new_generation_is_observed_even_when_nothing_else_changes():
    conditions = apply_outcomes((), _all_true(), generation=1, now=NOW, types=TYPES)
    bumped = apply_outcomes(conditions, _all_true(), generation=2, now=NOW, types=TYPES)
    assert {c.observed_generation for c in bumped} == {2}


def test_missing_dependents_leave_ready_unknown_and_foreign_conditions_stay():
    custom = Condition("Custom", "True", "Custom", "", NOW, 1)
    amis = ConditionUpdate.true("AMIsReady")
    conditions = apply_outcomes((custom,), [amis], generation=1, now=NOW, types=TYPES)
    by_type = {c.type: c for c in conditions}
    assert by_type["Ready"].status == "Unknown"
    assert by_type["Ready"].reason == "ReconcilingDependents"
    assert "SubnetsReady=Unknown" in by_type["Ready"].message
    assert by_type["Custom"] == custom


def test_capacity_reservation_ready_joins_the_ready_set_with_its_gate():
    assert "CapacityReservationsReady" in nodeclass_conditions(reserved_capacity=True).dependents
    assert "CapacityReservationsReady" not in DEPENDENTS


def test_reservation_terms_query_by_id_or_by_filters():
    spec = nodeclass(capacityReservationSelectorTerms=[
        {"id": "cr-1"}, {"tags": {"team": "*"}, "ownerID": "123456789012"},
        {"instanceMatchCriteria": "open"},
    ]).spec  # fmt: skip
    active = {"Name": "state", "Values": ["active"]}
    assert reservation_queries(spec.capacity_reservation_selector_terms) == [
        {"CapacityReservationIds": ["cr-1"], "Filters": [active]},
        {"Filters": [active, {"Name": "owner-id", "Values": ["123456789012"]},
                     {"Name": "tag-key", "Values": ["team"]}]},
        {"Filters": [active, {"Name": "instance-match-criteria", "Values": ["open"]}]},
    ]  # fmt: skip


def _reservation(rid: str, **extra: object) -> dict[str, object]:
    return {"CapacityReservationId": rid, "AvailabilityZone": "us-west-2a",
            "InstanceType": "m5.large", "OwnerId": "123456789012",
            "InstanceMatchCriteria": "targeted", **extra}  # fmt: skip


def test_a_capacity_block_expires_forty_minutes_before_its_end():
    block = _reservation("cr-b", ReservationType="capacity-block",
                         EndDate=NOW + timedelta(minutes=30))  # fmt: skip
    later_block = _reservation("cr-c", ReservationType="capacity-block",
                               EndDate=NOW + timedelta(hours=2), Interruptible=True)  # fmt: skip
    plain = _reservation("cr-a", EndDate=NOW + timedelta(minutes=10))
    odd = _reservation("cr-d", InstanceMatchCriteria="some-future-kind")
    statuses = reservation_statuses([block, later_block, plain, odd], NOW)
    assert [(s.id, s.state, s.reservation_type) for s in statuses] == [
        ("cr-a", "active", "default"),
        ("cr-b", "expiring", "capacity-block"),
        ("cr-c", "active", "capacity-block"),
    ]
    assert statuses[2].interruptible
    assert reservations_requeue([block, plain], NOW) == 60.0, "the poll period comes first"
    ending = _reservation("cr-e", EndDate=NOW + timedelta(seconds=20))
    assert reservations_requeue([later_block, ending], NOW) == 20.0, "or the next end"
    assert reservations_requeue([], NOW) == 60.0


def test_instance_profile_names_follow_karpenter():
    # hashstructure(FormatV2) of a string is FNV-1 64 of its bytes.
    assert legacy_profile_name("c", "us-west-2", "default") == "c_" + str(
        _fnv1(b"us-west-2default")
    )
    assert profile_name("c", "r", "n", "salt") == "c_" + str(_fnv1(b"rnsalt"))
    assert profile_path("us-west-2", "c", "uid-1") == "/karpenter/us-west-2/c/uid-1/"


def _fnv1(data: bytes) -> int:
    h = 14695981039346656037
    for byte in data:
        h = (h * 1099511628211) % 2**64
        h ^= byte
    return h


@pytest.mark.parametrize(("answer", "expected"), [
    ({"major": "1", "minor": "31"}, "1.31"),
    ({"major": "1", "minor": "30+"}, "1.30"),
])  # fmt: skip
def test_server_version_is_major_dot_minor(answer: dict[str, str], expected: str):
    assert parse_server_version(answer) == expected


def test_an_unreadable_server_version_is_an_error():
    with pytest.raises(ValueError, match="unexpected Kubernetes version"):
        parse_server_version({"gitVersion": "v1.x"})


def test_names_are_listed_as_karpenter_lists_them():
    assert pretty_names(["a", "b"]) == "a, b"
    assert pretty_names([str(i) for i in range(7)]) == "0, 1, 2, 3, 4 and 2 other(s)"
