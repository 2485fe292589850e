# ruff: noqa: E501 -- the comments quote Karpenter's It names verbatim
"""Parity with Karpenter's suite_test.go: "Preferential Fallback" and "Instance Type Compatibility"."""

from __future__ import annotations

from tests import factories as f
from tests.scheduling.parity import catalog as cat
from tests.scheduling.parity.harness import ARCH, INSTANCE_TYPE, OS, ZONE, provision
from tests.scheduling.parity.pools import plain_pool, suite_pool

req = f.match_expression
pool_req = f.nodepool_requirement
BOTH_ARCHES = [pool_req(ARCH, "In", ["arm64", "amd64"])]
AMD64_ONLY = [pool_req(ARCH, "In", ["amd64"])]


# --- Preferential Fallback ----------------------------------------------------------------


def test_required_affinity_final_term_is_never_relaxed() -> None:
    # It: Preferential Fallback / Required / should not relax the final term
    pool = suite_pool(
        requirements=[
            pool_req(ZONE, "In", ["test-zone-1"]),
            pool_req(INSTANCE_TYPE, "In", ["default-instance-type"]),
        ]
    )
    pod = f.unschedulable_pod(node_affinity_terms=[[req(ZONE, "In", ["invalid"])]])
    provision(pool, pod).not_scheduled(pod)


def test_required_affinity_falls_through_ored_terms_in_order() -> None:
    # It: Preferential Fallback / Required / should relax multiple terms
    terms = [
        [req(ZONE, "In", ["invalid"])],
        [req(ZONE, "In", ["invalid"])],
        [req(ZONE, "In", ["test-zone-1"])],
        [req(ZONE, "In", ["test-zone-2"])],
    ]
    pod = f.unschedulable_pod(node_affinity_terms=terms)
    assert provision(suite_pool(), pod).node(pod).zone == "test-zone-1"


def test_unsatisfiable_preferences_are_all_relaxed() -> None:
    # It: Preferential Fallback / Preferred / should relax all terms
    pod = f.unschedulable_pod(
        preferred_node_affinity=[
            f.preferred_node_term([req(ZONE, "In", ["invalid"])]),
            f.preferred_node_term([req(INSTANCE_TYPE, "In", ["invalid"])]),
        ]
    )
    provision(suite_pool(), pod).node(pod)


def test_preferences_relax_from_heaviest_to_lighter() -> None:
    # It: Preferential Fallback / Preferred / should relax to use lighter weights
    pool = suite_pool(requirements=[pool_req(ZONE, "In", ["test-zone-1", "test-zone-2"])])
    pod = f.unschedulable_pod(
        preferred_node_affinity=[
            f.preferred_node_term([req(INSTANCE_TYPE, "In", ["test-zone-3"])], weight=100),
            f.preferred_node_term([req(ZONE, "In", ["test-zone-2"])], weight=50),
            f.preferred_node_term([req(ZONE, "In", ["test-zone-1"])], weight=1),
        ]
    )
    assert provision(pool, pod).node(pod).zone == "test-zone-2"


def test_preference_conflicting_with_requirement_is_dropped() -> None:
    # It: Preferential Fallback / Preferred / should schedule even if preference is conflicting with requirement
    pod = f.unschedulable_pod(
        node_requirements=[req(ZONE, "In", ["test-zone-3"])],
        node_preferences=[req(ZONE, "NotIn", ["test-zone-3"])],
    )
    assert provision(suite_pool(), pod).node(pod).zone == "test-zone-3"


def test_self_contradicting_preference_is_dropped() -> None:
    # It: Preferential Fallback / Preferred / should schedule even if preference requirements are conflicting
    pod = f.unschedulable_pod(
        node_preferences=[req(ZONE, "In", ["invalid"]), req(ZONE, "NotIn", ["invalid"])]
    )
    provision(suite_pool(), pod).node(pod)


# --- Instance Type Compatibility ----------------------------------------------------------


def test_request_larger_than_any_instance_type_is_not_scheduled() -> None:
    # It: Instance Type Compatibility / should not schedule if requesting more resources than any instance type has
    pod = f.unschedulable_pod(requests={"cpu": "512"})
    provision(suite_pool(), pod).not_scheduled(pod)


def test_pods_of_different_arches_get_different_nodes() -> None:
    # It: Instance Type Compatibility / should launch pods with different archs on different instances
    pods = [
        f.unschedulable_pod(node_selector={ARCH: "amd64"}),
        f.unschedulable_pod(node_selector={ARCH: "arm64"}),
    ]
    done = provision(suite_pool(requirements=BOTH_ARCHES), pods)
    assert len(done.node_names(pods)) == 2


def test_instance_type_excluded_by_pool_arch_is_not_scheduled() -> None:
    # It: Instance Type Compatibility / should exclude instance types that are not supported by the pod constraints (node affinity/instance type)
    pod = f.unschedulable_pod(node_requirements=[req(INSTANCE_TYPE, "In", ["arm-instance-type"])])
    provision(suite_pool(requirements=AMD64_ONLY), pod).not_scheduled(pod)


