"""``karpy simulate`` end to end: files, stdin, exit codes, formats."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from karpy.cli import main
from tests import factories as f
from tests.simulate.conftest import write_yaml


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "karpy", "simulate", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_run_prints_the_json_document_and_exits_zero(
    snapshot_file: Path, catalog_file: Path
) -> None:
    done = run_cli("-f", str(snapshot_file), "--instance-types", str(catalog_file))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert [c["pods"] for c in doc["nodeClaims"]] == [["default/web"]]
    assert doc["unschedulable"][0]["pod"] == "default/huge"


def test_stdin_is_read_for_dash(catalog_file: Path, snapshot_file: Path) -> None:
    done = run_cli(
        "-f", "-", "--instance-types", str(catalog_file), stdin=snapshot_file.read_text()
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stats"]["pendingPods"] == 2


def test_unusable_input_exits_two_naming_file_and_object(
    tmp_path: Path, catalog_file: Path
) -> None:
    bad = write_yaml(
        tmp_path / "pods.yaml", f.nodepool("default"), f.pod("bad", requests={"cpu": "lots"})
    )
    done = run_cli("-f", str(bad), "--instance-types", str(catalog_file))
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert str(bad) in line and "Pod default/bad" in line and "cpu" in line


def test_a_file_that_does_not_parse_exits_two(tmp_path: Path, catalog_file: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: Pod\nmetadata: {name: [unclosed\n")
    done = run_cli("-f", str(broken), "--instance-types", str(catalog_file))
    assert done.returncode == 2
    assert "broken.yaml" in done.stderr and "does not parse" in done.stderr


def test_an_invalid_catalog_exits_two(tmp_path: Path, snapshot_file: Path) -> None:
    catalog = write_yaml(
        tmp_path / "cat.yaml", {"instanceTypes": [{"name": "x", "capacity": {"cpu": "?"}}]}
    )
    done = run_cli("-f", str(snapshot_file), "--instance-types", str(catalog))
    assert done.returncode == 2
    assert "cat.yaml" in done.stderr and "instanceTypes[0].capacity.cpu" in done.stderr


def test_unknown_kinds_are_warned_about_and_skipped(
    tmp_path: Path, catalog_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = write_yaml(tmp_path / "s.yaml", f.nodepool("default"), f.deployment("web"))
    assert main(["simulate", "-f", str(snapshot), "--instance-types", str(catalog_file)]) == 0
    captured = capsys.readouterr()
    assert "ignoring Deployment default/web" in captured.err


def test_directories_and_list_documents_are_read(
    tmp_path: Path, catalog_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "snap"
    folder.mkdir()
    write_yaml(folder / "a.yaml", f.nodepool("default"))
    (folder / "b.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [f.pod("one"), f.pod("two")]})
    )
    (folder / "notes.txt").write_text("not a manifest")
    assert main(["simulate", "-f", str(folder), "--instance-types", str(catalog_file)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["stats"]["pendingPods"] == 2


def test_yaml_and_table_outputs(
    snapshot_file: Path, catalog_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["simulate", "-f", str(snapshot_file), "--instance-types", str(catalog_file)]
    assert main([*base, "-o", "yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["nodeClaims"][0]["instanceType"] == "m5.large"
    assert main([*base, "-o", "table"]) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0].split() == [
        "NODECLAIM",
        "NODEPOOL",
        "INSTANCE",
        "TYPE",
        "ZONE",
        "CAPACITY",
        "PRICE",
        "PODS",
        "OPTIONS",
    ]
    assert "default-1" in table and "m5.large" in table
    assert "Unschedulable pods (1):" in table
    assert 'default/huge: nodepool "default": no instance type has 100Gi memory' in table


def test_only_unschedulable_pods_are_scheduled_when_asked(
    tmp_path: Path, catalog_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = write_yaml(
        tmp_path / "s.yaml",
        f.nodepool("default"),
        f.pod("marked", unschedulable=True),
        f.pod("fresh"),
    )
    args = [
        "simulate",
        "-f",
        str(snapshot),
        "--instance-types",
        str(catalog_file),
        "--only-unschedulable",
    ]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["stats"]["pendingPods"] == 1
    assert doc["nodeClaims"][0]["pods"] == ["default/marked"]


def test_output_is_byte_identical_for_the_same_input(
    snapshot_file: Path, catalog_file: Path
) -> None:
    runs = [
        run_cli("-f", str(snapshot_file), "--instance-types", str(catalog_file)) for _ in range(2)
    ]
    docs = [json.loads(r.stdout) for r in runs]
    for doc in docs:
        doc["stats"].pop("seconds")
    assert docs[0] == docs[1]


def test_a_scheduler_config_spreads_workloads_by_default(
    tmp_path: Path, catalog_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = {"app": "web"}
    rs = f.replica_set("web", template=f.pod(labels=labels))
    pods = [
        f.pod(
            f"web-{i}", labels=labels, owner_references=[f.owned_by(rs)], requests={"cpu": "100m"}
        )
        for i in range(2)
    ]
    snapshot = write_yaml(tmp_path / "s.yaml", f.nodepool("default"), rs, *pods)
    config = write_yaml(
        tmp_path / "scheduler.yaml",
        {
            "podTopologySpread": {
                "defaultConstraints": [f.topology_spread("kubernetes.io/hostname")]
            }
        },
    )
    base = ["simulate", "-f", str(snapshot), "--instance-types", str(catalog_file)]
    assert main(base) == 0
    captured = capsys.readouterr()
    assert len(json.loads(captured.out)["nodeClaims"]) == 1
    assert "ignoring ReplicaSet default/web" in captured.err
    assert main([*base, "--scheduler-config", str(config)]) == 0
    captured = capsys.readouterr()
    assert len(json.loads(captured.out)["nodeClaims"]) == 2
    assert "ignoring" not in captured.err


def test_an_invalid_scheduler_config_exits_two(
    tmp_path: Path, snapshot_file: Path, catalog_file: Path
) -> None:
    config = write_yaml(tmp_path / "scheduler.yaml", {"podTopologySpread": {"typo": []}})
    done = run_cli(
        "-f",
        str(snapshot_file),
        "--instance-types",
        str(catalog_file),
        "--scheduler-config",
        str(config),
    )
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert str(config) in line and 'unknown field "typo"' in line


def test_the_table_says_what_happened_when_no_node_is_launched(
    tmp_path: Path, catalog_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stuck = write_yaml(tmp_path / "stuck.yaml", f.nodepool("default"),
                       f.pod("a", requests={"memory": "900Gi"}),
                       f.pod("b", requests={"memory": "900Gi"}))  # fmt: skip
    assert main(["simulate", "-f", str(stuck), "--instance-types", str(catalog_file),
                 "-o", "table"]) == 0  # fmt: skip
    table = capsys.readouterr().out
    assert table.splitlines()[0] == "0 new nodes; 2 pods cannot be placed."
    assert "No new nodes needed" not in table
    quiet = write_yaml(tmp_path / "quiet.yaml", f.nodepool("default"))
    assert main(["simulate", "-f", str(quiet), "--instance-types", str(catalog_file),
                 "-o", "table"]) == 0  # fmt: skip
    assert capsys.readouterr().out.splitlines()[0] == "No new nodes needed."
