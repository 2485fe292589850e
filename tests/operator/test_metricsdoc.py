"""The metrics reference page lists every metric a controller registers, read from the
registries themselves, and is kept equal to them."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Histogram

from karpy.operator.metricsdoc import (
    DEFAULT_OUT,
    aws_registry,
    controller_registry,
    describe,
    main,
    render,
)

KARPY = Path(__file__).resolve().parents[2] / "karpy"
# A metric constructor with its name as the first argument, possibly on the next line.
CONSTRUCTOR = re.compile(
    r"\b(?:Counter|Gauge|Histogram|Summary|Info|Enum|GaugeMetricFamily|CounterMetricFamily|"
    r"HistogramMetricFamily|SummaryMetricFamily|InfoMetricFamily)\(\s*\"([a-z_:][a-z0-9_:]*)\""
)


def test_committed_page_is_the_generated_one():
    # Regenerate with: python -m karpy.operator.metricsdoc
    assert DEFAULT_OUT.read_text() == render()


def test_every_metric_constructed_in_karpy_is_on_the_page():
    # The sandbox is not part of the controller; its emulator's /metrics is its own.
    sources = [p for p in KARPY.rglob("*.py") if "sandbox" not in p.parts]
    constructed = {m for p in sources for m in CONSTRUCTOR.findall(p.read_text())}
    assert "karpenter_nodeclaims_created_total" in constructed  # the scan finds them
    documented = {doc.name for doc in describe(controller_registry())}
    documented |= {doc.name for doc in describe(aws_registry())}
    missing = {name for name in constructed if name.removesuffix("_total") not in documented}
    assert not missing


def test_labels_of_a_metric_without_series_are_listed():
    registry = CollectorRegistry()
    Counter("launches_total", "Launches.", ["nodepool", "zone"], registry=registry)
    (doc,) = describe(registry)
    assert (doc.name, doc.type, doc.labels, doc.help) == (
        "launches", "counter", ("nodepool", "zone"), "Launches."
    )  # fmt: skip
    assert doc.series == ("launches_total",)


def test_histogram_labels_leave_out_the_bucket_label():
    registry = CollectorRegistry()
    Histogram("wait_seconds", "Waits.", registry=registry).observe(1)
    (doc,) = describe(registry)
    assert doc.labels == ()
    assert doc.series == ("wait_seconds_bucket", "wait_seconds_sum", "wait_seconds_count")


def test_page_names_counters_as_they_are_queried():
    page = render()
    assert "| `karpenter_nodeclaims_created_total` | counter |" in page
    assert "| `karpenter_pods_state` | gauge |" in page


def test_aws_only_metrics_have_their_own_section():
    page = render()
    aws_section = page.split("## With the AWS provider", 1)[1]
    assert "`karpenter_interruption_received_messages_total`" in aws_section
    assert page.count("`karpenter_interruption_received_messages_total`") == 1


def test_check_exits_1_for_a_stale_page(tmp_path):
    page = tmp_path / "metrics.md"
    page.write_text("old\n")
    assert main(["--check", "--out", str(page)]) == 1
    assert main(["--out", str(page)]) == 0
    assert main(["--check", "--out", str(page)]) == 0
