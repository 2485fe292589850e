"""Which instances NodeClaims claim, and the verdict garbage collection draws from it.

Garbage collection terminates instances, so the one question it must never get wrong is
"does any NodeClaim name this instance?". Two answers to it are kept apart here:

* `ClaimedInstances.of_snapshot`, from karpy's in-memory state: cheap, asked every pass,
  but it may miss NodeClaims (one the strict reader rejected, a standby that took the lease
  with a silently dead watch). It only ever *suggests* suspects.
* `list_claimed`, from a fresh LIST of the API server, read tolerantly: only
  ``metadata.name`` and ``status.providerID`` of each raw item are looked at, so a
  NodeClaim whose other fields karpy cannot parse still protects its instance. It is the
  answer GC acts on; if the LIST fails, or any item lacks a readable name, the LIST
  raises and GC terminates nothing that pass.

An instance is claimed by its NodeClaim tag (the name of the NodeClaim it was launched
for) and by provider ID; provider IDs are also compared by their last segment (the EC2
instance ID, the fake Node's name), so a NodeClaim that records its instance in another
spelling still protects it. `verdict` says what an instance is to the NodeClaims:
``None`` (claimed, leave it), ``"orphan"`` (no NodeClaim names it either way) or
``"duplicate"`` (its NodeClaim exists and records a different instance: a second
instance from a launch retried after its response was lost).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

import attrs

from karpy.kube.resources import NODECLAIMS

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.cloud.provider import Instance
    from karpy.kube.client import KubeClient
    from karpy.state.snapshot import StateSnapshot

__all__ = ["DUPLICATE", "ORPHAN", "ClaimedInstances", "UnreadableList", "Verdict", "list_claimed"]

ORPHAN: Final = "orphan"
DUPLICATE: Final = "duplicate"
Verdict = Literal["orphan", "duplicate"]


class UnreadableList(Exception):
    """A NodeClaim LIST item without a readable name: nothing can be concluded from it."""


def instance_key(provider_id: str) -> str:
    """The last segment of a provider ID (``i-0abc...`` of ``aws:///us-west-2a/i-0abc...``)."""
    return provider_id.rstrip("/").rpartition("/")[2]


@attrs.frozen(slots=True)
class ClaimedInstances:
    """NodeClaim names and the provider ID each records (``""`` when none yet)."""

    provider_id_by_name: Mapping[str, str]
    provider_ids: frozenset[str] = attrs.field(init=False)
    instance_keys: frozenset[str] = attrs.field(init=False)

    @provider_ids.default
    def _provider_ids(self) -> frozenset[str]:
        return frozenset(p for p in self.provider_id_by_name.values() if p)

    @instance_keys.default
    def _instance_keys(self) -> frozenset[str]:
        return frozenset(k for k in map(instance_key, self.provider_ids) if k)

    @classmethod
    def of_snapshot(cls, snapshot: StateSnapshot) -> ClaimedInstances:
        return cls({name: claim.status.provider_id
                    for name, claim in snapshot.nodeclaims.items()})  # fmt: skip

    @classmethod
    def of_raw_items(cls, items: Iterable[Any]) -> ClaimedInstances:
        """From LIST items, reading nothing but ``metadata.name`` and ``status.providerID``.
        `UnreadableList` when an item has no name (GC must not act on such a list)."""
        by_name: dict[str, str] = {}
        for item in items:
            metadata = item.get("metadata") if isinstance(item, Mapping) else None
            name = metadata.get("name") if isinstance(metadata, Mapping) else None
            if not isinstance(name, str) or not name:
                raise UnreadableList(f"a NodeClaim without a readable name: {item!r:.200}")
            status = item.get("status")
            recorded = status.get("providerID") if isinstance(status, Mapping) else None
            by_name[name] = recorded if isinstance(recorded, str) else ""
        return cls(by_name)

    def claims_provider_id(self, provider_id: str) -> bool:
        return provider_id in self.provider_ids or instance_key(provider_id) in self.instance_keys

    def verdict(self, instance: Instance) -> Verdict | None:
        """See the module docstring."""
        if self.claims_provider_id(instance.provider_id):
            return None
        if not instance.nodeclaim or instance.nodeclaim not in self.provider_id_by_name:
            return ORPHAN
        recorded = self.provider_id_by_name[instance.nodeclaim]
        return DUPLICATE if recorded else None  # its NodeClaim has not recorded one yet


async def list_claimed(client: KubeClient) -> ClaimedInstances:
    """A fresh LIST of NodeClaims, read tolerantly (`ClaimedInstances.of_raw_items`).
    Raises whatever the LIST raises, or `UnreadableList`."""
    items, _ = await client.list(NODECLAIMS)
    return ClaimedInstances.of_raw_items(items)
