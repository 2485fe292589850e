"""ClusterState: indexes, NodeClaim/Node pairing, snapshots, change notification and
the synced rule."""

from __future__ import annotations

from typing import Any

import attrs

from karpy.apis.labels import ANNOTATION_REPLACEMENTS
from karpy.kube.unreadable import UnreadableObject
from karpy.state import kinds
from karpy.state import records as p
from karpy.state.cluster import ClusterState, StateChange, is_node, is_nodeclaim, is_pod
from karpy.state.kinds import Kind
from karpy.state.snapshot import StateSnapshot
from tests import factories as f


def add(state: ClusterState, kind: str, *records) -> None:
    state.apply(kind, [(key_of(kind, r), r) for r in records], [])


def key_of(kind: str, record) -> str:
    if kind == kinds.POD:
        return str(record.key)
    if kind == kinds.NODE:
        return str(record.name)
    return str(record.metadata.name)


def node_of(snap: StateSnapshot, claim: str) -> str | None:
    found = snap.node_for_claim(claim)
    return None if found is None else found.name


def claim_of(snap: StateSnapshot, node: str) -> str | None:
    found = snap.claim_for_node(node)
    return None if found is None else found.metadata.name


def pod(name: str, **kw) -> p.PodInfo:
    return p.pod_info(f.pod(name, **kw))


def pending(name: str) -> p.PodInfo:
    info = pod(name)
    return attrs.evolve(info, pod=attrs.evolve(info.pod, unschedulable_condition=True))


def node(name: str, pid: str | None = None) -> p.NodeInfo:
    return p.node_info(f.node(name, provider_id=pid))


def claim(name: str, pid: str | None = None, pool: str = "default"):
    obj = f.nodeclaim(name, nodepool=pool)
    obj["status"]["providerID"] = pid
    if pid is None:
        del obj["status"]["providerID"]
    return p.nodeclaim(obj)


def test_pods_are_indexed_by_node_and_pending_pods_are_tracked():
    state = ClusterState()
    add(state, kinds.POD, pod("a", node_name="n1"), pod("b", node_name="n1"), pending("c"))
    snap = state.snapshot()
    assert sorted(i.key for i in snap.pods_on("n1")) == ["default/a", "default/b"]
    assert [i.key for i in snap.pending_pods()] == ["default/c"]
    # c gets bound: it leaves the pending index and joins its node's
    add(state, kinds.POD, pod("c", node_name="n2"))
    snap = state.snapshot()
    assert list(snap.pending_pods()) == []
    assert [i.key for i in snap.pods_on("n2")] == ["default/c"]
    state.apply(kinds.POD, [], ["default/a", "default/b"])
    assert list(state.snapshot().pods_on("n1")) == []
    assert "n1" not in state.snapshot().pods_by_node


def test_terminating_and_daemonset_pods_are_not_pending():
    state = ClusterState()
    terminating = pending("t")
    terminating = attrs.evolve(terminating, pod=attrs.evolve(terminating.pod, terminating=True))
    daemon = pending("d")
    daemon = attrs.evolve(
        daemon, pod=attrs.evolve(daemon.pod, owners=(("apps/v1", "DaemonSet", "ds"),))
    )
    add(state, kinds.POD, terminating, daemon)
    assert list(state.snapshot().pending_pods()) == []


def test_nodeclaims_pair_with_nodes_by_provider_id_in_either_order():
    state = ClusterState()
    add(state, kinds.NODECLAIM, claim("c1", "aws:///i-1"))
    assert state.snapshot().node_for_claim("c1") is None
    add(state, kinds.NODE, node("n1", "aws:///i-1"))
    snap = state.snapshot()
    assert node_of(snap, "c1") == "n1"
    assert claim_of(snap, "n1") == "c1"
    by_provider = snap.node_by_provider("aws:///i-1")
    assert by_provider is not None and by_provider.name == "n1"
    claim_by_provider = snap.nodeclaim_by_provider("aws:///i-1")
    assert claim_by_provider is not None and claim_by_provider.metadata.name == "c1"
    state.apply(kinds.NODE, [], ["n1"])
    assert state.snapshot().node_for_claim("c1") is None
    assert state.snapshot().claim_for_node("n1") is None


