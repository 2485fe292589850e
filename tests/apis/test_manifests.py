"""Karpenter-style example manifests (tests/data/manifests, and deploy/examples, which the
sandbox demo applies) parse, validate clean, print back exactly, and satisfy the CRDs'
OpenAPI schemas as an independent validator reads them."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

from karpy.apis import KINDS, InvalidObject, parse_object
from karpy.apis.crdgen import CUSTOM_RESOURCES
from tests import factories
from tests.apis.builders import changed, nodepool

REPO = Path(__file__).resolve().parents[2]
MANIFEST_DIRS = (REPO / "tests" / "data" / "manifests", REPO / "deploy" / "examples")
EXAMPLES = [
    (f"{path.parent.name}/{path.stem}/{doc['metadata']['name']}", doc)
    for directory in MANIFEST_DIRS
    for path in sorted(directory.glob("*.yaml"))
    for doc in yaml.safe_load_all(path.read_text())
]
DOCUMENTS = [pytest.param(doc, id=name) for name, doc in EXAMPLES]
OPENAPI = {(r.api_version, r.kind): r.schema.to_openapi() for r in CUSTOM_RESOURCES}


def test_the_examples_cover_every_kind():
    kinds = {doc["kind"] for _, doc in EXAMPLES}
    assert kinds == {"NodePool", "NodeClaim", "NodeOverlay", "EC2NodeClass"}
    assert len(EXAMPLES) >= 10


@pytest.mark.parametrize("document", DOCUMENTS)
def test_example_parses_validates_and_round_trips(document):
    obj = parse_object(document)
    assert obj.validate() == []
    assert type(obj).from_dict(obj.to_dict()) == obj


@pytest.mark.parametrize("document", DOCUMENTS)
def test_example_and_its_printed_form_satisfy_the_crd_schema(document):
    schema = OPENAPI[(document["apiVersion"], document["kind"])]
    jsonschema.Draft4Validator(schema).validate(document)
    jsonschema.Draft4Validator(schema).validate(parse_object(document).to_dict())


def test_an_independent_validator_rejects_what_karpy_rejects_at_the_openapi_level():
    schema = OPENAPI[("karpenter.sh/v1", "NodePool")]
    for path, value in [
        ("spec.weight", 0),
        ("spec.template.spec.expireAfter", "1.5h"),
        ("spec.disruption", {"consolidateAfter": "0s", "consolidationPolicy": "x"}),
    ]:
        bad = changed(nodepool(), path, value)
        assert not jsonschema.Draft4Validator(schema).is_valid(bad)
        assert parse_object(bad).validate() != []


def test_shared_test_factories_build_objects_the_models_accept():
    documents = [
        factories.nodepool(
            "pool",
            requirements=[
                factories.nodepool_requirement("karpenter.sh/capacity-type", "In", ["spot"])
            ],
            limits={"cpu": "100"},
        ),
        factories.nodeclaim("claim", nodepool="pool", requests={"cpu": "1"}),
        factories.node_overlay(
            "overlay",
            requirements=[factories.nodepool_requirement("kubernetes.io/arch", "In", ["arm64"])],
            price_adjustment="-10%",
        ),
    ]
    for document in documents:
        assert parse_object(document).validate() == []


def test_parse_object_refuses_unknown_kinds():
    with pytest.raises(InvalidObject) as caught:
        parse_object({"apiVersion": "v1", "kind": "Pod"})
    [error] = caught.value.errors
    assert error.render().startswith('kind: Unsupported value: "v1, Kind=Pod": supported values: ')
    assert len(KINDS) == 4
