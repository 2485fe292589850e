"""`NodeClassKind`: what a cloud provider's NodeClass kind is to karpy's core.

A NodePool's ``nodeClassRef`` names a NodeClass of whatever kind the cloud provider serves
(``EC2NodeClass`` on AWS; Karpenter's KWOK provider serves ``KWOKNodeClass``). The core
never knows those kinds by name: the provider declares each one as a `NodeClassKind`,
Karpenter's ``CloudProvider.GetSupportedNodeClasses()``, and the core reads it through
that declaration alone:

* ``definition``, the kind's `CustomResource` (group, version, plural, scope), says what
  the informers watch;
* ``project`` reads an object of the kind into the record cluster state keeps;
* ``ready`` answers the record's ``Ready`` condition (None until its controller has
  reconciled it), which NodePool readiness reports, as Karpenter reads a NodeClass's
  status conditions without knowing its type.

The declaration lives here, below the providers, so that two providers may serve the
same kind (the fake cloud serves ``EC2NodeClass`` so the same manifests run everywhere)
without importing each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import attrs

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from karpy.apis.conditions import Condition
    from karpy.apis.core import NodeClassReference, ObjectMeta
    from karpy.apis.crd import CustomResource

__all__ = ["NodeClassKind", "NodeClassObject"]


class NodeClassObject(Protocol):
    """What the core reads of any NodeClass record: its metadata (name, deletion)."""

    @property
    def metadata(self) -> ObjectMeta: ...


R = TypeVar("R", bound=NodeClassObject)


@attrs.frozen(slots=True)
class NodeClassKind(Generic[R]):
    """One NodeClass kind a provider serves (see the module docstring)."""

    definition: CustomResource
    project: Callable[[Mapping[str, Any]], R]
    ready: Callable[[R], Condition | None]

    @property
    def group(self) -> str:
        return self.definition.group

    @property
    def kind(self) -> str:
        """The kind's name, which is also the name cluster state files its objects under."""
        return self.definition.kind

    def serves(self, ref: NodeClassReference) -> bool:
        """Does ``ref`` (a NodePool's or NodeClaim's ``nodeClassRef``) name this kind?"""
        return (ref.group, ref.kind) == (self.group, self.kind)
