"""How one topology group turns counts into allowed domains."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from karpy.scheduling.kinds import GroupKind
from karpy.scheduling.requirements import Requirement
from karpy.scheduling.selectors import selector_from_dict
from karpy.scheduling.topologygroup import (
    EMPTY_FILTER,
    MAX_SKEW_UNBOUNDED,
    TopologyGroup,
)

ZONE = "topology.kubernetes.io/zone"
ANY = Requirement.exists(ZONE)
SELECTOR = selector_from_dict({"matchLabels": {"app": "web"}})


def group(
    kind: str, key: str = ZONE, skew: int = 1, min_domains: int | None = None
) -> TopologyGroup:
    skew = skew if kind == GroupKind.SPREAD else MAX_SKEW_UNBOUNDED
    return TopologyGroup(
        kind,
        key,
        SELECTOR,
        frozenset({"default"}),
        skew,
        min_domains,
        EMPTY_FILTER,
        ["a", "b", "c"],
    )


def test_spread_picks_the_emptiest_domain_within_skew() -> None:
    spread = group(GroupKind.SPREAD)
    spread.record("a")
    assert spread.next_domains(True, ANY, ANY) == Requirement.in_values(ZONE, "b")


def test_spread_refuses_domains_that_would_exceed_the_skew() -> None:
    spread = group(GroupKind.SPREAD)
    spread.record("a")
    only_a = Requirement.in_values(ZONE, "a")
    assert not spread.next_domains(True, ANY, only_a).values
    # a pod the group does not select adds nothing to the count
    assert spread.next_domains(False, ANY, only_a) == only_a


def test_min_domains_keeps_the_minimum_at_zero() -> None:
    spread = group(GroupKind.SPREAD, min_domains=4)
    for zone in "abc":
        spread.record(zone)
    assert not spread.next_domains(True, ANY, Requirement.in_values(ZONE, "a")).values


def test_affinity_joins_occupied_domains_or_bootstraps_when_self_selecting() -> None:
    affinity = group(GroupKind.AFFINITY)
    assert affinity.next_domains(True, ANY, ANY) == Requirement.in_values(ZONE, "a")
    assert not affinity.next_domains(False, ANY, ANY).values
    affinity.record("c")
    assert affinity.next_domains(False, ANY, ANY) == Requirement.in_values(ZONE, "c")


def test_anti_affinity_allows_only_empty_domains() -> None:
    anti = group(GroupKind.ANTI_AFFINITY)
    anti.record("b")
    assert anti.next_domains(True, ANY, ANY).values == {"a", "c"}


def test_hostname_groups_answer_per_host() -> None:
    spread = group(GroupKind.SPREAD, key="kubernetes.io/hostname")
    host = Requirement.exists("kubernetes.io/hostname")
    assert spread.allows_host(True, host, "n1")
    spread.record("n1")
    assert not spread.allows_host(True, host, "n1")
    anti = group(GroupKind.ANTI_AFFINITY, key="kubernetes.io/hostname")
    anti.record("n1")
    assert not anti.allows_host(False, host, "n1")
    assert anti.allows_host(False, host, "n2")


DOMAINS = ("a", "b", "c", "d")


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from([GroupKind.SPREAD, GroupKind.ANTI_AFFINITY, GroupKind.AFFINITY]),
    skew=st.integers(1, 3),
    counts=st.lists(st.sampled_from(DOMAINS), max_size=12),
    selects=st.booleans(),
    pod_zones=st.one_of(st.none(), st.sets(st.sampled_from(DOMAINS), min_size=1)),
    node_zones=st.sets(st.sampled_from(DOMAINS), min_size=1),
)
def test_allowed_set_never_excludes_a_domain_next_domains_would_allow(
    *, kind: str, skew: int, counts: list[str], selects: bool,
    pod_zones: set[str] | None, node_zones: set[str],
) -> None:  # fmt: skip
    # The solver skips a node when none of its domains is in `allowed_set` (a screen
    # before the full question); that must only ever skip nodes `next_domains` refuses.
    topology_group = TopologyGroup(kind, ZONE, SELECTOR, frozenset({"default"}),
                                   skew if kind == GroupKind.SPREAD else MAX_SKEW_UNBOUNDED, None,
                                   EMPTY_FILTER, DOMAINS)  # fmt: skip
    for domain in counts:
        topology_group.record(domain)
    pod_domains = ANY if pod_zones is None else Requirement.in_values(ZONE, *pod_zones)
    node_domains = Requirement.in_values(ZONE, *node_zones)
    allowed = topology_group.allowed_set(selects, pod_domains)
    chosen = topology_group.next_domains(selects, pod_domains, node_domains)
    if allowed is None:
        return
    if not any(zone in allowed for zone in node_zones):
        assert not chosen.values, (allowed, chosen)
    else:
        assert set(chosen.values) <= allowed
