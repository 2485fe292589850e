"""User data documents in the formats karpy's launch code writes (AL2023, Bottlerocket, AL2)."""

from __future__ import annotations

AL2023 = """MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "custom user data"
--//
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: test-cluster
    apiServerEndpoint: https://test-cluster
    certificateAuthority: Y2EK
    cidr: 10.100.0.0/16
  kubelet:
    config:
      maxPods: 29
      clusterDNS:
      - 10.100.0.10
      kubeReserved:
        cpu: 70m
        memory: 442Mi
        ephemeral-storage: 1Gi
      systemReserved:
        cpu: 100m
        memory: 100Mi
      evictionHard:
        memory.available: 100Mi
        nodefs.available: 10%
      registerWithTaints:
      - key: karpenter.sh/unregistered
        effect: NoExecute
    flags:
    - --node-labels="karpenter.sh/nodepool=default,karpenter.sh/capacity-type=on-demand,team=blue"
    - --register-with-taints="dedicated=gpu:NoSchedule"

--//--
"""

BOTTLEROCKET = """[settings]
[settings.kubernetes]
api-server = 'https://test-cluster'
cluster-name = 'test-cluster'
cluster-dns-ip = '10.100.0.10'
max-pods = 58

[settings.kubernetes.node-labels]
'karpenter.sh/nodepool' = 'default'
'karpenter.sh/capacity-type' = 'spot'

[settings.kubernetes.node-taints]
'karpenter.sh/unregistered' = [':NoExecute']
dedicated = ['gpu:NoSchedule']

[settings.kubernetes.kube-reserved]
cpu = '80m'
memory = '893Mi'

[settings.kubernetes.eviction-hard]
'memory.available' = '5%'
"""

AL2_KUBELET_FLAGS = (
    '--node-labels="karpenter.sh/nodepool=default,team=red" '
    '--register-with-taints="karpenter.sh/unregistered:NoExecute" --max-pods=17'
)
AL2 = f"""MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash -xe
/etc/eks/bootstrap.sh 'test-cluster' --apiserver-endpoint 'https://test-cluster' \\
--dns-cluster-ip '10.100.0.10' \\
--use-max-pods false \\
--kubelet-extra-args '{AL2_KUBELET_FLAGS}'
--//--
"""
