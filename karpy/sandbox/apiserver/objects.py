"""Object semantics: create, update, patch, delete, as kube-apiserver's generic registry
store applies them, shared by the HTTP layer and in-process callers.

The order of checks follows upstream: decode (apiVersion/kind, namespace), admission
(NamespaceLifecycle), the kind's strategy (system metadata, status reset or split,
generation), custom-resource schema (default, prune, validate), validation (422), then
storage (409 AlreadyExists, 409 Conflict on a stale resourceVersion). Per-kind code that
upstream has as strategies or subresource handlers plugs in as a `Behavior`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from karpy.apis.fielderrors import FieldError
from karpy.sandbox.apiserver import errors, metadata, patching
from karpy.sandbox.apiserver.kinds import Kind, Obj, View

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.store import Entry, Key, Store


@attrs.frozen(slots=True)
class DeleteOptions:
    grace_period_seconds: int | None = None
    uid: str | None = None
    resource_version: str | None = None
    propagation_policy: str | None = None
    dry_run: bool = False

    @classmethod
    def from_body(cls, body: dict[str, Any] | None, **query: Any) -> DeleteOptions:
        body = body or {}
        pre = body.get("preconditions") or {}
        grace = query.get("grace_period_seconds")
        if grace is None:
            grace = body.get("gracePeriodSeconds")
        dry = bool(query.get("dry_run")) or bool(body.get("dryRun"))
        return cls(
            grace_period_seconds=None if grace is None else int(grace),
            uid=pre.get("uid"),
            resource_version=pre.get("resourceVersion"),
            propagation_policy=query.get("propagation_policy") or body.get("propagationPolicy"),
            dry_run=dry,
        )


class Behavior:
    """Per-kind hooks; the defaults do nothing."""

    def prepare_create(self, api: ObjectAPI, kind: Kind, obj: Obj) -> None:
        return None

    def prepare_update(
        self, api: ObjectAPI, kind: Kind, new: Obj, old: Obj, subresource: str | None
    ) -> None:
        return None

    def validate(self, api: ObjectAPI, kind: Kind, obj: Obj, old: Obj | None) -> list[FieldError]:
        return []

    def grace_period(self, api: ObjectAPI, kind: Kind, obj: Obj, options: DeleteOptions) -> int:
        return 0

    def delete(
        self, api: ObjectAPI, kind: Kind, key: Key, prev: Entry, options: DeleteOptions
    ) -> Obj | None:
        """Take over a deletion (namespaces, CRDs); None lets the generic path run."""
        return None


NamespaceCheck = Callable[[str, Kind, str], None]


class ObjectAPI:
    def __init__(self, store: Store, clock: Callable[[], float]) -> None:
        self.store = store
        self.registry = store.registry
        self.clock = clock
        self.behaviors: dict[tuple[str, str], Behavior] = {}
        self.namespace_check: NamespaceCheck | None = None

    def behavior(self, kind: Kind) -> Behavior:
        return self.behaviors.get(kind.storage_key) or self.behaviors.get(kind.key) or _NO_BEHAVIOR

    def now(self) -> str:
        return metadata.timestamp(self.clock())

    # ------------------------------------------------------------------ reads

    def get(self, view: View, namespace: str | None, name: str) -> Obj:
        kind = view.kind
        entry = self.store.get_entry(kind, namespace or "", name)
        if entry is None:
            raise errors.not_found(kind.group, kind.plural, name)
        return view.external(entry.obj)

    def entry(self, view: View, namespace: str | None, name: str) -> Entry:
        entry = self.store.get_entry(view.kind, namespace or "", name)
        if entry is None:
            raise errors.not_found(view.kind.group, view.kind.plural, name)
        return entry

    # ------------------------------------------------------------------ decoding

    def _decode(self, view: View, body: Any) -> Obj:
        if not isinstance(body, dict):
            raise errors.bad_request(
                "the body of the request was not a JSON object: cannot unmarshal into an object"
            )
        obj = copy.deepcopy(body)
        api_version = obj.get("apiVersion")
        if api_version and api_version != view.api_version:
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected "
                f"API version ({view.api_version})"
            )
        kind_name = obj.get("kind")
        if kind_name and kind_name != view.kind.kind:
            raise errors.bad_request(
                f"the kind in the data ({kind_name}) does not match the expected kind "
                f"({view.kind.kind})"
            )
        obj["apiVersion"] = view.api_version
        obj["kind"] = view.kind.kind
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        meta.pop("managedFields", None)
        meta.pop("selfLink", None)
        return obj

    def _namespace_of(self, kind: Kind, namespace: str | None, meta: dict[str, Any]) -> str:
        if not kind.namespaced:
            meta.pop("namespace", None)
            return ""
        given = meta.get("namespace")
        if given and namespace and given != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request"
            )
        ns = namespace or given or ""
        if not ns:
            raise errors.bad_request("the namespace of the object is required")
        meta["namespace"] = ns
        return ns

    # ------------------------------------------------------------------ create

    def create(
        self,
        view: View,
        namespace: str | None,
        body: Any,
        *,
        dry_run: bool = False,
        field_validation: str = "",
        warnings: list[str] | None = None,
    ) -> Obj:
        kind = view.kind
        obj = self._decode(view, body)
        meta = obj["metadata"]
        ns = self._namespace_of(kind, namespace, meta)
        if kind.namespaced and self.namespace_check is not None:
            self.namespace_check(ns, kind, str(meta.get("name") or meta.get("generateName") or ""))
        if meta.get("resourceVersion"):
            raise errors.internal("resourceVersion should not be set on objects to be created")
        generated = not meta.get("name") and bool(meta.get("generateName"))
        if not meta.get("name") and not generated:
            raise errors.invalid(
                kind.kind,
                kind.group,
                "",
                [FieldError.required("metadata.name", "name or generateName is required")],
            )
        if generated:
            meta["name"] = self._unique_name(kind, ns, str(meta["generateName"]))
        meta["uid"] = metadata.new_uid()
        meta["creationTimestamp"] = self.now()
        meta["generation"] = 1
        for system in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
            meta.pop(system, None)
        if kind.status_on_create == "reset":
            obj["status"] = {}
        elif kind.status_on_create == "drop":
            obj.pop("status", None)
        behavior = self.behavior(kind)
        behavior.prepare_create(self, kind, obj)
        found = self._custom_schema(view, obj, None, field_validation, warnings)
        found += metadata.validate_meta(kind, obj, None)
        found += behavior.validate(self, kind, obj, None)
        if found:
            raise errors.invalid(kind.kind, kind.group, meta["name"], found)
        key = (ns, meta["name"])
        if self.store.get_entry(kind, *key) is not None:
            raise errors.already_exists(kind.group, kind.plural, meta["name"])
        if dry_run:
            return obj
        entry = self.store.commit(kind, "ADDED", key, view.internal(obj), None)
        return view.external(entry.obj)

    def _unique_name(self, kind: Kind, ns: str, prefix: str) -> str:
        for _ in range(8):
            name = metadata.generate_name(prefix)
            if self.store.get_entry(kind, ns, name) is None:
                return name
        raise errors.APIError(
            409,
            "AlreadyExists",
            f'{errors.qualified(kind.group, kind.plural)} "{prefix}" already exists, the server '
            "was not able to generate a unique name for the object",
        )

    # ------------------------------------------------------------------ custom resources

    def _custom_schema(
        self,
        view: View,
        obj: Obj,
        old: Obj | None,
        field_validation: str,
        warnings: list[str] | None,
    ) -> list[FieldError]:
        schema = view.kind.schemas.get(view.version)
        if schema is None:
            return []
        # kube-apiserver prunes what the decoder read, then applies defaults.
        before = _leaf_paths(obj)
        schema.prune(obj)
        dropped = before - _leaf_paths(obj)
        schema.apply_defaults(obj)
        unknown = sorted(p for p in dropped if not any(p.startswith(q + ".") for q in dropped))
        if unknown and field_validation == "Strict":
            raise errors.bad_request(
                "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in unknown)
            )
        if unknown and warnings is not None and field_validation != "Ignore":
            warnings.extend(f'unknown field "{p}"' for p in unknown)
        return list(schema.validate(obj, old))

    # ------------------------------------------------------------------ update

    def update(
        self,
        view: View,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        field_validation: str = "",
        warnings: list[str] | None = None,
    ) -> Obj:
        kind = view.kind
        obj = self._decode(view, body)
        meta = obj["metadata"]
        if meta.get("name") != name:
            raise errors.bad_request(
                f"the name of the object ({meta.get('name', '')}) does not match the name on "
                f"the URL ({name})"
            )
        ns = self._namespace_of(kind, namespace, meta)
        prev = self.store.get_entry(kind, ns, name)
        if prev is None:
            if kind.create_on_update and subresource is None:
                meta.pop("resourceVersion", None)
                return self.create(
                    view,
                    ns,
                    obj,
                    dry_run=dry_run,
                    field_validation=field_validation,
                    warnings=warnings,
                )
            raise errors.not_found(kind.group, kind.plural, name)
        given = meta.get("resourceVersion")
        if not given and kind.custom:
            raise errors.invalid(
                kind.kind,
                kind.group,
                name,
                [
                    FieldError.invalid(
                        "metadata.resourceVersion", 0, "must be specified for an update"
                    )
                ],
            )
        if given and given != prev.obj["metadata"]["resourceVersion"]:
            raise errors.stale(kind.group, kind.plural, name)
        return self.apply_update(
            view,
            (ns, name),
            obj,
            prev,
            subresource=subresource,
            dry_run=dry_run,
            field_validation=field_validation,
            warnings=warnings,
        )

    def apply_update(
        self,
        view: View,
        key: Key,
        new: Obj,
        prev: Entry,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        field_validation: str = "",
        warnings: list[str] | None = None,
    ) -> Obj:
        """The shared tail of PUT, PATCH and in-process writes; `new` is external and
        owned by the caller."""
        kind = view.kind
        old = view.external(prev.obj)
        if subresource == "status":
            status = new.get("status")
            new = copy.deepcopy(old)
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
        elif kind.status_subresource:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        meta = new.setdefault("metadata", {})
        old_meta = old["metadata"]
        meta["name"] = old_meta["name"]
        if kind.namespaced:
            meta["namespace"] = old_meta["namespace"]
        meta["creationTimestamp"] = old_meta.get("creationTimestamp")
        meta.setdefault("uid", old_meta.get("uid"))
        meta.pop("managedFields", None)
        for system in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            if system in old_meta:
                meta[system] = old_meta[system]
            else:
                meta.pop(system, None)
        meta["generation"] = old_meta.get("generation", 1)
        behavior = self.behavior(kind)
        behavior.prepare_update(self, kind, new, old, subresource)
        found = self._custom_schema(view, new, old, field_validation, warnings)
        found += metadata.validate_meta(kind, new, old)
        found += behavior.validate(self, kind, new, old)
        if found:
            raise errors.invalid(kind.kind, kind.group, key[1], found)
        if metadata.spec_part(kind, new) != metadata.spec_part(kind, old):
            meta["generation"] = int(old_meta.get("generation", 1)) + 1
        meta["resourceVersion"] = old_meta["resourceVersion"]
        if metadata.same_object(new, old):
            return old
        if dry_run:
            return new
        if (
            old_meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not old_meta.get("deletionGracePeriodSeconds")
        ):
            self.store.commit(kind, "DELETED", key, None, prev)
            return new
        entry = self.store.commit(kind, "MODIFIED", key, view.internal(new), prev)
        return view.external(entry.obj)

    # ------------------------------------------------------------------ patch

    def patch(
        self,
        view: View,
        namespace: str | None,
        name: str,
        patch_type: str,
        body: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        field_validation: str = "",
        warnings: list[str] | None = None,
    ) -> Obj:
        kind = view.kind
        if patch_type in (patching.APPLY_PATCH, patching.APPLY_PATCH_CBOR):
            raise errors.unsupported_media_type(
                patch_type,
                [patching.JSON_PATCH, patching.MERGE_PATCH]
                + ([patching.STRATEGIC_PATCH] if kind.patch_meta is not None else []),
            )
        if patch_type == patching.STRATEGIC_PATCH and kind.patch_meta is None:
            raise errors.unsupported_media_type(
                patch_type, [patching.JSON_PATCH, patching.MERGE_PATCH, patching.APPLY_PATCH]
            )
        ns = (namespace or "") if kind.namespaced else ""
        prev = self.store.get_entry(kind, ns, name)
        if prev is None:
            raise errors.not_found(kind.group, kind.plural, name)
        old = view.external(prev.obj)
        patched = self.patched(kind, old, patch_type, body)
        meta = patched.get("metadata")
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        if meta.get("name", name) != name:
            raise errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL "
                f"({name})"
            )
        given = meta.get("resourceVersion")
        if given and given != prev.obj["metadata"]["resourceVersion"]:
            raise errors.stale(kind.group, kind.plural, name)
        patched["apiVersion"] = view.api_version
        patched["kind"] = kind.kind
        return self.apply_update(
            view,
            (ns, name),
            patched,
            prev,
            subresource=subresource,
            dry_run=dry_run,
            field_validation=field_validation,
            warnings=warnings,
        )

    def patched(self, kind: Kind, current: Obj, patch_type: str, body: Any) -> Obj:
        if isinstance(body, bytes | str):
            try:
                body = orjson.loads(body)
            except orjson.JSONDecodeError as exc:
                raise errors.bad_request(f"error decoding patch: {exc}") from None
        target = copy.deepcopy(current)
        if patch_type == patching.JSON_PATCH:
            result = patching.json_patch(target, body)
        elif patch_type == patching.MERGE_PATCH:
            if not isinstance(body, dict):
                raise errors.bad_request(
                    "error decoding patch: a merge patch must be a JSON object"
                )
            result = patching.merge_patch(target, body)
        elif patch_type == patching.STRATEGIC_PATCH:
            result = patching.strategic_merge_patch(target, body, kind.patch_meta or {})
        else:
            raise errors.unsupported_media_type(
                patch_type, [patching.JSON_PATCH, patching.MERGE_PATCH, patching.STRATEGIC_PATCH]
            )
        if not isinstance(result, dict):
            raise errors.unprocessable("the patched object is not a JSON object")
        return result

    # ------------------------------------------------------------------ delete

    def delete(
        self, view: View, namespace: str | None, name: str, options: DeleteOptions | None = None
    ) -> tuple[Obj, bool]:
        """Returns the object and whether it is gone (False: it is being deleted)."""
        kind = view.kind
        options = options or DeleteOptions()
        ns = (namespace or "") if kind.namespaced else ""
        prev = self.store.get_entry(kind, ns, name)
        if prev is None:
            raise errors.not_found(kind.group, kind.plural, name)
        old = view.external(prev.obj)
        old_meta = old["metadata"]
        if options.uid is not None and options.uid != old_meta.get("uid"):
            raise errors.conflict(
                kind.group,
                kind.plural,
                name,
                f"Precondition failed: UID in precondition: {options.uid}, UID in object meta: "
                f"{old_meta.get('uid')}",
            )
        if (
            options.resource_version is not None
            and options.resource_version != old_meta["resourceVersion"]
        ):
            raise errors.conflict(
                kind.group,
                kind.plural,
                name,
                f"Precondition failed: ResourceVersion in precondition: "
                f"{options.resource_version}, "
                f"ResourceVersion in object meta: {old_meta['resourceVersion']}",
            )
        if options.dry_run:
            return old, False
        behavior = self.behavior(kind)
        taken = behavior.delete(self, kind, (ns, name), prev, options)
        if taken is not None:
            return view.external(taken), False
        grace = behavior.grace_period(self, kind, old, options)
        if grace > 0:
            current = old_meta.get("deletionGracePeriodSeconds")
            if old_meta.get("deletionTimestamp") and current is not None and current <= grace:
                return old, False
            new = copy.deepcopy(old)
            new["metadata"]["deletionTimestamp"] = metadata.timestamp(self.clock() + grace)
            new["metadata"]["deletionGracePeriodSeconds"] = grace
            entry = self.store.commit(kind, "MODIFIED", (ns, name), view.internal(new), prev)
            return view.external(entry.obj), False
        return self.finish_delete(view, (ns, name), prev)

    def finish_delete(self, view: View, key: Key, prev: Entry) -> tuple[Obj, bool]:
        """Delete now unless finalizers hold the object (then mark it deleted)."""
        kind = view.kind
        old = view.external(prev.obj)
        old_meta = old["metadata"]
        if old_meta.get("finalizers"):
            if (
                old_meta.get("deletionTimestamp")
                and old_meta.get("deletionGracePeriodSeconds", 0) == 0
            ):
                return old, False
            new = copy.deepcopy(old)
            new["metadata"].setdefault("deletionTimestamp", self.now())
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            entry = self.store.commit(kind, "MODIFIED", key, view.internal(new), prev)
            return view.external(entry.obj), False
        self.store.commit(kind, "DELETED", key, None, prev)
        return old, True

    def write_status(self, view: View, key: Key, status: dict[str, Any]) -> Obj:
        """A controller's status write (PDB status, CRD conditions), as PUT /status."""
        prev = self.store.get_entry(view.kind, *key)
        if prev is None:
            raise errors.not_found(view.kind.group, view.kind.plural, key[1])
        new = copy.deepcopy(view.external(prev.obj))
        new["status"] = status
        return self.apply_update(view, key, new, prev, subresource="status")


def _leaf_paths(obj: Any, prefix: str = "") -> set[str]:
    """Dotted paths of every field (list items collapse into their list), for strict
    field validation of pruned custom resources."""
    paths: set[str] = set()
    if isinstance(obj, dict):
        for key, value in obj.items():
            if not prefix and key in ("apiVersion", "kind", "metadata"):
                continue
            path = f"{prefix}.{key}" if prefix else key
            paths.add(path)
            paths |= _leaf_paths(value, path)
    elif isinstance(obj, list):
        for item in obj:
            paths |= _leaf_paths(item, prefix)
    return paths


_NO_BEHAVIOR = Behavior()
