"""``karpy instance-types --offline``: the r5a.8xlarge question answered without an AWS
account, from the catalogue shipped with karpy, and the same figures as EC2 gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import orjson

from karpy.cloud.aws.instancetypes.offline import load_offline_catalog
from karpy.sandbox.aws.catalogdata import build
from karpy.scheduling.catalog import parse_catalog

# Nothing listens on port 9 (discard) on loopback: any attempt to reach AWS fails loudly.
UNREACHABLE = "http://127.0.0.1:9"


def karpy(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    base |= {"AWS_ENDPOINT_URL": UNREACHABLE, "AWS_ENDPOINT_URL_PRICING": UNREACHABLE}
    return subprocess.run([sys.executable, "-m", "karpy", "instance-types", *args],
                          env=base | (env or {}), capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip


def test_explain_offline_needs_no_account_and_says_which_data_and_how_old() -> None:
    done = karpy("--offline", "--explain", "r5a.8xlarge")
    assert done.returncode == 0, done.stderr
    for step in ("r5a.8xlarge: 32 vCPUs, 262144 MiB (256 GiB) advertised",
                 "= allocatable                                      239554Mi (233.94Gi)",
                 "largest pod that fits alone: cpu 31850m, memory 239554Mi (233.94Gi)",
                 "cheapest on-demand in us-east-1"):  # fmt: skip
        assert step in done.stdout, f"{step!r} missing:\n{done.stdout}"
    provenance = done.stderr
    assert "offline catalogue for us-east-1" in provenance
    assert "moto 5.2." in provenance and "released 20" in provenance
    assert "on-demand prices retrieved 20" in provenance


def test_offline_json_is_a_catalog_and_other_regions_are_refused() -> None:
    done = karpy("--offline", "-o", "json")
    assert done.returncode == 0, done.stderr
    catalog = parse_catalog(json.loads(done.stdout))  # stdout holds only the catalog
    assert len(catalog.instance_types) > 1300

    refused = karpy("--offline", "--region", "eu-west-1")
    assert refused.returncode == 2
    assert "--offline answers for us-east-1 only, not eu-west-1" in refused.stderr
    assert refused.stdout == ""


async def test_the_shipped_catalogue_is_what_the_sandboxs_ec2_answers() -> None:
    """The file is made by `catalogdata.build` from the sandbox's EC2; after a moto
    upgrade this fails until it is made again (the command is in its docstring)."""
    shipped = load_offline_catalog()
    document = orjson.loads(orjson.dumps(await build(shipped.released)))
    assert document["source"] == shipped.source
    assert {r["InstanceType"]: r for r in document["instanceTypes"]} == shipped.catalog.types
    assert {k: frozenset(v) for k, v in document["zones"].items()} == shipped.catalog.zones_of
