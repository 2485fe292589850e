"""The chart's RBAC: what karpy calls and nothing more (no Secrets, no wildcards), each rule
with its reason; the leader-election Role follows the configured Lease; the node-lease GC's
Role lives in kube-node-lease; the admin aggregation role is not bound to karpy."""

from __future__ import annotations

from typing import Any

from tests.deploy.conftest import CHART_DIR, deployment, env_of, find, helm_template, render_chart


def rules_of(objects: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (o["kind"], o["metadata"]["name"], rule)
        for o in objects
        if o["kind"] in ("Role", "ClusterRole")
        for rule in o.get("rules", [])
    ]


def test_no_rule_grants_secrets_or_wildcards(default_objects):
    for kind, name, rule in rules_of(default_objects):
        for field in ("apiGroups", "resources", "verbs", "nonResourceURLs"):
            assert "*" not in rule.get(field, []), (kind, name, rule)
        assert not {"secrets", "configmaps"} & set(rule.get("resources", [])), (kind, name)


def test_every_rule_in_the_templates_carries_a_reason():
    for template in sorted((CHART_DIR / "templates").glob("*role*.yaml")):
        if template.name == "aggregate-clusterrole.yaml":
            continue  # not bound to karpy; its reason is the file's header
        lines = template.read_text().splitlines()
        for number, line in enumerate(lines):
            if line.strip().startswith("- apiGroups:") or line.strip().startswith(
                "- nonResourceURLs:"
            ):
                above = "\n".join(lines[max(0, number - 4) : number])
                assert "# reason:" in above, f"{template.name}:{number + 1} has no reason"


def test_leader_election_role_names_the_default_lease(default_objects):
    role = find(default_objects, "Role", "karpy")
    assert role["metadata"]["namespace"] == "karpy"
    assert role["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["karpy-leader-election"],
            "verbs": ["get", "update"],
        },
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
    ]
    binding = find(default_objects, "RoleBinding", "karpy")
    assert binding["roleRef"]["name"] == "karpy"
    assert binding["subjects"][0]["name"] == "karpy"


def test_leader_election_role_follows_the_configured_lease():
    objects = render_chart(
        {"settings": {"leaderElectionName": "my-lease", "leaderElectionNamespace": "ops"}}
    )
    role = find(objects, "Role", "karpy")
    assert role["metadata"]["namespace"] == "ops"
    assert role["rules"][0]["resourceNames"] == ["my-lease"]
    assert find(objects, "RoleBinding", "karpy")["metadata"]["namespace"] == "ops"
    env = env_of(objects)
    assert (env["LEADER_ELECTION_NAME"], env["LEADER_ELECTION_NAMESPACE"]) == ("my-lease", "ops")


def test_leader_election_role_follows_a_lease_name_given_in_controller_env():
    objects = render_chart(
        {"controller": {"env": [{"name": "LEADER_ELECTION_NAME", "value": "from-env"}]}}
    )
    assert find(objects, "Role", "karpy")["rules"][0]["resourceNames"] == ["from-env"]
    assert env_of(objects)["LEADER_ELECTION_NAME"] == "from-env"


def test_without_leader_election_there_is_no_lease_role_and_one_replica_only():
    objects = render_chart({"replicas": 1, "settings": {"disableLeaderElection": True}})
    assert not [o for o in objects if o["kind"] == "Role" and o["metadata"]["name"] == "karpy"]
    assert env_of(objects)["DISABLE_LEADER_ELECTION"] == "true"
    result = helm_template({"settings": {"clusterName": "c", "disableLeaderElection": True}})
    assert result.returncode != 0
    assert "needs replicas: 1" in result.stderr


def test_node_lease_gc_role_lives_in_kube_node_lease(default_objects):
    role = find(default_objects, "Role", "karpy-node-lease-gc")
    assert role["metadata"]["namespace"] == "kube-node-lease"
    assert role["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["list", "watch", "delete"],
        }
    ]
    binding = find(default_objects, "RoleBinding", "karpy-node-lease-gc")
    assert binding["metadata"]["namespace"] == "kube-node-lease"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "karpy", "namespace": "karpy"}
    ]


