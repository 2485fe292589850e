"""The CRDs in deploy/crds: generated from the schemas, structurally sound as
kube-apiserver requires, in agreement with the attrs models field by field and default
by default, and (when Karpenter's sources are on disk) equivalent to Karpenter's own."""

from __future__ import annotations

import subprocess
import types
import typing
from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import jsonschema
import pytest
import yaml

from karpy.apis import KINDS
from karpy.apis.conditions import Condition
from karpy.apis.core import NodeSelectorRequirement, ObjectMeta
from karpy.apis.crdgen import CUSTOM_RESOURCES, main, render_all
from karpy.apis.openapi import NO_DEFAULT, Schema, obj, string
from karpy.apis.openapi_engine import apply_defaults, validate
from karpy.apis.records import Record, wire_fields
from karpy.durations import from_timedelta, parse_duration
from tests.apis.builders import ec2nodeclass, nodeclaim, nodeoverlay, nodepool

CRD_DIR = Path(__file__).resolve().parents[2] / "deploy" / "crds"
SCHEMAS = {(r.api_version, r.kind): r.schema for r in CUSTOM_RESOURCES}


def walk(schema: Schema, path: str = "") -> Iterator[tuple[str, Schema]]:
    yield path, schema
    for name, child in schema.properties.items():
        yield from walk(child, f"{path}.{name}")
    if schema.items is not None:
        yield from walk(schema.items, f"{path}[]")
    if schema.additional_properties is not None:
        yield from walk(schema.additional_properties, f"{path}{{}}")


# --- generated files --------------------------------------------------------------------


def test_committed_crds_are_the_generators_output():
    for name, text in render_all().items():
        assert (CRD_DIR / name).read_text() == text, f"run python -m karpy.apis.crdgen ({name})"


def test_generator_check_mode_reports_stale_files(tmp_path):
    assert main(["--out", str(tmp_path)]) == 0
    assert main(["--out", str(tmp_path), "--check"]) == 0
    (tmp_path / "karpenter.sh_nodepools.yaml").write_text("stale")
    assert main(["--out", str(tmp_path), "--check"]) == 1


KARPENTER_KINDS = [r for r in CUSTOM_RESOURCES if r.group != "autoscaling.x-k8s.io"]


@pytest.mark.parametrize("resource", KARPENTER_KINDS, ids=lambda r: r.kind)
def test_crd_documents_name_the_kind_as_karpenter_does(resource):
    crd = yaml.safe_load((CRD_DIR / resource.filename).read_text())
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"]["name"] == f"{resource.plural}.{resource.group}"
    spec = crd["spec"]
    assert spec["scope"] == "Cluster"
    assert spec["names"]["categories"] == ["karpenter"]
    assert spec["names"]["singular"] == resource.kind.lower()
    [version] = spec["versions"]
    assert version["served"] and version["storage"]
    assert "status" in version["subresources"]
    assert [c["name"] for c in version["additionalPrinterColumns"]][:2] in (
        ["NodeClass", "Nodes"],
        ["Type", "Capacity"],
        ["Ready", "Age"],
    )


def test_the_capacitybuffer_crd_is_the_namespaced_autoscaling_kind_karpenter_ships():
    crd = yaml.safe_load((CRD_DIR / "autoscaling.x-k8s.io_capacitybuffers.yaml").read_text())
    spec = crd["spec"]
    assert (spec["scope"], spec["group"]) == ("Namespaced", "autoscaling.x-k8s.io")
    assert spec["names"]["categories"] == ["autoscaling"]
    assert spec["names"]["shortNames"] == ["cb"]
    [version] = spec["versions"]
    assert version["name"] == "v1beta1" and "status" in version["subresources"]
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "Strategy", "PodTemplate", "Replicas", "ConditionsType", "ConditionsStatus",
        "ConditionsReason", "Age",
    ]  # fmt: skip
    schema = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert schema["properties"]["provisioningStrategy"]["default"] == (
        "buffer.x-k8s.io/active-capacity"
    )
    assert [v["rule"] for v in schema["x-kubernetes-validations"]] == [
        "!has(self.podTemplateRef) || has(self.replicas) || has(self.limits)",
        "!(has(self.podTemplateRef) && has(self.scalableRef))",
    ]


def test_nodepool_has_a_scale_subresource_on_replicas():
    crd = yaml.safe_load((CRD_DIR / "karpenter.sh_nodepools.yaml").read_text())
    assert crd["spec"]["versions"][0]["subresources"]["scale"] == {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.nodes",
    }


# --- structural soundness -----------------------------------------------------------------


@pytest.mark.parametrize("resource", CUSTOM_RESOURCES, ids=lambda r: r.kind)
def test_openapi_schema_is_a_valid_json_schema(resource):
    schema = resource.schema.to_openapi()
    jsonschema.Draft4Validator.check_schema(schema)


