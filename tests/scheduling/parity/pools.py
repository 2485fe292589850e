"""The NodePools Karpenter's two scheduling suites start every test from.

Both suites build one NodePool per test with the fake provider's defaults (a node class
reference and a 2000-cpu limit) and a capacity-type requirement: the main suite allows
spot, on-demand and reserved; the topology suite requires only that a capacity type
exists. A test that sets its own requirements replaces that default, as the suites do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tests import factories as f

if TYPE_CHECKING:
    from collections.abc import Sequence

CAPACITY_TYPE = "karpenter.sh/capacity-type"
DEFAULT_LIMITS = {"cpu": "2000"}


def suite_pool(
    name: str | None = None,
    *,
    requirements: Sequence[dict[str, Any]] | None = None,
    limits: dict[str, str] | None = DEFAULT_LIMITS,
    **options: Any,
) -> dict[str, Any]:
    """The main suite's NodePool (``suite_test.go``)."""
    if requirements is None:
        requirements = [
            f.nodepool_requirement(CAPACITY_TYPE, "In", ["spot", "on-demand", "reserved"])
        ]
    return f.nodepool(name, requirements=requirements, limits=limits, **options)


def topology_pool(
    name: str | None = None,
    *,
    requirements: Sequence[dict[str, Any]] | None = None,
    limits: dict[str, str] | None = DEFAULT_LIMITS,
    **options: Any,
) -> dict[str, Any]:
    """The topology suite's NodePool (``topology_test.go``)."""
    if requirements is None:
        requirements = [f.nodepool_requirement(CAPACITY_TYPE, "Exists")]
    return f.nodepool(name, requirements=requirements, limits=limits, **options)


def plain_pool(
    name: str | None = None, *, limits: dict[str, str] | None = DEFAULT_LIMITS, **options: Any
) -> dict[str, Any]:
    """A NodePool as the fake provider's factory makes it, with no requirements."""
    return f.nodepool(name, limits=limits, **options)
