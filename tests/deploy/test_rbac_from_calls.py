"""The chart's RBAC is exactly what karpy calls: derived from real runs, not from reading.

Four end-to-end scenarios run with karpy as the chart's ServiceAccount against a sandbox
whose API server enforces RBAC as kube-apiserver does (``--rbac``): provisioning (500
pods), emptiness (nodes emptied and removed), a drain that only the NodeClaim's
terminationGracePeriod ends (evictions, then pod deletion), and drift on the AWS provider
(EC2NodeClass hashes and status). Each fails on any 403. From the calls they recorded:

* every call is granted by the rendered chart, decided by the emulator's authorizer
  (`karpy.sandbox.apiserver.rbac.Policy`) offline, against the objects ``helm template``
  wrote;
* every permission the chart gives karpy's account (each verb on each resource of each
  rule, in the namespace the binding gives it) was used by some call, or is in `REASONS`
  with why it is granted though these runs never needed it. docs/security.md
  ("Permissions") holds the same table.
"""

from __future__ import annotations

import concurrent.futures
from pathlib import Path
from typing import Any

import attrs
import pytest

import tests.e2e.test_aws as aws_e2e
import tests.e2e.test_disruption as disruption_e2e
import tests.e2e.test_provisioning as provisioning_e2e
from karpy.sandbox.apiserver.auth import service_account_user
from karpy.sandbox.apiserver.rbac import (
    BOOTSTRAP_CLUSTER_ROLE_BINDINGS,
    BOOTSTRAP_CLUSTER_ROLES,
    Policy,
    PolicyRule,
    rule_allows,
)
from karpy.sandbox.apiserver.requestinfo import RequestInfo
from tests.e2e import chartrbac

pytestmark = [pytest.mark.slow, pytest.mark.kubectl, pytest.mark.xdist_group("rbac-from-calls")]

Obj = dict[str, Any]

# Permissions of the chart that the recorded runs do not exercise, and why they are granted.
REASONS: dict[str, str] = {
    "get nodeclaims.karpenter.sh": (
        "a NodeClaim create whose answer was lost is read back by name to learn whether it was "
        "made; no run loses an answer"
    ),
    "delete leases.coordination.k8s.io in kube-node-lease": (
        "the node-lease GC deletes a kubelet Lease that outlived its Node; the sandbox's "
        "garbage collector removes a Lease with its Node, as kube-controller-manager does, so "
        "no run leaves one (tests/lifecycle/test_leasegc.py holds it)"
    ),
    "get pods in karpy": (
        "the KarpenterDetected and KarpenterGone Events name karpy's own pod, read once for its "
        "uid, only when a Karpenter leader Lease appears; no run has one"
    ),
}

SCENARIOS = {
    "provisioning": (
        "fake",
        provisioning_e2e.test_pending_deployments_end_running_on_initialized_nodeclaims,
    ),
    "emptiness": ("fake", disruption_e2e.test_when_empty_removes_every_emptied_node),
    "termination-grace-period": (
        "fake",
        disruption_e2e.test_termination_grace_period_ends_a_drain_a_pdb_would_block_forever,
    ),
    "aws-drift": ("aws", aws_e2e.test_a_changed_nodeclass_drifts_its_nodes_which_are_replaced),
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Obj]]:
    """Each scenario's calls, run once for the module as the chart's account. The
    scenarios run side by side, each with its own sandbox and controller: they spend
    their time waiting on real time, not on the CPU."""
    todo = {name: scenario for name, (_cloud, scenario) in SCENARIOS.items()
            if name not in chartrbac.RECORDED}  # fmt: skip
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(todo) or 1) as pool:
        runs = [pool.submit(scenario, tmp_path_factory.mktemp(name), rbac=True)
                for name, scenario in todo.items()]  # fmt: skip
        for run in runs:
            run.result()  # a scenario's failure (or skip) is the fixture's
    return {name: chartrbac.RECORDED[name] for name in SCENARIOS}


