"""CapacityBuffer placeholders, the pure part: the chunk count a buffer resolves to
(Karpenter's table: the larger of replicas and percentage, capped by limits), the
template's pod without claim-backed volumes, and names no real pod can have."""

from __future__ import annotations

import pytest

from karpy.scheduling.buffers import (
    buffer_of,
    buffer_replicas,
    is_virtual,
    template_pod,
    virtual_pods,
)
from karpy.scheduling.pods import pod_from_dict
from tests import factories as f

CPU = {"cpu": 1000, "pods": 1000}  # one chunk: 1 cpu (milli-units), one pod


@pytest.mark.parametrize(
    ("replicas", "percentage", "workload", "limits", "expected"),
    [
        (7, None, None, {}, 7),  # fixed replicas only
        (10, None, None, {"cpu": 3000}, 3),  # capped by a binding limit
        (3, None, None, {"cpu": 10000}, 3),  # a loose limit does not raise it
        (None, None, None, {"cpu": 5000}, 5),  # limits alone
        (None, 20, 10, {}, 2),  # 20% of 10
        (5, 20, 10, {}, 5),  # the larger of replicas and percentage
        (5, 80, 10, {}, 8),
        (5, 80, 10, {"cpu": 4000}, 4),  # that, capped
        (None, 10, 1, {}, 1),  # a percentage rounds up to one chunk
        (None, 50, None, {}, 0),  # a percentage means nothing without a workload
        (None, None, None, {"memory": 10**9}, 0),  # a limit on nothing the chunk asks for
        (None, None, None, {"pods": 4000}, 0),  # nor on the pod count
    ],
)
def test_chunks(replicas, percentage, workload, limits, expected) -> None:
    got = buffer_replicas(replicas=replicas, percentage=percentage, workload_replicas=workload,
                          limits=limits, requests=CPU)  # fmt: skip
    assert got == expected


def test_the_template_pod_drops_claim_backed_volumes_and_their_mounts() -> None:
    spec = f.pod(requests={"cpu": "1"}, pvcs=["data"], node_name="somewhere")["spec"]
    pod = template_pod("team", {"metadata": {"labels": {"app": "web"}}, "spec": spec})
    assert pod.volumes == ()
    assert pod.node_name == ""
    assert (pod.namespace, pod.labels["app"], pod.requests["cpu"]) == ("team", "web", 1000)


def test_placeholders_have_names_no_real_pod_can_have() -> None:
    template = template_pod("team", {"spec": f.pod(requests={"cpu": "1"})["spec"]})
    pods = virtual_pods("team/spare", "3f2a", template, 2)
    assert [p.key for p in pods] == ["team/capacitybuffer:spare:1", "team/capacitybuffer:spare:2"]
    assert all(is_virtual(p) and buffer_of(p) == "team/spare" for p in pods)
    real = pod_from_dict(f.pod("capacitybuffer-spare-1", namespace="team"))
    assert not is_virtual(real) and buffer_of(real) == ""
