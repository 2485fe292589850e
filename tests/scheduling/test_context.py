"""Compiling NodePools into NodeClaim templates and per-pool instance-type options."""

from __future__ import annotations

from karpy.scheduling.requirements import Requirement
from karpy.scheduling.templates import compile_nodepool, ordered_templates
from tests import factories as f
from tests.scheduling.builders import context, instance_type, nodepool

AMD = instance_type("amd", labels={"kubernetes.io/arch": "amd64"})
ARM = instance_type("arm", labels={"kubernetes.io/arch": "arm64"})


def test_a_template_carries_labels_requirements_and_simulation_keys() -> None:
    template = compile_nodepool(nodepool("web", labels={"team": "a"}, weight=5))
    assert template.labels["karpenter.sh/nodepool"] == "web"
    assert template.labels["karpenter.k8s.aws/ec2nodeclass"] == "default"
    assert template.requirements.get("team") == Requirement.in_values("team", "a")
    assert template.requirements.get("karpenter.sh/registered").values == {"true"}
    assert template.weight == 5


def test_templates_are_ordered_by_weight_then_name_and_unready_pools_are_dropped() -> None:
    templates = [
        compile_nodepool(nodepool("b")),
        compile_nodepool(nodepool("a")),
        compile_nodepool(nodepool("heavy", weight=50)),
        compile_nodepool(nodepool("broken", ready=False)),
    ]
    assert [t.nodepool for t in ordered_templates(templates)] == ["heavy", "a", "b"]


def test_a_pool_may_launch_only_types_compatible_with_its_requirements() -> None:
    ctx = context(
        [AMD, ARM],
        [nodepool(requirements=[f.nodepool_requirement("kubernetes.io/arch", "In", ["arm64"])])],
    )
    (pool,) = ctx.pools
    assert [it.name for it in ctx.index.members(pool.options)] == ["arm"]


def test_a_pool_that_can_launch_nothing_is_skipped_with_a_reason() -> None:
    ctx = context(
        [AMD],
        [nodepool(requirements=[f.nodepool_requirement("kubernetes.io/arch", "In", ["arm64"])])],
    )
    assert ctx.pools == ()
    assert "filtered out all instance types" in ctx.skipped[0].reason


def test_strict_min_values_skips_a_pool_whose_types_cannot_cover_it() -> None:
    requirement = f.nodepool_requirement("kubernetes.io/arch", "Exists", min_values=2)
    strict = context([AMD], [nodepool(requirements=[requirement])])
    assert strict.pools == ()
    assert "minValues" in strict.skipped[0].reason
    relaxed = context([AMD], [nodepool(requirements=[requirement])], min_values_policy="BestEffort")
    assert len(relaxed.pools) == 1


def test_well_known_labels_include_the_providers() -> None:
    ctx = context([AMD], provider_labels=frozenset({"size"}))
    assert {"size", "topology.kubernetes.io/zone"} <= ctx.well_known_labels


def test_the_domain_universe_comes_from_pools_and_their_types() -> None:
    ctx = context(
        [AMD],
        [
            nodepool(
                requirements=[
                    f.nodepool_requirement(
                        "topology.kubernetes.io/zone", "In", ["zone-a", "zone-b"]
                    )
                ]
            )
        ],
    )
    assert ctx.domains.domains("topology.kubernetes.io/zone", None) == ("zone-a", "zone-b")
