"""A `CloudProvider` test double for termination: instances by provider ID that the test
creates and finishes terminating by hand, and a record of every ``delete`` and ``get``.

Until the fake provider (``karpy/cloud/fake``) lands, this is the smallest thing that
keeps the protocol: ``delete`` begins terminating a running instance and raises
`NodeClaimNotFound` once it is gone; ``get`` raises it for a gone or terminating one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from karpy.apis.nodeclaim import NodeClaim
from karpy.apis.nodeclass import NodeClassKind
from karpy.apis.nodepool import NodePool
from karpy.base.component import Component
from karpy.cloud.errors import NodeClaimNotFound
from karpy.cloud.provider import Instance, RepairPolicy
from karpy.scheduling.instancetypes import InstanceType


class StubCloud:
    name = "test"
    well_known_labels: frozenset[str] = frozenset()
    restricted_label_domains: frozenset[str] = frozenset()
    node_classes: Sequence[NodeClassKind[Any]] = ()

    def __init__(self, *, gone_after_deletes: int | None = None) -> None:
        """``gone_after_deletes``: the instance disappears by itself once ``delete`` has
        been called that many times for it (None: only when the test says `finish`)."""
        self.instances: dict[str, Instance] = {}
        self.gone_after_deletes = gone_after_deletes
        self.deletes: list[str] = []
        self.gets: list[str] = []

    def launch(self, provider_id: str) -> None:
        self.instances[provider_id] = Instance(provider_id=provider_id)

    def finish(self, provider_id: str) -> None:
        """The instance has terminated: it is gone."""
        self.instances.pop(provider_id, None)

    def terminating(self, provider_id: str) -> bool:
        instance = self.instances.get(provider_id)
        return instance is not None and instance.terminating

    async def delete(self, nodeclaim: NodeClaim) -> None:
        pid = nodeclaim.status.provider_id
        self.deletes.append(pid)
        instance = self.instances.get(pid)
        if instance is None:
            raise NodeClaimNotFound(f"no instance {pid}")
        self.instances[pid] = attrs.evolve(instance, terminating=True)
        if self.gone_after_deletes is not None and self.deletes.count(pid) >= (
            self.gone_after_deletes
        ):
            self.finish(pid)

    async def get(self, provider_id: str) -> Instance:
        self.gets.append(provider_id)
        instance = self.instances.get(provider_id)
        if instance is None or instance.terminating:
            raise NodeClaimNotFound(f"no instance {provider_id}")
        return instance

    async def list(self) -> Sequence[Instance]:
        return list(self.instances.values())

    async def get_instance_types(self, nodepool: NodePool) -> Sequence[InstanceType]:
        return ()

    async def create(self, nodeclaim: NodeClaim) -> Instance:
        raise NotImplementedError("termination tests launch nothing")

    async def reboot(self, nodeclaim: NodeClaim) -> None:
        raise NotImplementedError("termination tests reboot nothing")

    async def is_drifted(self, nodeclaim: NodeClaim) -> str:
        return ""

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return ()

    def controllers(self, recorder: object = None) -> Sequence[Component]:
        return ()
