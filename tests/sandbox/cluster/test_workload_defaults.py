"""The emulator defaults apps/v1 workloads as kube-apiserver does (what kubectl relies on)."""

from __future__ import annotations

from typing import Any

from tests import factories as f


def _template() -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]
        },
    }


def test_a_minimal_deployment_gets_upstreams_defaults(apiserver):
    created = apiserver.store.create(
        "deployments",
        {
            "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": _template()},
        },
    )
    spec = created["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert (spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (10, 600)
    pod_spec = spec["template"]["spec"]
    assert (pod_spec["restartPolicy"], pod_spec["dnsPolicy"], pod_spec["schedulerName"]) == (
        "Always",
        "ClusterFirst",
        "default-scheduler",
    )
    container = pod_spec["containers"][0]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert container["terminationMessagePolicy"] == "File"


def test_defaults_never_override_what_was_given_and_updates_stay_no_ops(apiserver):
    deployment = f.deployment("web", replicas=0)
    deployment["spec"]["strategy"] = {"type": "Recreate"}
    created = apiserver.store.create("deployments", deployment)
    assert created["spec"]["replicas"] == 0 and created["spec"]["strategy"] == {"type": "Recreate"}
    again = apiserver.store.update("deployments", created)
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_daemonsets_and_replicasets_are_defaulted_too(apiserver):
    ds = apiserver.store.create("daemonsets", f.daemonset("agent"))
    assert ds["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    rs = f.replica_set("web")
    del rs["spec"]["replicas"]
    assert apiserver.store.create("replicasets", rs)["spec"]["replicas"] == 1
