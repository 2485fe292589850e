"""A node's termination deadline: the annotation, else deletion time plus the
NodeClaim's terminationGracePeriod, else none."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from karpy.apis.nodeclaim import NodeClaim
from karpy.lifecycle.termination import termination_deadline
from karpy.lifecycle.termination.deadline import parse_deadline
from tests import factories as f

ANNOTATION = "karpenter.sh/nodeclaim-termination-timestamp"
DELETED = "2025-01-01T00:00:00Z"


def claim(*, annotation: str | None = None, grace: str | None = None,
          deleted: str | None = DELETED) -> NodeClaim:  # fmt: skip
    data = f.nodeclaim("c", annotations={ANNOTATION: annotation} if annotation else None,
                       deletion_timestamp=deleted)  # fmt: skip
    if grace is not None:
        data["spec"]["terminationGracePeriod"] = grace
    return NodeClaim.from_dict(data)


def test_the_annotation_is_the_deadline():
    got = termination_deadline(claim(annotation="2025-01-01T00:10:00Z", grace="1h"))
    assert got == datetime(2025, 1, 1, 0, 10, tzinfo=UTC)


def test_without_the_annotation_the_deadline_is_deletion_plus_grace():
    got = termination_deadline(claim(grace="1h30m"))
    assert got == datetime(2025, 1, 1, tzinfo=UTC) + timedelta(hours=1, minutes=30)


def test_an_unreadable_annotation_falls_back_to_deletion_plus_grace():
    got = termination_deadline(claim(annotation="next tuesday", grace="10m"))
    assert got == datetime(2025, 1, 1, 0, 10, tzinfo=UTC)


def test_no_grace_period_means_no_deadline():
    assert termination_deadline(claim()) is None
    assert termination_deadline(claim(grace="10m", deleted=None)) is None


def test_rfc3339_with_fractions_and_offsets_is_read():
    assert parse_deadline("2025-01-01T02:00:00.5+02:00") == datetime(
        2025, 1, 1, 0, 0, 0, 500000, tzinfo=UTC
    )
    assert parse_deadline("") is None
