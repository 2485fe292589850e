"""Provider IDs, tags and the per-type kubelet values (pure)."""

from __future__ import annotations

import pytest

from karpy.base.quantity import parse_quantity
from karpy.cloud.aws.launch import parse_provider_id, provider_id
from karpy.cloud.aws.launch.kubelet import KubeletValues, kubelet_config, kubelet_values
from karpy.cloud.aws.launch.launcher import node_labels, registration_taints
from karpy.cloud.aws.launch.tags import instance_tags, tag_filters
from tests.aws.launch.conftest import instance_type, nodeclaim, nodeclass


def test_provider_ids_round_trip() -> None:
    assert provider_id("us-west-2a", "i-0abc") == "aws:///us-west-2a/i-0abc"
    assert parse_provider_id("aws:///us-west-2a/i-0abc") == ("us-west-2a", "i-0abc")
    for bad in ("fake:///node", "aws:///us-west-2a/", "i-0abc"):
        with pytest.raises(ValueError, match="not an AWS provider ID"):
            parse_provider_id(bad)


def test_instance_tags_put_karpenters_keys_over_the_users() -> None:
    nc = nodeclass(spec={"tags": {"team": "a", "Name": "mine"}})
    tags = instance_tags(nc, nodeclaim("claim-1"), "test-cluster")
    assert tags == {
        "team": "a",
        "Name": "mine",
        "kubernetes.io/cluster/test-cluster": "owned",
        "eks:eks-cluster-name": "test-cluster",
        "karpenter.k8s.aws/ec2nodeclass": "default",
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/nodeclaim": "claim-1",
    }
    assert tag_filters({"b": "2", "a": "1"}, keys=("k",)) == [
        {"Name": "tag:a", "Values": ["1"]},
        {"Name": "tag:b", "Values": ["2"]},
        {"Name": "tag-key", "Values": ["k"]},
    ]


def test_kubelet_values_carry_max_pods_and_the_reserved_part_of_the_overhead() -> None:
    values = kubelet_values(instance_type("m5.large", pods=29), nodeclass())
    # overhead = kube-reserved + 100Mi memory eviction + 10% of 20Gi nodefs eviction
    assert values == KubeletValues(
        max_pods=29,
        kube_reserved=(("cpu", "80m"), ("ephemeral-storage", "1Gi"), ("memory", "893Mi")),
    )
    assert parse_quantity("2Gi") == parse_quantity("20Gi") // 10  # the test type's eviction


def test_the_node_class_kube_reserved_wins_and_cluster_dns_defaults() -> None:
    nc = nodeclass(spec={"kubelet": {"kubeReserved": {"cpu": "200m"}, "maxPods": 20}})
    values = kubelet_values(instance_type("m5.large"), nc)
    assert values.kube_reserved == (("cpu", "200m"),)
    config = kubelet_config(nc, values, "172.20.0.10")
    assert config == {"maxPods": 20, "kubeReserved": {"cpu": "200m"}, "clusterDNS": ["172.20.0.10"]}


def test_node_labels_drop_kubelet_restricted_domains_and_taints_add_unregistered() -> None:
    claim = nodeclaim(
        labels={"node.kubernetes.io/instance-type": "m5.large", "team": "a"},
        taints=[{"key": "dedicated", "effect": "NoSchedule"}],
        startup_taints=[{"key": "init", "effect": "NoSchedule"}],
    )
    assert node_labels(claim, nodeclass(), "spot") == {
        "team": "a",
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/capacity-type": "spot",
        "karpenter.sh/do-not-sync-taints": "true",
    }
    assert [(t.key, t.effect) for t in registration_taints(claim)] == [
        ("dedicated", "NoSchedule"),
        ("init", "NoSchedule"),
        ("karpenter.sh/unregistered", "NoExecute"),
    ]
