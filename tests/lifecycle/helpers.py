"""What the lifecycle tests share: a controller world on the emulator with the fake cloud
and a fake clock, handed out as the `Lifecycle` context the controllers take."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from karpy.cloud.fake import FakeCloudProvider
from karpy.cloud.fake.catalog import embedded_catalog
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.lifecycle.context import Lifecycle
from tests.fixtures.cluster import EXAMPLE_NODECLASS, World, controller_world
from tests.kube.fakeclock import FakeClock

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


@contextlib.asynccontextmanager
async def lifecycle(apiserver: Any) -> AsyncIterator[tuple[World, Lifecycle, FakeClock]]:
    clock = FakeClock(start=datetime.now(UTC))
    async with controller_world(apiserver) as world:
        apiserver.store.create("ec2nodeclasses.karpenter.k8s.aws", EXAMPLE_NODECLASS)
        unavailable = UnavailableOfferings(clock=clock)
        provider = FakeCloudProvider(embedded_catalog(), client=world.client, state=world.state,
                                     unavailable=unavailable, clock=clock)  # fmt: skip
        ctx = Lifecycle(world.state, world.client, provider, world.recorder, unavailable,
                        clock, world.metrics.karpenter)  # fmt: skip
        await world.settled()
        yield world, ctx, clock
