"""Parity with Karpenter's published instance types, for every type moto lists.

Karpenter's "Instance Types" reference page gives, for an AL2023 EC2NodeClass with default
settings, each type's single-valued labels and its allocatable cpu, memory, pods,
ephemeral storage and extended resources (extracted into ``data/karpenter-instance-
types.json`` by ``extract_karpenter_instance_types.py``). karpy computes the same from
moto's catalogue (a snapshot of DescribeInstanceTypes, read in-process for speed). The
page was generated from the real EC2 API at a different time than moto's snapshot, and
bandwidth and pod-ENI figures come from karpy's shipped table, so some differences are
data, not arithmetic: the test prints the share that matches exactly and every mismatch
with its reason, and asserts a floor on that share.
"""

from __future__ import annotations

import collections
import gzip
import json
from pathlib import Path
from typing import Any

import moto

from karpy.base.quantity import format_resource, parse_quantity
from karpy.cloud.aws.instancetypes.attributes import type_requirements
from karpy.cloud.aws.instancetypes.capacity import ShapeOptions, compute_shape
from karpy.cloud.aws.instancetypes.families import family
from karpy.scheduling.requirements import Requirements
from tests.aws.instancetypes.extract_karpenter_instance_types import load

PARITY_FLOOR = 0.90  # measured 0.92 (1,253 of 1,358 types) when written
# Labels karpy sets that the page predates.
NOT_ON_PAGE = frozenset({"karpenter.k8s.aws/nitro-sandbox"})


def moto_catalog() -> dict[str, Any]:
    path = Path(moto.__file__).parent / "ec2" / "resources" / "instance_types.json.gz"
    with gzip.open(path) as f:
        data: dict[str, Any] = json.load(f)
    return data


def differences(name: str, record: dict[str, Any], published: dict[str, dict[str, str]],
                page_labels: frozenset[str]) -> list[str]:  # fmt: skip
    options = ShapeOptions(family=family("AL2023"))
    shape = compute_shape(record, options)
    labels = Requirements(type_requirements(record, region="us-west-2", family=options.family))
    mine = {k: v for k, v in labels.labels().items() if k in page_labels}
    out = []
    for resource in sorted(set(published["allocatable"]) | set(shape.allocatable)):
        theirs = parse_quantity(published["allocatable"].get(resource, "0"))
        ours = shape.allocatable.get(resource, 0)
        if theirs != ours:
            out.append(f"{resource} {format_resource(resource, theirs)} "
                       f"!= {format_resource(resource, ours)}")  # fmt: skip
    theirs_labels = published["labels"]
    out += [f"{key} {theirs_labels.get(key)} != {mine.get(key)}"
            for key in sorted(set(theirs_labels) | set(mine))
            if theirs_labels.get(key) != mine.get(key)]  # fmt: skip
    return out


def test_allocatable_and_labels_match_karpenters_reference_page(capsys: Any) -> None:
    published = load()
    page_labels = frozenset(k for t in published.values() for k in t["labels"]) - NOT_ON_PAGE
    catalog = moto_catalog()
    compared = matched = 0
    not_on_page: list[str] = []
    reasons: collections.Counter[str] = collections.Counter()
    report: list[str] = []
    for name, record in sorted(catalog.items()):
        if name not in published:
            not_on_page.append(name)
            continue
        compared += 1
        diffs = differences(name, record, published[name], page_labels)
        if not diffs:
            matched += 1
            continue
        reasons.update(d.split(" ", 1)[0] for d in diffs)
        report.append(f"  {name}: " + "; ".join(diffs))
    share = matched / compared
    with capsys.disabled():
        print(f"\nparity with Karpenter's reference page: {matched}/{compared} types match")
        print(f"exactly ({share:.1%}); {len(not_on_page)} moto types are not on the page")
        print("mismatches by field: " + ", ".join(f"{k} {n}" for k, n in reasons.most_common()))
        print("\n".join(report))
    assert compared > 1300
    assert share >= PARITY_FLOOR


def test_every_published_figure_of_common_types_matches_exactly() -> None:
    """The everyday families match to the byte (no data drift there)."""
    published = load()
    page_labels = frozenset(k for t in published.values() for k in t["labels"]) - NOT_ON_PAGE
    catalog = moto_catalog()
    common = ("m5.large", "c6g.xlarge", "r5a.8xlarge", "t3.micro", "p4d.24xlarge", "g5.xlarge",
              "inf2.xlarge", "i3.large", "m7i.metal-24xl", "u-6tb1.56xlarge")  # fmt: skip
    for name in common:
        assert differences(name, catalog[name], published[name], page_labels) == [], name
