"""User data per AMI family, and its merge with the node class's own userData (the cases
of Karpenter's launch template golden files: MIME, YAML and shell input for AL2023, MIME
and plain input for AL2, TOML input for Bottlerocket)."""

from __future__ import annotations

import tomllib

import attrs
import pytest
import yaml

from karpy.apis.core import Taint
from karpy.cloud.aws.launch.userdata import BootstrapOptions, render_user_data
from karpy.cloud.aws.launch.userdata.mime import parse_archive
from karpy.cloud.aws.launch.userdata.options import kubelet_extra_args
from karpy.cloud.errors import NodeClassNotReady
from tests.aws.launch.conftest import CA_BUNDLE, cluster_info

UNREGISTERED = Taint(key="karpenter.sh/unregistered", effect="NoExecute")
LABELS = {
    "karpenter.k8s.aws/ec2nodeclass": "default",
    "karpenter.sh/capacity-type": "on-demand",
    "karpenter.sh/do-not-sync-taints": "true",
    "karpenter.sh/nodepool": "default",
    "testing/cluster": "unspecified",
}
OPTS = BootstrapOptions(
    cluster=cluster_info(),
    kubelet={"clusterDNS": ["172.20.0.10"], "maxPods": 110},
    labels=LABELS,
    taints=(UNREGISTERED,),
)
LABEL_FLAG = (
    '--node-labels="karpenter.k8s.aws/ec2nodeclass=default,karpenter.sh/capacity-type=on-demand,'
    'karpenter.sh/do-not-sync-taints=true,karpenter.sh/nodepool=default,testing/cluster=unspecified"'
)
GENERATED_NODECONFIG = f"""# Karpenter Generated NodeConfig
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
metadata: {{}}
spec:
  cluster:
    apiServerEndpoint: https://test-cluster.example
    certificateAuthority: {CA_BUNDLE}
    cidr: 172.20.0.0/16
    name: test-cluster
  containerd: {{}}
  instance:
    localStorage: {{}}
  kubelet:
    config:
      clusterDNS:
      - 172.20.0.10
      maxPods: 110
      registerWithTaints:
      - effect: NoExecute
        key: karpenter.sh/unregistered
    flags:
    - {LABEL_FLAG}
    - --register-with-taints="karpenter.sh/unregistered:NoExecute"
"""
USER_NODECONFIG = """apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      maxPods: 42"""
USER_SHELL = '#!/bin/bash\necho "hello from the user"'
USER_MIME = f"""MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="BOUNDARY"

--BOUNDARY
Content-Type: application/node.eks.aws

{USER_NODECONFIG}
--BOUNDARY
Content-Type: text/x-shellscript; charset="us-ascii"

{USER_SHELL}
--BOUNDARY--
"""


def al2023(custom: str | None = None) -> str:
    return render_user_data("AL2023", attrs.evolve(OPTS, custom_user_data=custom))


def test_al2023_without_user_data_is_one_nodeconfig_part_in_karpenters_shape() -> None:
    expected = (
        'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n'
        "--//\nContent-Type: application/node.eks.aws\n\n"
        f"{GENERATED_NODECONFIG}\n--//--\n"
    )
    assert al2023() == expected


def test_al2023_keeps_the_users_mime_parts_before_its_own() -> None:
    parts = parse_archive(al2023(USER_MIME))
    assert [p.content_type for p in parts] == [
        "application/node.eks.aws",
        'text/x-shellscript; charset="us-ascii"',
        "application/node.eks.aws",
    ]
    assert parts[0].content == USER_NODECONFIG
    assert parts[1].content == USER_SHELL
    assert parts[2].content == GENERATED_NODECONFIG


def test_al2023_wraps_a_yaml_nodeconfig_as_a_nodeconfig_part() -> None:
    parts = parse_archive(al2023(USER_NODECONFIG))
    assert [(p.content_type, p.content) for p in parts] == [
        ("application/node.eks.aws", USER_NODECONFIG),
        ("application/node.eks.aws", GENERATED_NODECONFIG),
    ]


