"""DaemonSet overhead groups and existing-node overhead."""

from __future__ import annotations

from typing import Any

from karpy.scheduling.daemonsets import (
    daemon_overhead_groups,
    daemonset_pod,
    existing_node_daemon_overhead,
)
from karpy.scheduling.nodes import cluster_nodes, node_from_dict
from karpy.scheduling.pods import Pod
from karpy.scheduling.templates import compile_nodepool
from tests import factories as f
from tests.scheduling.builders import context, instance_type, nodepool

AMD = instance_type("amd")
ARM = instance_type("arm", labels={"kubernetes.io/arch": "arm64"})


def daemon(name: str, **options: Any) -> Pod:
    return daemonset_pod(f.daemonset(name, template=f.pod(**options)))


def test_instance_types_are_grouped_by_the_daemonsets_that_would_run_there() -> None:
    ctx = context([AMD, ARM])
    (pool,) = ctx.pools
    everywhere = daemon("log", requests={"cpu": "100m"})
    amd_only = daemon(
        "x86-agent", requests={"cpu": "200m"}, node_selector={"kubernetes.io/arch": "amd64"}
    )
    groups = daemon_overhead_groups(
        pool.template, ctx.index, pool.options, [everywhere, amd_only], ctx.well_known_labels
    )
    by_type = {ctx.index.members(g.mask)[0].name: g.overhead for g in groups}
    assert by_type == {"amd": {"cpu": 300, "pods": 2000}, "arm": {"cpu": 100, "pods": 1000}}


def test_daemonsets_that_do_not_tolerate_the_pool_taints_add_nothing() -> None:
    ctx = context([AMD], [nodepool(taints=[f.taint("dedicated", "x")])])
    (pool,) = ctx.pools
    groups = daemon_overhead_groups(
        compile_nodepool(nodepool(taints=[f.taint("dedicated", "x")])),
        ctx.index,
        pool.options,
        [daemon("log", requests={"cpu": "100m"})],
        ctx.well_known_labels,
    )
    assert [g.overhead for g in groups] == [{}]


def test_existing_nodes_expect_only_daemonsets_not_yet_running_there() -> None:
    (node,) = cluster_nodes(
        [node_from_dict(f.node("n", labels={"kubernetes.io/arch": "amd64"}))], []
    )
    log = daemon("log", requests={"cpu": "100m"})
    agent = daemon("agent", requests={"cpu": "200m"})
    already = {"cpu": 100, "pods": 1000}  # the log pod is bound there
    assert existing_node_daemon_overhead(node, [log, agent], already) == {"cpu": 200, "pods": 1000}


def test_a_daemonset_with_alternative_terms_counts_if_any_term_fits() -> None:
    from tests.scheduling.scenario import Round

    pool = f.nodepool("default", labels={"foo": "bar"})
    template = f.pod(
        requests={"cpu": "1500m"},
        node_affinity_terms=[
            [f.match_expression("foo", "In", ["voo"])],
            [f.match_expression("foo", "In", ["bar"])],
        ],
    )
    web = f.pod("web", requests={"cpu": "1"})
    claim = Round(pool, f.daemonset("agent", template=template), web).claim_of(web)
    assert claim["requests"]["cpu"] == "2500m"


def test_a_daemonset_ignores_prefer_no_schedule_taints() -> None:
    from tests.scheduling.scenario import Round

    pool = f.nodepool("default", taints=[f.taint("soft", effect="PreferNoSchedule")])
    web = f.pod("web", requests={"cpu": "1"}, tolerations=[f.toleration("soft", operator="Exists")])
    daemon = f.daemonset("agent", template=f.pod(requests={"cpu": "1500m"}))
    assert Round(pool, daemon, web).claim_of(web)["requests"]["cpu"] == "2500m"


def test_a_daemonset_host_port_blocks_pods_wanting_it() -> None:
    from tests.scheduling.scenario import Round

    daemon = f.daemonset("agent", template=f.pod(requests={"cpu": "100m"}, host_ports=[8080]))
    web = f.pod("web", host_ports=[8080])
    assert "host port" in (Round(daemon, web).reason(web) or "")


def test_daemonsets_with_resource_claims_add_no_overhead() -> None:
    # Karpenter ignores DRA requests (IgnoreDRARequests, the default): such DaemonSets
    # are left out of the overhead of new and existing nodes alike.
    template = f.pod(requests={"cpu": "3"})
    template["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]
    dra = daemonset_pod(f.daemonset("dra", template=template))
    assert dra.has_dra_claims
    ctx = context([AMD])
    (pool,) = ctx.pools
    groups = daemon_overhead_groups(
        pool.template, ctx.index, pool.options, [dra], ctx.well_known_labels
    )
    assert [g.overhead for g in groups] == [{}]
    (node,) = cluster_nodes([node_from_dict(f.node("n"))], [])
    assert existing_node_daemon_overhead(node, [dra], {}) == {}
