"""The registry of kinds the emulator serves, as data.

A `Kind` says everything generic handling needs: group, served versions, names,
scope, subresources, which field selectors work, the strategic-merge-patch list keys,
the printer columns, and a few lifecycle switches that differ between kinds upstream
(whether status survives a create, whether DELETE returns the object, whether PUT may
create). Built-in kinds are listed in `builtin.py`; a CustomResourceDefinition becomes
a `Kind` when it is stored (`crds.py`). Behaviour that upstream implements as code for a
single kind (pod binding, eviction, namespace lifecycle) lives in its own module and is
keyed by `Kind.key`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
import orjson

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.jsonpath import JSONPath

Obj = dict[str, Any]
FieldGetter = Callable[[Obj], "str | None"]
Converter = Callable[[Obj, str], Obj]

VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@attrs.frozen(slots=True)
class PrinterColumn:
    name: str
    type: str = "string"
    format: str = ""
    description: str = ""
    priority: int = 0
    json_path: JSONPath | None = None
    value: Callable[[Obj], Any] | None = attrs.field(default=None, eq=False)

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


@attrs.frozen(slots=True)
class ScaleSpec:
    spec_replicas: JSONPath
    status_replicas: JSONPath
    label_selector: JSONPath | None = None


@attrs.frozen(slots=True)
class Kind:
    group: str
    versions: tuple[str, ...]  # served; the first is the storage version
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status_subresource: bool = False
    scale: ScaleSpec | None = None
    extra_subresources: tuple[str, ...] = ()
    field_labels: Mapping[str, FieldGetter] = attrs.field(factory=dict, eq=False)
    # Strategic-merge list strategies by dotted field path (list indexes skipped):
    # path -> merge key ("" for a primitive list merged as a set). None: SMP unsupported.
    patch_meta: Mapping[str, str] | None = attrs.field(factory=dict, eq=False)
    columns: tuple[PrinterColumn, ...] = attrs.field(default=(), eq=False)
    status_on_create: str = "reset"  # "reset" → {}, "drop", "keep"
    returns_deleted_object: bool = False
    create_on_update: bool = False
    name_rule: str = "subdomain"  # "subdomain", "label", "path"
    custom: bool = False
    schemas: Mapping[str, Any] = attrs.field(factory=dict, eq=False)
    storage: tuple[str, str] | None = None  # another resource whose storage this shares
    to_storage: Converter | None = attrs.field(default=None, eq=False)
    from_storage: Converter | None = attrs.field(default=None, eq=False)
    selectable_fields: tuple[str, ...] = ()
    # Field labels with an index (exact-match selectors list only the matching keys),
    # as the watch cache indexes pods by spec.nodeName.
    indexed_fields: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return (self.group, self.plural)

    @property
    def storage_key(self) -> tuple[str, str]:
        return self.storage or self.key

    @property
    def storage_version(self) -> str:
        return self.versions[0]

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    def api_version(self, version: str | None = None) -> str:
        version = version or self.storage_version
        return f"{self.group}/{version}" if self.group else version

    @property
    def qualified(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def subresources(self) -> tuple[str, ...]:
        subs: tuple[str, ...] = ()
        if self.status_subresource:
            subs += ("status",)
        if self.scale is not None:
            subs += ("scale",)
        return subs + self.extra_subresources


@attrs.frozen(slots=True)
class View:
    """A kind as seen through one served version: converts to and from storage."""

    kind: Kind
    version: str

    @property
    def identity(self) -> bool:
        return self.kind.storage is None and self.version == self.kind.storage_version

    @property
    def api_version(self) -> str:
        return self.kind.api_version(self.version)

    def external(self, stored: Obj) -> Obj:
        if self.identity:
            return stored
        if self.kind.from_storage is not None:
            return self.kind.from_storage(stored, self.api_version)
        return {**stored, "apiVersion": self.api_version}

    def internal(self, obj: Obj) -> Obj:
        if self.kind.to_storage is not None:
            return self.kind.to_storage(obj, self.api_version)
        if self.version != self.kind.storage_version:
            return {**obj, "apiVersion": self.kind.api_version()}
        return obj

    def encode(self, stored: Obj, raw: bytes | None = None) -> bytes:
        if self.identity and raw is not None:
            return raw
        return orjson.dumps(self.external(stored))


_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kube-aware version order: v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > anything else."""
    m = _VERSION_RE.match(version)
    if not m:
        return (0, 0, 0, version)
    major = int(m.group(1))
    stability = {None: 3, "beta": 2, "alpha": 1}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stability, major, minor, "")


class Registry:
    """The kinds served right now, by (group, plural); CRDs add and remove entries."""

    def __init__(self, kinds: list[Kind]) -> None:
        self._kinds: dict[tuple[str, str], Kind] = {}
        self._builtin_groups: list[str] = []
        self.generation = 0  # bumped on every change, for discovery caches
        for kind in kinds:
            self.add(kind)
            if kind.group not in self._builtin_groups:
                self._builtin_groups.append(kind.group)

    def add(self, kind: Kind) -> None:
        self._kinds[kind.key] = kind
        self.generation += 1

    def remove(self, key: tuple[str, str]) -> None:
        self._kinds.pop(key, None)
        self.generation += 1

    def get(self, group: str, plural: str) -> Kind | None:
        return self._kinds.get((group, plural))

    def view(self, group: str, version: str, plural: str) -> View | None:
        kind = self._kinds.get((group, plural))
        if kind is None or version not in kind.versions:
            return None
        return View(kind, version)

    def all(self) -> list[Kind]:
        return list(self._kinds.values())

    def resolve(self, ref: str) -> View:
        """For in-process callers: ``pods``, ``Pod``, ``nodepools.karpenter.sh``,
        ``karpenter.sh/v1/nodepools``, ``v1/pods``, ``apps/v1/Deployment``."""
        parts = ref.split("/")
        version: str | None = None
        group: str | None = None
        name = parts[-1]
        if len(parts) == 3:
            group, version = parts[0], parts[1]
        elif len(parts) == 2:
            group, version = "", parts[0]
        candidates = []
        for kind in self._kinds.values():
            if group is not None and kind.group != group:
                continue
            names = {kind.plural, kind.kind, kind.singular, kind.kind.lower(), kind.qualified}
            if name in names or f"{name}" == f"{kind.plural}.{kind.group}":
                candidates.append(kind)
        if not candidates:
            raise KeyError(f"no resource matches {ref!r}")
        # Prefer the core group, then built-ins, for bare names such as "events".
        candidates.sort(key=lambda k: (k.group != "", k.custom))
        kind = candidates[0]
        if version is not None and version not in kind.versions:
            raise KeyError(f"{ref!r}: version {version} is not served")
        return View(kind, version or kind.storage_version)

    def groups(self) -> list[tuple[str, list[str]]]:
        """Every (group, served versions, preferred first) in discovery order."""
        by_group: dict[str, set[str]] = {}
        for kind in self._kinds.values():
            by_group.setdefault(kind.group, set()).update(kind.versions)
        order = [g for g in self._builtin_groups if g in by_group]
        order += sorted(g for g in by_group if g not in self._builtin_groups)
        return [(g, sorted(by_group[g], key=version_priority, reverse=True)) for g in order]

    def kinds_in(self, group: str, version: str) -> list[Kind]:
        return [k for k in self._kinds.values() if k.group == group and version in k.versions]