def test_a_claim_learning_its_provider_id_pairs_and_losing_it_unpairs():
    state = ClusterState()
    add(state, kinds.NODE, node("n1", "aws:///i-1"))
    add(state, kinds.NODECLAIM, claim("c1"))
    assert state.snapshot().claim_for_node("n1") is None
    add(state, kinds.NODECLAIM, claim("c1", "aws:///i-1"))
    assert claim_of(state.snapshot(), "n1") == "c1"
    state.apply(kinds.NODECLAIM, [], ["c1"])
    snap = state.snapshot()
    assert snap.claim_for_node("n1") is None
    assert dict(snap.node_of_claim.items()) == {}


def test_when_two_claims_name_one_instance_the_node_stays_paired_after_one_goes():
    state = ClusterState()
    add(state, kinds.NODE, node("n1", "aws:///i-1"))
    add(state, kinds.NODECLAIM, claim("c1", "aws:///i-1"), claim("c2", "aws:///i-1"))
    assert claim_of(state.snapshot(), "n1") == "c1"
    state.apply(kinds.NODECLAIM, [], ["c1"])
    assert claim_of(state.snapshot(), "n1") == "c2"
    assert state.unpaired() == []


def test_nodeclaims_are_indexed_by_nodepool():
    state = ClusterState()
    add(state, kinds.NODECLAIM, claim("a1", pool="a"), claim("a2", pool="a"), claim("b1", pool="b"))
    snap = state.snapshot()
    assert sorted(c.metadata.name for c in snap.nodeclaims_of("a")) == ["a1", "a2"]
    add(state, kinds.NODECLAIM, claim("a2", pool="b"))
    assert sorted(c.metadata.name for c in state.snapshot().nodeclaims_of("b")) == ["a2", "b1"]


def waiting(name: str, *replacements: str):
    obj = f.nodeclaim(name)
    obj["metadata"].setdefault("annotations", {})[ANNOTATION_REPLACEMENTS] = ",".join(replacements)
    return p.nodeclaim(obj)


def test_nodeclaims_are_indexed_by_the_replacements_they_wait_for():
    state = ClusterState()
    add(state, kinds.NODECLAIM, waiting("old-1", "new-1", "new-2"), waiting("old-2", "new-2"),
        claim("new-1"), claim("plain"))  # fmt: skip
    snap = state.snapshot()
    assert snap.claims_awaiting("new-1") == ["old-1"]
    assert sorted(snap.claims_awaiting("new-2")) == ["old-1", "old-2"]
    assert snap.claims_awaiting("plain") == []
    add(state, kinds.NODECLAIM, claim("old-1"))  # the decision rolled back: annotation gone
    assert state.snapshot().claims_awaiting("new-1") == []
    assert state.snapshot().claims_awaiting("new-2") == ["old-2"]
    state.apply(kinds.NODECLAIM, [], ["old-2"])
    assert state.snapshot().claims_awaiting("new-2") == []
    assert snap.claims_awaiting("new-2") != []  # an older snapshot keeps its view


def test_a_snapshot_never_sees_later_changes():
    state = ClusterState()
    add(state, kinds.POD, pod("a", node_name="n1"))
    before = state.snapshot()
    add(state, kinds.POD, pod("b", node_name="n1"))
    state.apply(kinds.POD, [], ["default/a"])
    assert list(before.pods) == ["default/a"]
    assert [i.key for i in before.pods_on("n1")] == ["default/a"]
    assert list(state.snapshot().pods) == ["default/b"]
    assert before.generation < state.snapshot().generation


def test_snapshot_is_shared_while_nothing_changes():
    state = ClusterState()
    assert state.snapshot() is state.snapshot()


def test_subscribers_receive_each_batch_of_changes_and_can_leave():
    state = ClusterState()
    seen: list[list[StateChange[Any]]] = []
    leave = state.subscribe(lambda changes: seen.append(list(changes)))
    first = pod("a")
    add(state, kinds.POD, first)
    second = pod("a", labels={"x": "y"})
    add(state, kinds.POD, second)
    state.apply(kinds.POD, [], ["default/a", "default/missing"])
    assert [[(c.key, c.old, c.new) for c in batch] for batch in seen] == [
        [("default/a", None, first)],
        [("default/a", first, second)],
        [("default/a", second, None)],
    ]
    leave()
    add(state, kinds.POD, pod("b"))
    assert len(seen) == 3


