"""Which pods already in the cluster a spread constraint counts, one kind of pod at a time.

Karpenter counts a pod in a domain only when it is bound to a node, neither terminal
(Succeeded, Failed) nor terminating, selected by the constraint in its namespace, and on a
node that carries the topology key (for ``kubernetes.io/hostname``, the node name stands in
for a missing label) and that the pending pod's node selector and required affinity admit
(``nodeAffinityPolicy: Honor``; taints are ignored by default). Karpenter's own Its on this
("should only count running/scheduled pods ...") end in the same skew whether or not the
ignored pods are counted, so each case here is arranged to change the placement: zone-b and
zone-c hold one counted pod each and zone-a holds two pods of the kind under test, so a new
pod goes to zone-a exactly when those two are not counted.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests import factories as f
from tests.scheduling.scenario import HOSTNAME, ZONE, Round

WEB = {"app": "web"}
# Two terms, so a pod carrying ``app=web`` can still fail the selector.
SPREAD = f.topology_spread(
    ZONE, match_labels=WEB, match_expressions=[f.match_expression("tier", "NotIn", ["batch"])]
)


def full_node(name: str, zone: str | None = None, **options: Any) -> dict[str, Any]:
    """A node with room for one pod (taken unless its pod is terminal)."""
    labels = {"kubernetes.io/arch": "amd64", **options.pop("labels", {})}
    if zone is not None:
        labels[ZONE] = zone
    return f.node(name, labels=labels, allocatable={"cpu": "1", "pods": "1"}, **options)


def landing_zone(zone_a_node: dict[str, Any], *zone_a_pods: dict[str, Any], **pod: Any) -> str:
    """The zone of a new zonal-spread pod (options ``pod``) next to the other zones' pods."""
    others = [full_node("b1", "zone-b"), full_node("c1", "zone-c")]
    counted = [f.pod(f"web-{zone}", labels=WEB, node_name=f"{zone}1") for zone in "bc"]
    new = f.pod(
        "new", labels=WEB, requests={"cpu": "100m"}, topology_spread_constraints=[SPREAD], **pod
    )
    done = Round(zone_a_node, others, counted, list(zone_a_pods), new, f.namespace("other"))
    where = done.node_of(new)
    if where in done.claims:
        zone = done.label(new, ZONE)
    else:  # on a1 itself, whose terminal pods left it room
        zone = zone_a_node["metadata"]["labels"].get(ZONE) if where == "a1" else None
    assert zone is not None, where
    return str(zone)


def on_a(name: str, **options: Any) -> dict[str, Any]:
    return f.pod(name, node_name="a1", **{"labels": WEB, **options})


def test_running_pods_on_the_domain_count() -> None:
    # the control: two counted pods in zone-a push the new pod elsewhere
    assert landing_zone(full_node("a1", "zone-a"), on_a("p1"), on_a("p2")) != "zone-a"


def test_bound_pods_still_in_phase_pending_count() -> None:
    # scheduled means bound (spec.nodeName), whatever the phase says yet
    pods = [on_a(f"p{i}", phase="Pending") for i in range(2)]
    assert landing_zone(full_node("a1", "zone-a"), *pods) != "zone-a"


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"phase": "Succeeded"}, id="succeeded"),
        pytest.param({"phase": "Failed"}, id="failed"),
        pytest.param({"deletion_timestamp": f.SOME_TIME, "finalizers": ["t/k"]}, id="terminating"),
        pytest.param({"labels": {"app": "other"}}, id="labels-do-not-match"),
        pytest.param({"labels": {}}, id="no-labels"),
        pytest.param({"labels": {**WEB, "tier": "batch"}}, id="excluded-by-an-expression"),
        pytest.param({"namespace": "other"}, id="other-namespace"),
    ],
)
def test_pods_the_spread_ignores_leave_their_domain_empty(options: dict[str, Any]) -> None:
    pods = [on_a(f"p{i}", **options) for i in range(2)]
    assert landing_zone(full_node("a1", "zone-a"), *pods) == "zone-a"


def test_pods_on_a_node_without_the_topology_label_count_nowhere() -> None:
    # zone-a comes from the pool only; the unlabelled node's pods are in no domain
    pods = [on_a(f"p{i}") for i in range(2)]
    assert landing_zone(full_node("a1"), *pods) == "zone-a"


def test_pods_on_nodes_outside_the_pending_pods_affinity_do_not_count() -> None:
    # nodeAffinityPolicy defaults to Honor: a1 (team=x) is not a node the new pod could use
    node = full_node("a1", "zone-a", labels={"team": "x"})
    pods = [on_a(f"p{i}") for i in range(2)]
    avoid_team_x = [f.match_expression("team", "DoesNotExist")]
    assert landing_zone(node, *pods, node_requirements=avoid_team_x) == "zone-a"
    assert landing_zone(node, *pods) != "zone-a"


def test_pods_on_tainted_nodes_count_by_default() -> None:
    # nodeTaintsPolicy defaults to Ignore: the taint the new pod does not tolerate is no excuse
    node = full_node("a1", "zone-a", taints=[f.taint("dedicated", "x")])
    pods = [on_a(f"p{i}") for i in range(2)]
    assert landing_zone(node, *pods) != "zone-a"


def test_hostname_spread_counts_pods_on_a_node_without_the_hostname_label() -> None:
    # the node name stands in for the missing label (a kubelet not done labelling)
    spread = f.topology_spread(HOSTNAME, match_labels=WEB)
    big = {"cpu": "8", "memory": "16Gi", "pods": "110"}
    labels = {"kubernetes.io/arch": "amd64", ZONE: "zone-a"}
    node = f.node("n1", labels=labels, allocatable=big, hostname_label=False)
    new = f.pod("new", labels=WEB, requests={"cpu": "100m"}, topology_spread_constraints=[spread])
    assert Round(node, new).node_of(new) == "n1"
    done = Round(node, f.pod("old", labels=WEB, node_name="n1"), new)
    assert done.node_of(new) not in (None, "n1")