def test_os_only_offered_by_an_excluded_arch_is_not_scheduled() -> None:
    # It: Instance Type Compatibility / should exclude instance types that are not supported by the pod constraints (node affinity/operating system)
    pod = f.unschedulable_pod(node_requirements=[req(OS, "In", ["ios"])])
    provision(suite_pool(requirements=AMD64_ONLY), pod).not_scheduled(pod)


def test_only_type_big_enough_excluded_by_pool_arch_is_not_scheduled() -> None:
    # It: Instance Type Compatibility / should exclude instance types that are not supported by the provider constraints (arch)
    pod = f.unschedulable_pod(limits={"cpu": "14"})
    provision(suite_pool(requirements=AMD64_ONLY), pod).not_scheduled(pod)


def test_pods_of_different_oses_get_different_nodes() -> None:
    # It: Instance Type Compatibility / should launch pods with different operating systems on different instances
    pods = [
        f.unschedulable_pod(node_selector={OS: "linux"}),
        f.unschedulable_pod(node_selector={OS: "windows"}),
    ]
    done = provision(suite_pool(requirements=BOTH_ARCHES), pods)
    assert len(done.node_names(pods)) == 2


def test_pods_selecting_different_instance_types_get_different_nodes() -> None:
    # It: Instance Type Compatibility / should launch pods with different instance type node selectors on different instances
    pods = [
        f.unschedulable_pod(
            node_selector={"beta.kubernetes.io/instance-type": "small-instance-type"}
        ),
        f.unschedulable_pod(node_selector={INSTANCE_TYPE: "default-instance-type"}),
    ]
    done = provision(suite_pool(requirements=BOTH_ARCHES), pods)
    assert len(done.node_names(pods)) == 2


def test_pods_selecting_different_zones_get_different_nodes() -> None:
    # It: Instance Type Compatibility / should launch pods with different zone selectors on different instances
    pods = [
        f.unschedulable_pod(node_selector={ZONE: "test-zone-1"}),
        f.unschedulable_pod(node_selector={ZONE: "test-zone-2"}),
    ]
    done = provision(suite_pool(requirements=BOTH_ARCHES), pods)
    assert len(done.node_names(pods)) == 2


GPU_1 = "karpenter.sh/super-great-gpu"
GPU_2 = "karpenter.sh/even-better-gpu"


def _split_gpu_catalog() -> dict[str, object]:
    types = cat.instance_types(5)
    types[0]["capacity"][GPU_1] = "25"
    types[1]["capacity"][GPU_2] = "25"
    return cat.catalog(types)


def test_resources_found_on_different_types_get_different_nodes() -> None:
    # It: Instance Type Compatibility / should launch pods with resources that aren't on any single instance type on different instances
    pods = [f.unschedulable_pod(limits={GPU_1: "1"}), f.unschedulable_pod(limits={GPU_2: "1"})]
    done = provision(suite_pool(), pods, catalog=_split_gpu_catalog())
    assert len(done.node_names(pods)) == 2


def test_resources_no_single_type_has_together_are_not_scheduled() -> None:
    # It: Instance Type Compatibility / should fail to schedule a pod with resources requests that aren't on a single instance type
    pod = f.unschedulable_pod(limits={GPU_1: "1", GPU_2: "1"})
    provision(suite_pool(), pod, catalog=_split_gpu_catalog()).not_scheduled(pod)


FIVE_TYPES = cat.catalog(cat.instance_types(5))


def test_provider_label_selects_matching_instance_types() -> None:
    # It: Provider Specific Labels / should filter instance types that match labels
    large = f.unschedulable_pod(node_selector={cat.SIZE: "large"})
    small = f.unschedulable_pod(node_selector={cat.SIZE: "small"})
    done = provision(suite_pool(), large, small, catalog=FIVE_TYPES)
    assert done.node(large).instance_type == "fake-it-4"
    assert done.node(small).instance_type == "fake-it-0"


def test_provider_label_contradicting_instance_type_is_not_scheduled() -> None:
    # It: Provider Specific Labels / should not schedule with incompatible labels
    pods = [
        f.unschedulable_pod(node_selector={cat.SIZE: "large", INSTANCE_TYPE: "fake-it-0"}),
        f.unschedulable_pod(node_selector={cat.SIZE: "small", INSTANCE_TYPE: "fake-it-4"}),
    ]
    done = provision(suite_pool(), pods, catalog=FIVE_TYPES)
    for pod in pods:
        done.not_scheduled(pod)


def test_optional_label_exists_selects_the_types_that_have_it() -> None:
    # It: Provider Specific Labels / should schedule optional labels
    pod = f.unschedulable_pod(node_requirements=[req(cat.SPECIAL, "Exists")])
    node = provision(suite_pool(), pod, catalog=FIVE_TYPES).node(pod)
    assert cat.SPECIAL in node.labels
    assert node.instance_type == "fake-it-4"


def test_optional_label_does_not_exist_selects_types_without_it() -> None:
    # It: Provider Specific Labels / should schedule without optional labels if disallowed
    pod = f.unschedulable_pod(node_requirements=[req(cat.SPECIAL, "DoesNotExist")])
    node = provision(plain_pool(), pod, catalog=FIVE_TYPES).node(pod)
    assert cat.SPECIAL not in node.labels