def test_a_failing_subscriber_does_not_break_state():
    state = ClusterState()

    def broken(_):
        raise RuntimeError("boom")

    state.subscribe(broken)
    add(state, kinds.POD, pod("a"))
    assert list(state.snapshot().pods) == ["default/a"]


def test_an_unreadable_record_removes_the_object():
    state = ClusterState()
    add(state, kinds.POD, pod("a", node_name="n1"))
    state.apply(kinds.POD, [("default/a", None)], [])
    assert list(state.snapshot().pods) == []
    assert list(state.snapshot().pods_on("n1")) == []


def test_synced_needs_every_watched_kind_listed_and_nodes_paired():
    state = ClusterState(watched=[kinds.NODE, kinds.NODECLAIM])
    assert not state.synced()
    state.set_synced(kinds.NODE)
    assert not state.synced() and state.missing_kinds() == [kinds.NODECLAIM]
    state.set_synced(kinds.NODECLAIM)
    assert state.synced()
    assert state.unsynced_seconds() == 0
    add(state, kinds.NODE, node("n1", "aws:///i-1"))
    add(state, kinds.NODECLAIM, claim("c1", "aws:///i-1"))
    assert state.synced() and state.unpaired() == []


def test_counts_by_kind():
    state = ClusterState()
    add(state, kinds.POD, pod("a"), pod("b"))
    add(state, kinds.NODE, node("n"))
    assert state.counts() == {kinds.POD: 2, kinds.NODE: 1}


def test_an_unreadable_object_is_filed_apart_and_replaced_by_a_readable_version():
    state = ClusterState()
    seen: list[StateChange[Any]] = []
    state.subscribe(seen.extend)
    node = p.node_info(f.node("n1", provider_id="fake:///i-1"))
    add(state, kinds.NODE, node)
    placeholder = UnreadableObject(kinds.NODE, "n1", "n1", provider_id="fake:///i-1",
                                   error="ValueError: month must be in 1..12")  # fmt: skip
    generation = state.generation
    state.apply(kinds.NODE, [("n1", placeholder)], [])
    snap = state.snapshot()
    assert snap.generation > generation
    assert "n1" not in snap.nodes and snap.node_by_provider("fake:///i-1") is None
    assert snap.is_unreadable(kinds.NODE, "n1")
    assert snap.unreadable_of(kinds.NODE)["n1"] is placeholder
    assert seen[-1] == StateChange(kinds.NODE, "n1", node, None)
    state.apply(kinds.NODE, [("n1", node)], [])
    assert "n1" in state.snapshot().nodes and not state.snapshot().is_unreadable(kinds.NODE, "n1")
    state.apply(kinds.NODE, [("n1", placeholder)], [])
    state.apply(kinds.NODE, [], ["n1"])
    assert not state.snapshot().is_unreadable(kinds.NODE, "n1")


def test_a_change_is_narrowed_to_its_kinds_record_and_a_kind_is_its_plain_name():
    """A provider's NodeClass kind is a plain string beside the core `Kind`s: both file
    objects and compare alike, and `is_pod` and its siblings tell the record type."""
    state = ClusterState()
    seen: list[StateChange[Any]] = []
    state.subscribe(seen.extend)
    add(state, "Pod", p.pod_info(f.pod("web")))
    add(state, kinds.NODE, p.node_info(f.node("n1")))
    by_kind: dict[str, int] = {Kind.POD: 1}
    assert by_kind["Pod"] == 1 and Kind("Pod") is Kind.POD
    assert set(state.snapshot().pods) == {"default/web"}
    pod_change, node_change = seen
    assert is_pod(pod_change) and not is_node(pod_change)
    assert pod_change.new is not None and pod_change.new.pod.name == "web"
    assert is_node(node_change) and not is_pod(node_change) and not is_nodeclaim(node_change)
    assert tuple(Kind) == kinds.ALL_KINDS
