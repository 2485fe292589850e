"""`--dist loadgroup` (make test) must keep each ``xdist_group`` on one worker: the
chart-RBAC recording and the image build are module fixtures that take minutes, and a
group split across workers builds them once per worker. pytest-xdist marks a grouped
test by appending ``@<group>`` to its node id, which some pytest releases no longer
allow (pytest 9.2); this test fails on such a combination instead of the suite quietly
running slower."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.xdist_group("xdist-self-check")]


def test_a_grouped_test_carries_its_group_in_its_node_id(request: pytest.FixtureRequest) -> None:
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not running under --dist loadgroup")
    assert request.node.nodeid.endswith("@xdist-self-check")
