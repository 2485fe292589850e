"""LIST: selectors, ``limit``/``continue`` paging and resourceVersion semantics.

- ``resourceVersion`` unset or "0", or N with ``NotOlderThan``: the current state (N
  newer than the store answers 504 as a lagging cache would);
- N with ``resourceVersionMatch=Exact``: the state as of N, rebuilt from history, or 410
  when N is older than the compaction floor;
- a ``continue`` token pins the list's version so every page comes from the same
  snapshot, as etcd reads at the first page's revision; a token older than the floor
  answers 410 with upstream's message and a fresh token that continues at the current
  version (``rv: -1``), exactly as kube-apiserver does.

Tokens use upstream's format: base64 of ``{"v":"meta.k8s.io/v1","rv":N,"start":KEY}``.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from karpy.apis.fielderrors import FieldError
from karpy.sandbox.apiserver import errors
from karpy.sandbox.apiserver.jsonpath import compile_path
from karpy.sandbox.apiserver.selectors import (
    EVERYTHING,
    FieldSelector,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from karpy.sandbox.apiserver.kinds import Kind, Obj, View
    from karpy.sandbox.apiserver.store import Entry, Key, ResourceState, Store

_CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue value from the "
    "response to get an inconsistent list of the results."
)


@attrs.frozen(slots=True)
class ListOptions:
    label_selector: LabelSelector = EVERYTHING
    field_selector: FieldSelector = attrs.Factory(FieldSelector)
    limit: int = 0
    continue_token: str = ""
    resource_version: str = ""
    resource_version_match: str = ""
    label_text: str = ""
    field_text: str = ""


def field_value(kind: Kind, obj: Obj, name: str) -> str | None:
    meta = obj.get("metadata") or {}
    if name == "metadata.name":
        return meta.get("name")
    if name == "metadata.namespace":
        return meta.get("namespace") if kind.namespaced else None
    getter = kind.field_labels.get(name)
    if getter is not None:
        return getter(obj)
    if name in kind.selectable_fields:
        value = compile_path("." + name).first(obj)
        if value is None:
            return None
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)
    return None


def supports_field(kind: Kind, name: str) -> bool:
    return (
        name == "metadata.name"
        or (name == "metadata.namespace" and kind.namespaced)
        or name in kind.field_labels
        or name in kind.selectable_fields
    )


def parse_list_options(view: View, query: dict[str, str], *, watch: bool = False) -> ListOptions:
    kind = view.kind
    label_text = query.get("labelSelector", "")
    field_text = query.get("fieldSelector", "")
    try:
        labels = parse_label_selector(label_text)
        fields = parse_field_selector(field_text)
    except SelectorError as exc:
        raise errors.bad_request(str(exc)) from None
    for requirement in fields.requirements:
        if not supports_field(kind, requirement.field):
            gv = f"{kind.group}/{view.version}"
            raise errors.bad_request(
                f'Unable to find "{gv}, Resource={kind.plural}" that match label selector '
                f'"{label_text}", field selector "{field_text}": field label not supported: '
                f"{requirement.field}"
            )
    try:
        limit = int(query.get("limit") or 0)
    except ValueError:
        raise errors.bad_request(f"invalid limit: {query.get('limit')}") from None
    rv = query.get("resourceVersion", "")
    match = query.get("resourceVersionMatch", "")
    cont = query.get("continue", "")
    problems = _watch_problems(query) if watch else _list_problems(rv, match, cont)
    if rv and rv != "0":
        try:
            int(rv)
        except ValueError:
            raise errors.bad_request(f'invalid resource version: "{rv}"') from None
    if problems:
        raise errors.invalid("ListOptions", "meta.k8s.io", "", problems)
    return ListOptions(labels, fields, limit, cont, rv, match, label_text, field_text)


def _list_problems(rv: str, match: str, cont: str) -> list[FieldError]:
    problems: list[FieldError] = []
    if match and not rv:
        problems.append(
            FieldError.forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            )
        )
    if match and cont:
        problems.append(
            FieldError.forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            )
        )
    if cont and rv and rv != "0":
        problems.append(
            FieldError.forbidden(
                "resourceVersion", "specifying resource version is not allowed when using continue"
            )
        )
    if match and match not in ("Exact", "NotOlderThan"):
        problems.append(
            FieldError.not_supported("resourceVersionMatch", match, ["Exact", "NotOlderThan"])
        )
    if match == "Exact" and rv == "0":
        problems.append(
            FieldError.forbidden(
                "resourceVersionMatch",
                'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
            )
        )
    return problems


def _watch_problems(query: dict[str, str]) -> list[FieldError]:
    """``validateWatchOptions``: the rules of watch-list requests."""
    problems: list[FieldError] = []
    match = query.get("resourceVersionMatch", "")
    initial = query.get("sendInitialEvents")
    bookmarks = query.get("allowWatchBookmarks", "") in ("true", "1", "True")
    if initial is not None and match != "NotOlderThan":
        problems.append(
            FieldError.forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )
        )
    if match:
        if initial is None:
            problems.append(
                FieldError.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                    "provided",
                )
            )
        if match != "NotOlderThan":
            problems.append(
                FieldError.not_supported("resourceVersionMatch", match, ["NotOlderThan"])
            )
        if not bookmarks:
            problems.append(
                FieldError.forbidden(
                    "allowWatchBookmarks",
                    "allowWatchBookmarks must be set to true when resourceVersionMatch is provided",
                )
            )
    return problems


def encode_continue(rv: int, key: Key, namespaced: bool) -> str:
    start = f"{key[0]}/{key[1]}\x00" if namespaced else f"{key[1]}\x00"
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str, namespaced: bool) -> tuple[int, Key]:
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError, orjson.JSONDecodeError):
        raise errors.bad_request(f"continue key is not valid: {token}") from None
    if not isinstance(data, dict) or data.get("v") != "meta.k8s.io/v1":
        raise errors.bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version "
            "meta.k8s.io/v1)"
        )
    start = str(data.get("start", "")).rstrip("\x00")
    if namespaced:
        ns, _, name = start.partition("/")
        return int(data.get("rv", 0)), (ns, name)
    return int(data.get("rv", 0)), ("", start)


@attrs.frozen(slots=True)
class ListResult:
    rv: int
    entries: list[Entry]
    continue_token: str = ""
    remaining: int | None = None


def matches(kind: Kind, view: View, entry: Entry, opts: ListOptions) -> bool:
    obj = entry.obj
    if not opts.label_selector.empty and not opts.label_selector.matches(
        obj["metadata"].get("labels")
    ):
        return False
    if not opts.field_selector.empty:
        external = view.external(obj)
        return opts.field_selector.matches(lambda f: field_value(kind, external, f))
    return True


def list_objects(store: Store, view: View, namespace: str | None, opts: ListOptions) -> ListResult:
    kind = view.kind
    state = store.state(kind)
    start: Key | None = None
    at: int | None = None
    if opts.continue_token:
        token_rv, start = decode_continue(opts.continue_token, kind.namespaced)
        at = None if token_rv == -1 else token_rv
        if at is not None and at < state.list_floor:
            err = errors.expired(_CONTINUE_EXPIRED)
            err.list_meta = {"continue": encode_continue(-1, start, kind.namespaced)}
            raise err
    elif opts.resource_version and opts.resource_version != "0":
        requested = int(opts.resource_version)
        if opts.resource_version_match == "Exact":
            at = requested
        elif requested > store.rv:
            raise errors.timeout(
                f"Too large resource version: {requested}, current: {store.rv}", retry_after=1
            )
    rv = store.rv if at is None else at
    selecting = not (opts.label_selector.empty and opts.field_selector.empty)
    candidates = _indexed_candidates(store, state, opts)
    snap = store.snapshot(state, at, namespace, candidates)
    found: list[Entry] = []
    last: Key | None = None
    keys = snap.keys
    i = snap.start_index(start)
    while i < len(keys):
        key = keys[i]
        i += 1
        entry = snap.entry(key)
        if entry is None or (selecting and not matches(kind, view, entry, opts)):
            continue
        if opts.limit and len(found) >= opts.limit:
            i -= 1
            break
        found.append(entry)
        last = key
    else:
        return ListResult(rv, found)
    if last is None:
        return ListResult(rv, found)
    remaining = None if selecting else snap.count_from(i)
    return ListResult(rv, found, encode_continue(rv, last, kind.namespaced), remaining)


def _indexed_candidates(store: Store, state: ResourceState, opts: ListOptions) -> set[Key] | None:
    for requirement in opts.field_selector.requirements:
        if not requirement.negated:
            found = state.indexed(requirement.field, requirement.value)
            if found is not None:
                return found
    return None


def list_metadata(result: ListResult) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": str(result.rv)}
    if result.continue_token:
        meta["continue"] = result.continue_token
    if result.remaining is not None:
        meta["remainingItemCount"] = result.remaining
    return meta


def encode_list(view: View, result: ListResult, chunk: int = 500) -> Iterator[bytes]:
    """The list as JSON, in chunks, so a 40,000-pod list streams rather than buffers."""
    kind = view.kind
    head = {
        "kind": kind.list_kind,
        "apiVersion": view.api_version,
        "metadata": list_metadata(result),
    }
    yield orjson.dumps(head)[:-1] + b',"items":['
    entries = result.entries
    typed = not kind.custom
    for i in range(0, len(entries), chunk):
        part = entries[i : i + chunk]
        if view.identity:
            encoded = [e.item if typed else e.raw for e in part]
        else:
            encoded = [_external_item(view, e, typed) for e in part]
        yield (b"," if i else b"") + b",".join(encoded)
    yield b"]}"


def _external_item(view: View, entry: Entry, typed: bool) -> bytes:
    obj = view.external(entry.obj)
    if typed:
        obj = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
    return orjson.dumps(obj)
