"""`Expiration` against the API server emulator, on the fake clock: a NodeClaim is
deleted once it is older than its ``expireAfter``, and not before."""

from __future__ import annotations

import pytest

from karpy.disruption.expiration import Expiration
from karpy.reconcile import DONE
from karpy.state.keys import NodeClaimName
from tests import factories as f
from tests.fixtures.apiserver import create_with_status
from tests.fixtures.lifecycle import lifecycle

NODECLAIMS = "nodeclaims.karpenter.sh"
EXPIRED = {"reason": "expired", "nodepool": "default", "capacity_type": "",
           "consolidation_policy": "", "termination_mode": ""}  # fmt: skip


async def test_a_nodeclaim_is_deleted_once_older_than_its_expire_after(apiserver):
    async with lifecycle(apiserver) as (world, _, clock):
        expiration = Expiration(world.state, world.client, clock=clock,
                                metrics=world.metrics.karpenter)  # fmt: skip
        apiserver.store.create(NODECLAIMS, f.nodeclaim("default-old", nodepool="default",
                                                       expire_after="1h"))  # fmt: skip
        await world.settled()

        left = (await expiration.reconcile(NodeClaimName("default-old"))).requeue_after
        # Created by the emulator's wall clock, which the fake clock started a little before.
        assert left is not None and left == pytest.approx(3600, abs=5)
        assert apiserver.store.try_get(NODECLAIMS, "default-old") is not None

        await clock.advance(left - 1)
        assert (
            await expiration.reconcile(NodeClaimName("default-old"))
        ).requeue_after == pytest.approx(1)
        await clock.advance(1)
        assert await expiration.reconcile(NodeClaimName("default-old")) == DONE
        assert apiserver.store.try_get(NODECLAIMS, "default-old") is None
        sample = world.metrics.registry.get_sample_value(
            "karpenter_nodeclaims_disrupted_total", EXPIRED)  # fmt: skip
        assert sample == 1


async def test_a_nodeclaim_that_never_expires_is_left_alone(apiserver):
    async with lifecycle(apiserver) as (world, _, clock):
        expiration = Expiration(world.state, world.client, clock=clock)
        apiserver.store.create(NODECLAIMS, f.nodeclaim("default-kept", nodepool="default",
                                                       expire_after="Never"))  # fmt: skip
        await world.settled()
        await clock.advance(10 * 365 * 86400)
        assert await expiration.reconcile(NodeClaimName("default-kept")) == DONE
        assert apiserver.store.try_get(NODECLAIMS, "default-kept") is not None


async def test_an_expired_node_counts_the_pods_its_disruption_initiates(apiserver):
    """``karpenter_pods_disruption_initiated_total``: the node's reschedulable pods,
    DaemonSet and finished pods aside."""
    async with lifecycle(apiserver) as (world, _, clock):
        expiration = Expiration(world.state, world.client, clock=clock,
                                metrics=world.metrics.karpenter)  # fmt: skip
        old = f.nodeclaim("default-old", nodepool="default", expire_after="1h", node_name="n-old")
        create_with_status(apiserver, NODECLAIMS, old)
        daemon = f.owner_reference("DaemonSet", "agent")
        for pod in (f.pod("web-1", node_name="n-old", phase="Running"),
                    f.pod("web-2", node_name="n-old", phase="Running"),
                    f.pod("agent-x", node_name="n-old", phase="Running", owner_references=[daemon]),
                    f.pod("job-done", node_name="n-old", phase="Succeeded"),
                    f.pod("elsewhere", node_name="n-other", phase="Running")):  # fmt: skip
            create_with_status(apiserver, "pods", pod)
        await world.settled()
        await clock.advance(3600 + 10)
        assert await expiration.reconcile(NodeClaimName("default-old")) == DONE
        pods = world.metrics.registry.get_sample_value(
            "karpenter_pods_disruption_initiated_total", EXPIRED)  # fmt: skip
        assert pods == 2