@pytest.mark.parametrize("resource", CUSTOM_RESOURCES, ids=lambda r: r.kind)
def test_schema_is_structural(resource):
    """The rules kube-apiserver applies to a CRD's schema before accepting it."""
    for path, node in walk(resource.schema):
        assert node.type is not None or node.int_or_string, f"{path}: every node needs a type"
        assert not (node.properties and node.additional_properties), path
        assert set(node.required) <= set(node.properties), path
        if node.type != "array":
            assert node.items is None and node.list_type is None, path
        if node.list_type == "set":
            assert node.items is not None and node.items.type in ("string", "integer"), path
        if node.list_type == "map":
            assert node.items is not None
            for key in node.list_map_keys:
                item = node.items
                assert key in item.required or item.properties[key].default is not NO_DEFAULT
        if node.default is not NO_DEFAULT:
            assert validate(node, node.default) == [], f"{path}: default must be valid"
            assert apply_defaults(node, node.default) == node.default or node.type == "object"
        if node.type is not None and node.enum:
            assert all(isinstance(v, str) for v in node.enum), path


# --- agreement with the attrs models ------------------------------------------------------

_RUNTIME_NAMES = {
    "Mapping": Mapping,
    "timedelta": timedelta,
    "datetime": datetime,
    "Condition": Condition,
    "NodeSelectorRequirement": NodeSelectorRequirement,
    "Schema": Schema,
}
# Model classes shared on purpose between places whose schemas differ slightly: the
# NodeOverlay and EC2NodeClass-status requirements have no minValues (the overlay parser
# drops one if given, as pruning would).
KNOWN_EXTRA_FIELDS = {
    ("NodeOverlay", ".spec.requirements[]", "minValues"),
    ("EC2NodeClass", ".status.amis[].requirements[]", "minValues"),
    ("NodePool", ".spec", "unreadableLimits"),  # limits admitted but unparseable, kept apart
}
_ACRONYMS = {"provider_id": "providerID", "image_id": "imageID"}


def _camel(attr: str) -> str:
    if attr in _ACRONYMS:
        return _ACRONYMS[attr]
    head, *rest = attr.split("_")
    return head + "".join(word.title() for word in rest)


def json_fields(cls: type) -> dict[str, tuple[str, Any]]:
    """JSON name → (attribute, annotation) of a model class. Records declare their JSON
    names; hand-written models use the camelCase of the attribute."""
    if issubclass(cls, Record):
        return {name: (attr, tp) for attr, name, tp, _ in wire_fields(cls)}
    hints = typing.get_type_hints(cls, localns=_RUNTIME_NAMES)
    return {
        _camel(field.name): (field.name, hints[field.name])
        for field in attrs.fields(typing.cast("type[attrs.AttrsInstance]", cls))
        if field.eq  # skip bookkeeping such as the text a duration was written as
    }