def test_core_role_writes_only_what_karpy_writes(default_objects):
    writes = {
        (group, resource, verb)
        for kind, name, rule in rules_of(default_objects)
        if kind == "ClusterRole" and name in ("karpy-core", "karpy")
        for group in rule.get("apiGroups", [])
        for resource in rule.get("resources", [])
        for verb in rule["verbs"]
        if verb not in ("get", "list", "watch")
    }
    assert writes == {
        ("karpenter.sh", "nodeclaims", "create"),
        ("karpenter.sh", "nodeclaims", "patch"),
        ("karpenter.sh", "nodeclaims", "delete"),
        ("karpenter.sh", "nodeclaims/status", "patch"),
        ("karpenter.sh", "nodepools/status", "patch"),
        ("karpenter.sh", "nodepools", "patch"),
        ("karpenter.k8s.aws", "ec2nodeclasses", "patch"),
        ("karpenter.k8s.aws", "ec2nodeclasses/status", "patch"),
        ("", "nodes", "patch"),
        ("", "nodes", "delete"),
        ("", "pods/eviction", "create"),
        ("", "pods", "delete"),
        ("", "events", "create"),
    }


def test_fake_cloud_adds_node_create_and_nothing_else():
    plain = rules_of(render_chart())
    fake = rules_of(render_chart({"settings": {"cloudProvider": "fake"}}))
    added = [rule for rule in fake if rule not in plain]
    assert [rule for _, _, rule in added] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["create"]}
    ]


def test_the_pod_deletion_cost_gate_adds_pod_patch_and_nothing_else():
    plain = rules_of(render_chart())
    gates = {"podDeletionCostManagement": True}
    gated = rules_of(render_chart({"settings": {"featureGates": gates}}))
    added = [rule for rule in gated if rule not in plain]
    assert [rule for _, _, rule in added] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]}
    ]


def test_nominated_node_names_adds_the_pod_status_patch_and_nothing_else():
    plain = rules_of(render_chart())
    named = rules_of(render_chart({"settings": {"nominatedNodeNames": True}}))
    added = [rule for rule in named if rule not in plain]
    assert [rule for _, _, rule in added] == [
        {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch"]}
    ]


def test_additional_cluster_role_rules_are_appended_to_the_core_role():
    extra = {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
             "verbs": ["get", "list", "watch"]}  # fmt: skip
    objects = render_chart({"additionalClusterRoleRules": [extra]})
    assert find(objects, "ClusterRole", "karpy-core")["rules"][-1] == extra


def test_admin_aggregation_role_is_labelled_and_unbound(default_objects):
    admin = find(default_objects, "ClusterRole", "karpy-admin")
    assert admin["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"] == "true"
    bindings = [o for o in default_objects if o["kind"].endswith("Binding")]
    assert all(b["roleRef"]["name"] != "karpy-admin" for b in bindings)


def test_release_names_follow_karpenters_full_name_rule():
    objects = render_chart(release="autoscaler", namespace="kube-system")
    assert deployment(objects)["metadata"]["name"] == "autoscaler-karpy"
    assert find(objects, "ClusterRole", "autoscaler-karpy-core")
    objects = render_chart({"fullnameOverride": "karpenter"})
    assert find(objects, "Service")["metadata"]["name"] == "karpenter"


def test_karpenters_leader_lease_is_listable_by_its_name_only(default_objects):
    core = find(default_objects, "ClusterRole", "karpy-core")
    lease_rules = [r for r in core["rules"] if "leases" in r.get("resources", [])]
    assert lease_rules == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["karpenter-leader-election"],
            "verbs": ["list"],
        }
    ]


def test_karpy_may_read_pods_of_its_own_namespace_to_name_itself_in_events(default_objects):
    role = find(default_objects, "Role", "karpy-pod")
    assert role["metadata"]["namespace"] == "karpy"
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
    assert env_of(default_objects)["POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    binding = find(default_objects, "RoleBinding", "karpy-pod")
    assert (binding["metadata"]["namespace"], binding["roleRef"]["name"]) == ("karpy", "karpy-pod")


def test_capacity_buffer_gate_adds_the_buffer_controllers_reads_and_status_writes():
    plain = rules_of(render_chart())
    gated = rules_of(render_chart({"settings": {"featureGates": {"capacityBuffer": True}}}))
    added = [rule for rule in gated if rule not in plain]
    assert [rule for _, _, rule in added] == [
        {"apiGroups": ["autoscaling.x-k8s.io"], "resources": ["capacitybuffers"],
         "verbs": ["list", "watch"]},
        {"apiGroups": ["autoscaling.x-k8s.io"], "resources": ["capacitybuffers/status"],
         "verbs": ["patch"]},
        {"apiGroups": [""], "resources": ["podtemplates"], "verbs": ["list", "watch"]},
        {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets", "replicasets"],
         "verbs": ["get"]},
    ]  # fmt: skip