def test_al2023_wraps_anything_else_as_a_shell_script() -> None:
    parts = parse_archive(al2023(USER_SHELL))
    assert [(p.content_type, p.content) for p in parts] == [
        ('text/x-shellscript; charset="us-ascii"', USER_SHELL),
        ("application/node.eks.aws", GENERATED_NODECONFIG),
    ]


def test_al2023_nodeconfig_carries_reserved_resources_and_raid0() -> None:
    opts = attrs.evolve(
        OPTS,
        kubelet={**OPTS.kubelet, "kubeReserved": {"cpu": "80m", "memory": "893Mi"}},
        instance_store_policy="RAID0",
    )
    document = yaml.safe_load(parse_archive(render_user_data("AL2023", opts))[-1].content)
    assert document["spec"]["kubelet"]["config"]["kubeReserved"] == {
        "cpu": "80m",
        "memory": "893Mi",
    }
    assert document["spec"]["instance"]["localStorage"] == {"strategy": "RAID0"}


def test_al2023_needs_the_service_cidr() -> None:
    opts = attrs.evolve(OPTS, cluster=attrs.evolve(OPTS.cluster, cidr=None))
    with pytest.raises(NodeClassNotReady, match="CIDR"):
        render_user_data("AL2023", opts)


AL2_BOOTSTRAP = (
    "#!/bin/bash -xe\n"
    "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n"
    "/etc/eks/bootstrap.sh 'test-cluster' --apiserver-endpoint 'https://test-cluster.example' "
    f"--b64-cluster-ca '{CA_BUNDLE}' \\\n"
    "--dns-cluster-ip '172.20.0.10' \\\n"
    "--use-max-pods false \\\n"
    f"--kubelet-extra-args '{LABEL_FLAG} "
    '--register-with-taints="karpenter.sh/unregistered:NoExecute" --max-pods=110\''
)


def test_al2_runs_bootstrap_sh_with_the_kubelet_flags() -> None:
    document = render_user_data("AL2", OPTS)
    assert document == (
        'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n'
        f'--//\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n{AL2_BOOTSTRAP}\n--//--\n'
    )


@pytest.mark.parametrize("custom", [USER_SHELL, USER_MIME])
def test_al2_puts_the_users_parts_first(custom: str) -> None:
    parts = parse_archive(render_user_data("AL2", attrs.evolve(OPTS, custom_user_data=custom)))
    assert parts[-1].content == AL2_BOOTSTRAP
    assert USER_SHELL in [p.content for p in parts[:-1]]


def test_kubelet_flags_render_maps_sorted_with_their_separators() -> None:
    opts = attrs.evolve(
        OPTS,
        labels={},
        taints=(Taint(key="dedicated", value="gpu", effect="NoSchedule"), UNREGISTERED),
        kubelet={
            "maxPods": 58,
            "kubeReserved": {"memory": "1Gi", "cpu": "100m"},
            "evictionHard": {"memory.available": "5%"},
            "imageGCHighThresholdPercent": 85,
            "cpuCFSQuota": False,
        },
    )
    assert kubelet_extra_args(opts) == [
        '--register-with-taints="dedicated=gpu:NoSchedule,karpenter.sh/unregistered:NoExecute"',
        "--max-pods=58",
        '--kube-reserved="cpu=100m,memory=1Gi"',
        '--eviction-hard="memory.available<5%"',
        "--image-gc-high-threshold=85",
        "--cpu-cfs-quota=false",
    ]


BR_TAINTS = (
    Taint(key="baz", value="bin", effect="NoExecute"),
    Taint(key="foo", value="bar", effect="NoExecute"),
    UNREGISTERED,
)
BR_USER = """[settings.kubernetes]
"unknown-setting" = "unknown"
api-server = 'replaceme'
cloud-provider = 'external'
cluster-certificate = "replaceme"
cluster-name = 'replaceme'
max-pods = 9999999999

[settings.kubernetes.eviction-hard]
"memory.available" = "12%"

[settings.kubernetes.labels]
"replace" = "me"

[settings.kubernetes.node-labels]
"custom-node-label" = "custom"
"karpenter.sh/nodepool" = "should-be-overridden"

[settings.kubernetes.node-taints]
"replace" = ["me:Schedule"]

[settings.network]
hostname = "test.local"
no-proxy = ["localhost", "127.0.0.1"]
hosts = [["10.0.0.0", ["test.example.com", "test1.example.com"]]]

[settings.ntp]
time-servers = ["169.254.169.123"]
"""


