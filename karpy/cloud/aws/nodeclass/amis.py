"""AMIs an EC2NodeClass selects (``spec.amiSelectorTerms``) → ``status.amis``.

Selection runs in two steps, as Karpenter's does:

1. **Queries.** An alias becomes one query by image id, the ids coming from EKS's SSM
   parameters (`karpy.cloud.aws.nodeclass.aliases`), each id carrying the requirement
   sets it serves. Otherwise ``id`` and ``ssmParameter`` terms are gathered into one
   query by image id, and each other term becomes a query of its own: ``name`` (owners
   default to ``self`` and ``amazon``, so a public image of the same name in another
   account is not picked up by accident), ``owner``, tags. Deprecated images are
   included (they may still be the newest one that matches) but only available ones.
2. **Newest per requirement set.** Each image gets its requirements (its architecture,
   plus what the alias knew), and for every distinct requirement set one image wins: a
   non-deprecated one over a deprecated one, then the newer, then the greater name. So
   ``name: my-ami-*`` yields the newest amd64 and the newest arm64 image, not every
   build ever made, and a new build replaces the old one on the next refresh.

DescribeImages answers are kept for ``image_ttl`` (one minute by default, Karpenter's),
so a burst of reconciles costs one call per query while a refresh still sees new images.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

import attrs

from karpy.apis.core import NodeSelectorRequirement
from karpy.apis.ec2nodeclass_status import AMI
from karpy.apis.labels import LABEL_ARCH
from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.aws.nodeclass.aliases import resolve_alias
from karpy.cloud.aws.nodeclass.conditions import Unresolved
from karpy.cloud.aws.nodeclass.selectors import Filter, describe_all, show_terms, tag_filters
from karpy.cloud.aws.nodeclass.ssm import ParameterKind

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from karpy.apis.ec2nodeclass import EC2NodeClass
    from karpy.base.clock import Clock
    from karpy.cloud.aws.clients import AWSClients
    from karpy.cloud.aws.nodeclass.ssm import ParameterCache

__all__ = ["AMIError", "AMIResolver", "ImageQuery", "select_images", "term_queries"]

Requirements = tuple[NodeSelectorRequirement, ...]

ARCHITECTURES: Final = {"x86_64": "amd64", "arm64": "arm64"}
DEFAULT_NAME_OWNERS: Final = ("self", "amazon")
_EPOCH_MIN: Final = datetime.min.replace(tzinfo=UTC)
_EPOCH_MAX: Final = datetime.max.replace(tzinfo=UTC)


class AMIError(Unresolved):
    """No AMI could be selected (AMIsReady's reason and message); an unresolvable alias
    raises `AliasError`, also an `Unresolved`."""


@attrs.frozen(slots=True)
class ImageQuery:
    """One DescribeImages call, and what is known of the images it may return beyond
    their architecture (image id → requirement sets, from an alias)."""

    filters: tuple[tuple[str, tuple[str, ...]], ...]
    owners: tuple[str, ...] = ()
    known: Mapping[str, tuple[Requirements, ...]] = attrs.field(factory=dict, eq=False)

    def params(self) -> dict[str, Any]:
        filters: list[Filter] = [{"Name": n, "Values": list(v)} for n, v in self.filters]
        filters.append({"Name": "state", "Values": ["available"]})
        out: dict[str, Any] = {"Filters": filters, "IncludeDeprecated": True}
        if self.owners:
            out["Owners"] = list(self.owners)
        return out

    def requirement_sets(self, image_id: str, arch: str) -> list[Requirements]:
        arch_requirement = NodeSelectorRequirement(LABEL_ARCH, "In", (arch,))
        known = self.known.get(image_id)
        if not known:
            return [(arch_requirement,)]
        return [_sorted((*reqs, arch_requirement)) for reqs in known]


def _query(filters: Iterable[Filter], owners: Sequence[str] = ()) -> ImageQuery:
    return ImageQuery(
        filters=tuple((f["Name"], tuple(f["Values"])) for f in filters), owners=tuple(owners)
    )


def _sorted(requirements: Iterable[NodeSelectorRequirement]) -> Requirements:
    """Karpenter's order in status: shorter keys first, then by key."""
    return tuple(sorted(requirements, key=lambda r: (len(r.key), r.key)))


async def term_queries(nodeclass: EC2NodeClass, params: ParameterCache) -> list[ImageQuery]:
    """The queries of a node class without an alias."""
    ids: list[str] = []
    queries = []
    for term in nodeclass.spec.ami_selector_terms:
        if term.id:
            ids.append(term.id)
        elif term.ssm_parameter:
            image = await params.get(term.ssm_parameter, ParameterKind.CUSTOM)
            if image is not None and image.startswith("ami-"):
                ids.append(image)
        else:
            owners: tuple[str, ...] = (term.owner,) if term.owner else ()
            filters = []
            if term.name:
                owners = owners or DEFAULT_NAME_OWNERS
                filters.append({"Name": "name", "Values": [term.name]})
            queries.append(_query([*filters, *tag_filters(term.tags)], owners))
    if ids:
        queries.append(_query([{"Name": "image-id", "Values": ids}]))
    return queries


def _time(text: str | None, default: datetime) -> datetime:
    if not text:
        return default
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@attrs.frozen(slots=True)
class _Candidate:
    ami: AMI
    created: datetime


def _better(candidate: _Candidate, incumbent: _Candidate) -> bool:
    """Karpenter's order: not deprecated, then newer (to the second), then greater name."""
    new, old = candidate.ami, incumbent.ami
    if new.deprecated != old.deprecated:
        return not new.deprecated
    new_at, old_at = int(candidate.created.timestamp()), int(incumbent.created.timestamp())
    if new_at != old_at:
        return new_at > old_at
    return (new.name or "") > (old.name or "")


def select_images(
    answers: Iterable[tuple[ImageQuery, Sequence[Mapping[str, Any]]]], now: datetime
) -> tuple[AMI, ...]:
    """The newest image per requirement set, newest first (then by id)."""
    best: dict[frozenset[tuple[str, str, tuple[str, ...]]], _Candidate] = {}
    for query, images in answers:
        for image in images:
            arch = ARCHITECTURES.get(str(image.get("Architecture")))
            if arch is None:
                continue
            created = _time(image.get("CreationDate"), _EPOCH_MIN)
            deprecated = _time(image.get("DeprecationTime"), _EPOCH_MAX) <= now
            for requirements in query.requirement_sets(image["ImageId"], arch):
                key = frozenset((r.key, r.operator, tuple(sorted(r.values))) for r in requirements)
                candidate = _Candidate(
                    AMI(id=image["ImageId"], name=image.get("Name"), deprecated=deprecated,
                        requirements=requirements),
                    created,
                )  # fmt: skip
                incumbent = best.get(key)
                if incumbent is None or _better(candidate, incumbent):
                    best[key] = candidate
    ordered = sorted(best.values(), key=lambda c: (-int(c.created.timestamp()), c.ami.id))
    return tuple(c.ami for c in ordered)


class AMIResolver:
    """Resolves a node class's AMIs (see the module docstring); one per process, so the
    SSM and DescribeImages caches serve every node class."""

    def __init__(
        self,
        clients: AWSClients,
        params: ParameterCache,
        *,
        clock: Clock = SYSTEM_CLOCK,
        image_ttl: float = 60.0,
    ) -> None:
        self.clients = clients
        self.params = params
        self.clock = clock
        self.image_ttl = image_ttl
        self._images: dict[ImageQuery, tuple[float, list[dict[str, Any]]]] = {}
        self.describe_calls = 0

    async def resolve(self, nodeclass: EC2NodeClass, k8s_version: str) -> tuple[AMI, ...]:
        """The AMIs for ``status.amis``; `Unresolved` when there are none."""
        alias = next((t.alias for t in nodeclass.spec.ami_selector_terms if t.alias), None)
        if alias is not None:
            found = await resolve_alias(alias, k8s_version, self.params)
            queries = [
                attrs.evolve(
                    _query([{"Name": "image-id", "Values": sorted(found.requirements)}]),
                    known=found.requirements,
                )
            ]
        else:
            queries = await term_queries(nodeclass, self.params)
        answers = [(query, await self._describe(query)) for query in queries]
        amis = select_images(answers, self.clock.now())
        if not amis:
            shown = show_terms(nodeclass.spec.ami_selector_terms)
            raise AMIError("AMINotFound", f"AMISelector did not match any AMIs: {shown}")
        return amis

    async def _describe(self, query: ImageQuery) -> list[dict[str, Any]]:
        now = self.clock.monotonic()
        cached = self._images.get(query)
        if cached is not None and cached[0] > now:
            return cached[1]
        ec2 = await self.clients.ec2()
        self.describe_calls += 1
        images = await describe_all(ec2, "describe_images", "Images", **query.params())
        self._images = {k: v for k, v in self._images.items() if v[0] > now}
        self._images[query] = (now + self.image_ttl, images)
        return images