def request_of(call: Obj) -> RequestInfo:
    return RequestInfo(path=call["path"], verb=call["verb"], is_resource_request=not call["path"],
                       api_group=call["group"], namespace=call["namespace"],
                       resource=call["resource"], subresource=call["subresource"],
                       name=call["name"])  # fmt: skip


@attrs.frozen(order=True)
class Permission:
    """One verb on one resource (or URL) of one chart rule, where its binding applies."""

    verb: str
    group: str
    resource: str  # "pods/eviction"; a URL for non-resource rules
    names: tuple[str, ...]
    namespace: str  # "" everywhere

    def __str__(self) -> str:
        if self.resource.startswith("/"):
            return f"{self.verb} {self.resource}"
        text = f"{self.verb} {self.resource}" + (f".{self.group}" if self.group else "")
        if self.names:
            text += f" named {','.join(self.names)}"
        return text + (f" in {self.namespace}" if self.namespace else "")

    def allows(self, call: Obj) -> bool:
        if self.namespace and call["namespace"] != self.namespace:
            return False
        if self.resource.startswith("/"):
            rule = PolicyRule((self.verb,), non_resource_urls=(self.resource,))
        else:
            rule = PolicyRule((self.verb,), (self.group,), (self.resource,), self.names)
        return rule_allows(request_of(call), rule)


def account_permissions(objects: list[Obj], username: str) -> set[Permission]:
    """What the chart grants ``username``, one `Permission` per verb and resource."""
    user = service_account_user(*username.split(":")[2:])
    found: set[Permission] = set()
    for namespace, rule in Policy.from_manifests(objects).grants(user):
        targets = [(g, r) for g in rule.api_groups for r in rule.resources]
        targets += [("", url) for url in rule.non_resource_urls]
        for verb in rule.verbs:
            for group, resource in targets:
                found.add(Permission(verb, group, resource, rule.resource_names, namespace))
    return found


def rendered(cloud: str) -> list[Obj]:
    return chartrbac.access_objects(cloud)


def test_no_scenario_needed_a_call_the_chart_refuses(recorded):
    for name, calls in recorded.items():
        assert calls, f"{name}: the account made no call"
        assert [c for c in calls if not c["allowed"]] == [], name


def test_every_recorded_call_is_granted_by_the_rendered_chart(recorded):
    for name, calls in recorded.items():
        cloud = SCENARIOS[name][0]
        objects = rendered(cloud)
        (account,) = [o for o in objects if o["kind"] == "ServiceAccount"]
        user = service_account_user(chartrbac.RELEASE_NAMESPACE, account["metadata"]["name"])
        policy = Policy.from_manifests([*objects, *BOOTSTRAP_CLUSTER_ROLES,
                                        *BOOTSTRAP_CLUSTER_ROLE_BINDINGS])  # fmt: skip
        refused = [c for c in calls if not policy.authorize(user, request_of(c)).allowed]
        assert refused == [], f"{name}: the chart ({cloud}) does not grant {refused}"


def test_every_permission_of_the_chart_was_used_or_has_a_documented_reason(recorded):
    calls = [c for scenario_calls in recorded.values() for c in scenario_calls]
    granted: set[Permission] = set()
    for cloud in ("fake", "aws"):
        objects = rendered(cloud)
        (account,) = [o for o in objects if o["kind"] == "ServiceAccount"]
        username = (
            f"system:serviceaccount:{chartrbac.RELEASE_NAMESPACE}:{account['metadata']['name']}"
        )
        granted |= account_permissions(objects, username)
    unused = sorted(str(p) for p in granted if not any(p.allows(c) for c in calls))
    unexplained = [p for p in unused if p not in REASONS]
    assert unexplained == [], (
        f"chart permissions no run used and REASONS does not explain: {unexplained}"
    )
    stale = sorted(set(REASONS) - set(unused))
    assert stale == [], f"REASONS explains permissions the runs use or the chart lacks: {stale}"


def test_the_reasons_table_is_the_one_in_docs_security(recorded):
    text = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text()
    for permission, reason in REASONS.items():
        assert f"`{permission}`" in text and reason in text, permission