def bottlerocket(custom: str | None = None) -> str:
    opts = attrs.evolve(OPTS, taints=BR_TAINTS, custom_user_data=custom)
    return render_user_data("Bottlerocket", opts)


def test_bottlerocket_without_user_data_writes_karpenters_settings() -> None:
    assert bottlerocket() == (
        "[settings]\n"
        "[settings.kubernetes]\n"
        "api-server = 'https://test-cluster.example'\n"
        f"cluster-certificate = '{CA_BUNDLE}'\n"
        "cluster-name = 'test-cluster'\n"
        "cluster-dns-ip = '172.20.0.10'\n"
        "max-pods = 110\n"
        "\n[settings.kubernetes.node-labels]\n"
        "'karpenter.k8s.aws/ec2nodeclass' = 'default'\n"
        "'karpenter.sh/capacity-type' = 'on-demand'\n"
        "'karpenter.sh/do-not-sync-taints' = 'true'\n"
        "'karpenter.sh/nodepool' = 'default'\n"
        "'testing/cluster' = 'unspecified'\n"
        "\n[settings.kubernetes.node-taints]\n"
        "baz = ['bin:NoExecute']\n"
        "foo = ['bar:NoExecute']\n"
        "'karpenter.sh/unregistered' = [':NoExecute']\n"
    )


def test_bottlerocket_merges_the_users_toml_with_karpenters_settings_winning() -> None:
    settings = tomllib.loads(bottlerocket(BR_USER))["settings"]
    k8s = settings["kubernetes"]
    assert k8s["cluster-name"] == "test-cluster"
    assert k8s["api-server"] == "https://test-cluster.example"
    assert k8s["cluster-certificate"] == CA_BUNDLE
    assert k8s["max-pods"] == 110
    assert k8s["cloud-provider"] == "external"  # a setting Karpenter does not own stays
    assert k8s["eviction-hard"] == {"memory.available": "12%"}
    assert k8s["node-labels"] == {**LABELS, "custom-node-label": "custom"}
    assert k8s["node-taints"] == {
        "baz": ["bin:NoExecute"],
        "foo": ["bar:NoExecute"],
        "karpenter.sh/unregistered": [":NoExecute"],
    }
    assert "unknown-setting" not in k8s and "labels" not in k8s
    assert settings["network"] == {
        "hostname": "test.local",
        "hosts": [["10.0.0.0", ["test.example.com", "test1.example.com"]]],
        "no-proxy": ["localhost", "127.0.0.1"],
    }
    assert settings["ntp"] == {"time-servers": ["169.254.169.123"]}


def test_bottlerocket_maps_kubelet_settings() -> None:
    opts = attrs.evolve(
        OPTS,
        kubelet={**OPTS.kubelet, "kubeReserved": {"cpu": "80m"}, "imageGCLowThresholdPercent": 50},
    )
    k8s = tomllib.loads(render_user_data("Bottlerocket", opts))["settings"]["kubernetes"]
    assert k8s["kube-reserved"] == {"cpu": "80m"}
    assert k8s["image-gc-low-threshold-percent"] == "50"


def test_bottlerocket_refuses_invalid_toml() -> None:
    with pytest.raises(ValueError, match="Bottlerocket"):
        bottlerocket("[settings\n")


def test_custom_user_data_is_passed_verbatim() -> None:
    assert render_user_data("Custom", attrs.evolve(OPTS, custom_user_data="#!/bin/sh\n")) == (
        "#!/bin/sh\n"
    )
    assert render_user_data("Custom", OPTS) == ""


def test_windows_is_not_supported() -> None:
    with pytest.raises(ValueError, match="Windows2022"):
        render_user_data("Windows2022", OPTS)