def _model_class(tp: Any) -> tuple[type | None, bool]:
    """The attrs class inside an annotation, and whether it is a list of them."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return _model_class(next(a for a in args if a is not type(None)))
    if origin is tuple:
        inner, _ = _model_class(args[0])
        return inner, True
    if isinstance(tp, type) and attrs.has(tp):
        return tp, False
    return None, False


def agreement_problems(kind: str, schema: Schema, cls: type, path: str = "") -> list[str]:
    fields = json_fields(cls)
    wire = set(schema.properties) - ({"apiVersion", "kind"} if path == "" else set())
    problems = [f"{path}.{name}: only in the schema" for name in sorted(wire - set(fields))]
    problems += [
        f"{path}.{name}: only in {cls.__name__}"
        for name in sorted(set(fields) - wire)
        if (kind, path, name) not in KNOWN_EXTRA_FIELDS
    ]
    for name in sorted(wire & set(fields)):
        child_cls, is_list = _model_class(fields[name][1])
        child = schema.properties[name]
        if child_cls is None or child_cls is ObjectMeta:
            continue
        if is_list:
            assert child.items is not None, f"{path}.{name} is a list only in the model"
            problems += agreement_problems(kind, child.items, child_cls, f"{path}.{name}[]")
        else:
            problems += agreement_problems(kind, child, child_cls, f"{path}.{name}")
    return problems


@pytest.mark.parametrize("key", list(KINDS), ids=lambda k: k[1])
def test_every_schema_field_has_a_model_attribute_and_vice_versa(key):
    assert agreement_problems(key[1], SCHEMAS[key], KINDS[key]) == []


def test_agreement_check_notices_a_missing_attribute():
    schema = obj("x", {"spec": obj("s", {"brandNew": string()})})
    problems = agreement_problems("X", schema, KINDS[("karpenter.sh/v1alpha1", "NodeOverlay")])
    assert ".spec.brandNew: only in the schema" in problems
    assert ".spec.weight: only in NodeOverlaySpec" in problems


def _defaults(schema: Schema, path: str = "") -> Iterator[tuple[list[str], Schema]]:
    """(JSON path, node) of every property that has a default."""
    for name, child in schema.properties.items():
        if child.default is not NO_DEFAULT:
            yield [*path.split("/")[1:], name] if path else [name], child
        yield from _defaults(child, f"{path}/{name}")
    if schema.items is not None:
        yield from _defaults(schema.items, path)


def _attrs_default(cls: type, json_path: list[str]) -> Any:
    """The attrs default of the attribute at a JSON path, walking the model classes."""
    current: Any = cls
    for part in json_path[:-1]:
        current, _ = _model_class(json_fields(current)[part][1])
    attr = json_fields(current)[json_path[-1]][0]
    default = attrs.fields_dict(current)[attr].default
    factory = getattr(default, "factory", None)
    return factory() if factory is not None else default


def _as_wire(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_as_wire(v) for v in value]
    if attrs.has(type(value)):
        return value.to_dict()
    return value


@pytest.mark.parametrize("key", list(KINDS), ids=lambda k: k[1])
def test_model_defaults_equal_schema_defaults(key):
    """A record built in code without an attribute holds what the API server would have
    filled in for the absent field."""
    for json_path, node in _defaults(SCHEMAS[key]):
        model_default = _attrs_default(KINDS[key], json_path)
        expected = apply_defaults(node, node.default)
        if isinstance(model_default, timedelta):
            assert from_timedelta(model_default) == parse_duration(expected), json_path
        else:
            assert _as_wire(model_default) == expected, json_path


def test_defaults_are_found_where_karpenter_has_them():
    found = {key[1]: sorted(".".join(p) for p, _ in _defaults(SCHEMAS[key])) for key in KINDS}
    assert found == {
        "NodePool": [
            "spec.disruption",
            "spec.disruption.budgets",
            "spec.disruption.budgets.nodes",
            "spec.disruption.consolidateAfter",  # v1.15, core#3220
            "spec.disruption.consolidationPolicy",
            "spec.template.spec.expireAfter",
            "status.nodes",
        ],
        "NodeClaim": ["spec.expireAfter"],
        "NodeOverlay": [],
        "EC2NodeClass": [
            "spec.enclaveOptions.enabled",
            "spec.metadataOptions",
            "spec.metadataOptions.httpEndpoint",
            "spec.metadataOptions.httpProtocolIPv6",
            "spec.metadataOptions.httpPutResponseHopLimit",
            "spec.metadataOptions.httpTokens",
            "status.capacityReservations.reservationType",
            "status.capacityReservations.state",
        ],
    }


def test_parsing_a_minimal_object_applies_every_default_on_the_way():
    """For each kind, the defaults reachable from a minimal object show up in to_dict()."""
    for document in (nodepool(), nodeclaim(), nodeoverlay(), ec2nodeclass()):
        key = (document["apiVersion"], document["kind"])
        defaulted = apply_defaults(SCHEMAS[key], document)
        assert KINDS[key].from_dict(document).to_dict()["spec"] == defaulted["spec"]


# --- parity with Karpenter's generated CRDs -----------------------------------------------

MIRRORS = Path("/work/.mirror")
CORE = MIRRORS / "kubernetes-sigs+karpenter" / "repo"
AWS = MIRRORS / "aws+karpenter-provider-aws" / "repo"


def _karpenter_crd(ref: str, name: str) -> dict[str, Any]:
    text = subprocess.run(
        ["git", "-C", str(AWS), "show", f"{ref}:pkg/apis/crds/{name}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    # Karpenter's NodePool label rule lists one key twice; the set is what matters.
    dup = '"karpenter.k8s.aws/capacity-reservation-interruptible", '
    text = text.replace(dup + dup, dup)
    return yaml.safe_load(text)  # type: ignore[no-any-return]


def _without_descriptions(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_descriptions(v) for k, v in value.items() if k != "description"}
    if isinstance(value, list):
        return [_without_descriptions(v) for v in value]
    return value


# Patterns karpy adds to Karpenter's schema on purpose (docs/crd-validation.md): kubelet
# values are written into node user data, so they must have the shape the kubelet reads.
_KUBELET = ("spec", "versions", 0, "schema", "openAPIV3Schema", "properties", "spec",
            "properties", "kubelet", "properties")  # fmt: skip
KARPY_ONLY_PATTERNS = {
    "EC2NodeClass": (
        (*_KUBELET, "evictionSoftGracePeriod", "additionalProperties"),
        (*_KUBELET, "clusterDNS", "items"),
    )
}


def _without_karpy_only_patterns(kind: str, crd: dict[str, Any]) -> dict[str, Any]:
    for path in KARPY_ONLY_PATTERNS.get(kind, ()):
        node: Any = crd
        for step in path:
            node = node[step]
        assert node.pop("pattern"), path
    return crd


# Fields of Karpenter v1.15 that the v1.14.1 CRD lacks, compared on their own below.
_SPEC = ("spec", "versions", 0, "schema", "openAPIV3Schema", "properties", "spec", "properties")
V1_15_FIELDS = {"EC2NodeClass": ("enclaveOptions",)}
# aws#9486, the pull request that proposed spec.enclaveOptions (the mirror has no v1.15 tag).
ENCLAVE_OPTIONS_REF = "refs/pull/9486/head"
# core#3220, "default consolidateAfter instead of requiring it" (in v1.15).
CONSOLIDATE_AFTER_REF = "12b9fd9ae"


def _spec_properties(crd: dict[str, Any]) -> dict[str, Any]:
    node: Any = crd
    for step in _SPEC:
        node = node[step]
    return node  # type: ignore[no-any-return]


def _without_v1_15_fields(kind: str, crd: dict[str, Any]) -> dict[str, Any]:
    properties = _spec_properties(crd)
    for field in V1_15_FIELDS.get(kind, ()):
        assert properties.pop(field), field
    if kind == "NodePool":  # core#3220: consolidateAfter optional, 0s by default
        disruption = properties["disruption"]
        assert disruption["properties"]["consolidateAfter"].pop("default") == "0s"
        disruption["required"] = ["consolidateAfter"]
        # core#3311 (RFC core#3192): budgets may name node repair's reason
        reasons = disruption["properties"]["budgets"]["items"]["properties"]["reasons"]
        assert reasons["items"]["enum"].pop() == "Unhealthy"
    return crd


def _has_ref(ref: str, repo: Path = AWS) -> bool:
    found = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", ref],
                           capture_output=True, check=False)  # fmt: skip
    return found.returncode == 0


@pytest.mark.skipif(
    not AWS.exists() or not _has_ref(ENCLAVE_OPTIONS_REF),
    reason="Karpenter's sources (with aws#9486) are not on this machine",
)
def test_enclave_options_schema_is_karpenters():
    theirs = _spec_properties(_without_descriptions(
        _karpenter_crd(ENCLAVE_OPTIONS_REF, CUSTOM_RESOURCES[3].filename)))  # fmt: skip
    ours = _spec_properties(_without_descriptions(CUSTOM_RESOURCES[3].to_crd()))
    assert ours["enclaveOptions"] == theirs["enclaveOptions"]


@pytest.mark.skipif(not AWS.exists(), reason="Karpenter's sources are not on this machine")
@pytest.mark.parametrize(
    ("resource", "ref"),
    [
        # Core CRDs as of the newest sources (they add the nitro-sandbox label).
        (CUSTOM_RESOURCES[0], "HEAD"),
        (CUSTOM_RESOURCES[1], "HEAD"),
        (CUSTOM_RESOURCES[2], "HEAD"),
        # EC2NodeClass as released: HEAD replaced the typed kubelet with an open map.
        (CUSTOM_RESOURCES[3], "v1.14.1"),
    ],
    ids=lambda v: getattr(v, "kind", v),
)
def test_equivalent_to_karpenters_crd(resource, ref):
    theirs = _without_descriptions(_karpenter_crd(ref, resource.filename))
    theirs["metadata"].pop("annotations", None)
    ours = _without_karpy_only_patterns(resource.kind, _without_descriptions(resource.to_crd()))
    assert _without_v1_15_fields(resource.kind, ours) == theirs


def _core_crd(ref: str, name: str) -> dict[str, Any]:
    text = subprocess.run(["git", "-C", str(CORE), "show", f"{ref}:pkg/apis/crds/{name}"],
                          check=True, capture_output=True, text=True).stdout  # fmt: skip
    return yaml.safe_load(text)  # type: ignore[no-any-return]


@pytest.mark.skipif(
    not CORE.exists() or not _has_ref(CONSOLIDATE_AFTER_REF, CORE),
    reason="Karpenter core's sources (with core#3220) are not on this machine",
)
def test_consolidate_after_is_optional_as_in_karpenter_v1_15():
    theirs = _spec_properties(_without_descriptions(
        _core_crd(CONSOLIDATE_AFTER_REF, CUSTOM_RESOURCES[0].filename)))["disruption"]  # fmt: skip
    ours = _spec_properties(_without_descriptions(CUSTOM_RESOURCES[0].to_crd()))["disruption"]
    assert ours["properties"]["consolidateAfter"] == theirs["properties"]["consolidateAfter"]
    assert "required" not in ours and "required" not in theirs
