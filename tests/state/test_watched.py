"""What the informers watch: karpy's own kinds and the provider's NodeClass kinds."""

from __future__ import annotations

import attrs
import pytest

from karpy.apis.ec2nodeclass_kind import EC2NODECLASS_KIND
from karpy.state.watched import CORE_WATCHED, watched


def test_the_providers_node_class_kinds_are_watched_after_the_core_kinds() -> None:
    specs = watched([EC2NODECLASS_KIND])
    assert specs[: len(CORE_WATCHED)] == CORE_WATCHED
    (node_class,) = specs[len(CORE_WATCHED) :]
    assert node_class.name == "EC2NodeClass"
    assert (node_class.resource.group, node_class.resource.plural) == (
        "karpenter.k8s.aws", "ec2nodeclasses")  # fmt: skip
    assert node_class.resource.custom and not node_class.resource.namespaced
    assert node_class.project is EC2NODECLASS_KIND.project


def test_no_core_kind_is_a_node_class_kind() -> None:
    """The core names no NodeClass kind: without a provider's, none is watched."""
    assert watched([]) == CORE_WATCHED
    assert "EC2NodeClass" not in {spec.name for spec in CORE_WATCHED}


def test_a_node_class_kind_named_like_another_watched_kind_is_refused() -> None:
    """State files objects by kind name: two kinds of one name would share a map."""
    named_nodepool = attrs.evolve(EC2NODECLASS_KIND.definition, kind="NodePool")
    clash = attrs.evolve(EC2NODECLASS_KIND, definition=named_nodepool)
    with pytest.raises(ValueError, match="NodePool"):
        watched([clash])
    with pytest.raises(ValueError, match="EC2NodeClass"):
        watched([EC2NODECLASS_KIND, EC2NODECLASS_KIND])
