"""CustomResourceDefinitions: storing one registers its kind.

When a CRD is created or updated the emulator builds a `Kind` from it (names, scope,
served versions with the storage version first, ``subresources.status`` and
``subresources.scale``, ``additionalPrinterColumns``, ``selectableFields``) and compiles
each served version's ``openAPIV3Schema`` with `schema.compile_schema`; requests for the
custom resource then default, prune and validate through that schema. The CRD's status
is filled in as the apiextensions controllers would (``acceptedNames``,
``NamesAccepted`` and ``Established`` conditions, ``storedVersions``).

Deleting a CRD behaves as upstream: the ``customresourcecleanup`` finalizer holds it
while every custom resource of the kind is deleted, then the kind is unregistered.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
from typing import TYPE_CHECKING, Any

import orjson

from karpy.apis.fielderrors import FieldError
from karpy.sandbox.apiserver import errors
from karpy.sandbox.apiserver import schema as crd_schema
from karpy.sandbox.apiserver.jsonpath import JSONPathError, compile_path
from karpy.sandbox.apiserver.kinds import Kind, Obj, PrinterColumn, ScaleSpec, version_priority
from karpy.sandbox.apiserver.objects import Behavior, DeleteOptions, ObjectAPI

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.store import Change, Entry, Key

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
_CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")


def _get(obj: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def validate_crd(crd: Obj) -> list[FieldError]:
    found: list[FieldError] = []
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group") or ""
    if not group:
        found.append(FieldError.required("spec.group"))
    if not names.get("plural"):
        found.append(FieldError.required("spec.names.plural"))
    if not names.get("kind"):
        found.append(FieldError.required("spec.names.kind"))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        found.append(
            FieldError.not_supported("spec.scope", spec.get("scope"), ["Cluster", "Namespaced"])
        )
    name = _get(crd, "metadata", "name")
    if names.get("plural") and group and name != f"{names['plural']}.{group}":
        found.append(
            FieldError.invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group')
        )
    versions = spec.get("versions") or []
    if not versions:
        found.append(
            FieldError.required(
                "spec.versions", "must have exactly one version marked as storage version"
            )
        )
    elif sum(1 for v in versions if v.get("storage")) != 1:
        found.append(
            FieldError.invalid(
                "spec.versions", versions, "must have exactly one version marked as storage version"
            )
        )
    for i, version in enumerate(versions):
        openapi = _get(version, "schema", "openAPIV3Schema")
        if isinstance(openapi, dict):
            try:
                compiled(openapi)
            except crd_schema.InvalidSchema as exc:
                found.extend(exc.errors_at(f"spec.versions[{i}].schema."))
        for j, column in enumerate(version.get("additionalPrinterColumns") or []):
            try:
                compile_path(str(column.get("jsonPath", "")))
            except JSONPathError as exc:
                found.append(
                    FieldError.invalid(
                        f"spec.versions[{i}].additionalPrinterColumns[{j}].jsonPath",
                        column.get("jsonPath"),
                        str(exc),
                    )
                )
    return found


_COMPILED: dict[bytes, Any] = {}
_COMPILED_MAX = 64


def compiled(openapi: dict[str, Any]) -> Any:
    """`schema.compile_schema`, once per distinct schema: compiling CEL rules is slow and
    tests start a fresh server (loading the same CRDs) for every test."""
    key = hashlib.sha256(orjson.dumps(openapi, option=orjson.OPT_SORT_KEYS)).digest()
    found = _COMPILED.get(key)
    if found is None:
        found = crd_schema.compile_schema(copy.deepcopy(openapi))
        if len(_COMPILED) >= _COMPILED_MAX:
            _COMPILED.pop(next(iter(_COMPILED)))
        _COMPILED[key] = found
    return found


def kind_from_crd(crd: Obj) -> Kind:
    spec = crd["spec"]
    names = spec["names"]
    storage = next(v for v in spec["versions"] if v.get("storage"))
    others = [v for v in spec["versions"] if v.get("served", True) and v is not storage]
    others.sort(key=lambda v: version_priority(v["name"]), reverse=True)
    served = [storage, *others]
    status = bool(_get(storage, "subresources", "status") is not None)
    scale_spec = _get(storage, "subresources", "scale")
    scale = None
    if isinstance(scale_spec, dict):
        scale = ScaleSpec(
            compile_path(scale_spec.get("specReplicasPath", ".spec.replicas")),
            compile_path(scale_spec.get("statusReplicasPath", ".status.replicas")),
            compile_path(scale_spec["labelSelectorPath"])
            if scale_spec.get("labelSelectorPath")
            else None,
        )
    columns = [
        PrinterColumn(
            "Name",
            format="name",
            description="Name must be unique within a namespace.",
            json_path=compile_path(".metadata.name"),
        )
    ]
    printer = storage.get("additionalPrinterColumns")
    if printer is None:
        columns.append(
            PrinterColumn("Age", type="date", json_path=compile_path(".metadata.creationTimestamp"))
        )
    columns.extend(
        PrinterColumn(
            column["name"],
            type=column.get("type", "string"),
            format=column.get("format", ""),
            description=column.get("description", ""),
            priority=int(column.get("priority", 0)),
            json_path=compile_path(column["jsonPath"]),
        )
        for column in printer or []
    )
    schemas = {}
    for version in served:
        openapi = _get(version, "schema", "openAPIV3Schema")
        schemas[version["name"]] = compiled(
            openapi or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        )
    selectable = tuple(
        str(f.get("jsonPath", "")).lstrip(".") for f in storage.get("selectableFields") or []
    )
    return Kind(
        spec["group"],
        tuple(v["name"] for v in served),
        names["kind"],
        names["plural"],
        names.get("singular") or names["kind"].lower(),
        spec["scope"] == "Namespaced",
        tuple(names.get("shortNames") or ()),
        tuple(names.get("categories") or ()),
        status_subresource=status,
        scale=scale,
        patch_meta=None,
        columns=tuple(columns),
        status_on_create="drop" if status else "keep",
        returns_deleted_object=True,
        custom=True,
        schemas=schemas,
        selectable_fields=selectable,
    )


def established_status(crd: Obj, now: str) -> dict[str, Any]:
    names = dict(crd["spec"]["names"])
    names.setdefault("singular", names["kind"].lower())
    names.setdefault("listKind", names["kind"] + "List")
    storage = next(v["name"] for v in crd["spec"]["versions"] if v.get("storage"))
    stored = list((crd.get("status") or {}).get("storedVersions") or [])
    if storage not in stored:
        stored.append(storage)
    return {
        "acceptedNames": names,
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "lastTransitionTime": now,
                "reason": "NoConflicts",
                "message": "no conflicts found",
            },
            {
                "type": "Established",
                "status": "True",
                "lastTransitionTime": now,
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
            },
        ],
        "storedVersions": stored,
    }


class CRDBehavior(Behavior):
    def validate(self, api: ObjectAPI, kind: Kind, obj: Obj, old: Obj | None) -> list[FieldError]:
        found = validate_crd(obj)
        spec = obj.get("spec") or {}
        existing = api.registry.get(spec.get("group", ""), _get(spec, "names", "plural") or "")
        if not found and existing is not None and not existing.custom:
            found.append(
                FieldError.invalid(
                    "spec.names.plural",
                    _get(spec, "names", "plural"),
                    "is already served by a built-in resource",
                )
            )
        if old is not None and spec.get("scope") != (old.get("spec") or {}).get("scope"):
            found.append(FieldError.invalid("spec.scope", spec.get("scope"), "field is immutable"))
        return found

    def delete(
        self, api: ObjectAPI, kind: Kind, key: Key, prev: Entry, options: DeleteOptions
    ) -> Obj | None:
        obj = prev.obj
        if obj["metadata"].get("deletionTimestamp"):
            return obj
        new = copy.deepcopy(obj)
        finalizers = new["metadata"].setdefault("finalizers", [])
        if CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CLEANUP_FINALIZER)
        new["metadata"]["deletionTimestamp"] = api.now()
        new["metadata"]["deletionGracePeriodSeconds"] = 0
        return api.store.commit(kind, "MODIFIED", key, new, prev).obj


class CRDController:
    """Registers kinds for stored CRDs, writes their status, and cleans up on delete."""

    def __init__(self, api: ObjectAPI) -> None:
        self.api = api
        self._cleanups: dict[str, asyncio.Task[None]] = {}

    def on_change(self, kind: Kind, change: Change) -> None:
        if kind.key != _CRDS:
            return
        crd = change.entry.obj
        if change.type == "DELETED":
            self._unregister(crd)
            return
        if change.prev is None or change.prev.obj.get("spec") != crd.get("spec"):
            registered = kind_from_crd(crd)
            self.api.registry.add(registered)
            state = self.api.store.state(registered)
            state.kind = registered
            state.indexes = {f: state.indexes.get(f, {}) for f in registered.indexed_fields}
        if crd["metadata"].get("deletionTimestamp"):
            name = crd["metadata"]["name"]
            if name not in self._cleanups:
                try:
                    loop = asyncio.get_running_loop()
                except RuntimeError:
                    self.cleanup(crd["metadata"]["name"])
                    return
                self._cleanups[name] = loop.create_task(self._cleanup_loop(name))
            return
        status = established_status(crd, self.api.now())
        current = crd.get("status") or {}
        if (
            current.get("acceptedNames") != status["acceptedNames"]
            or current.get("storedVersions") != status["storedVersions"]
            or not current.get("conditions")
        ):
            view = self.api.registry.view(*_CRDS[:1], "v1", _CRDS[1])
            assert view is not None
            try:
                loop = asyncio.get_running_loop()
                loop.call_soon(self._write_status, view, change.key, status)
            except RuntimeError:
                self._write_status(view, change.key, status)

    def _write_status(self, view: Any, key: Key, status: dict[str, Any]) -> None:
        with contextlib.suppress(errors.APIError):
            self.api.write_status(view, key, status)

    def _unregister(self, crd: Obj) -> None:
        spec = crd.get("spec") or {}
        key = (spec.get("group", ""), _get(spec, "names", "plural") or "")
        self.api.registry.remove(key)
        self.api.store.drop_state(key)

    async def _cleanup_loop(self, name: str) -> None:
        try:
            # Polling, as the upstream controllers resync: a finalizer removed by anyone
            # (a test, karpy) lets the sweep finish on its next pass.
            while not self.cleanup(name):  # noqa: ASYNC110
                # Polling, as the upstream controllers resync: a finalizer removed by
                # anyone (a test, karpy) lets the sweep finish on its next pass.
                await asyncio.sleep(0.05)
        finally:
            self._cleanups.pop(name, None)

    def cleanup(self, name: str) -> bool:
        api = self.api
        crd_kind = api.registry.get(*_CRDS)
        assert crd_kind is not None
        prev = api.store.get_entry(crd_kind, "", name)
        if prev is None:
            return True
        spec = prev.obj["spec"]
        kind = api.registry.get(spec["group"], spec["names"]["plural"])
        remaining = 0
        if kind is not None:
            view = api.registry.view(kind.group, kind.storage_version, kind.plural)
            assert view is not None
            for entry in api.store.all_objects(kind):
                remaining += 1
                meta = entry.obj["metadata"]
                if not meta.get("deletionTimestamp"):
                    with contextlib.suppress(errors.APIError):
                        api.delete(view, meta.get("namespace"), meta["name"])
        if remaining:
            return False
        new = copy.deepcopy(prev.obj)
        new["metadata"]["finalizers"] = [
            f for f in new["metadata"].get("finalizers") or [] if f != CLEANUP_FINALIZER
        ]
        if new["metadata"]["finalizers"]:
            if new != prev.obj:
                api.store.commit(crd_kind, "MODIFIED", ("", name), new, prev)
            return False
        api.store.commit(crd_kind, "DELETED", ("", name), None, prev)
        return True

    def cancel_all(self) -> None:
        for task in self._cleanups.values():
            task.cancel()
        self._cleanups.clear()
