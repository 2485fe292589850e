"""Write the instance-type catalogue karpy ships for ``karpy instance-types --offline``.

The file (``karpy/cloud/aws/data/aws-instance-types.json.gz``) holds what the controller
would read from EC2 in one region: the DescribeInstanceTypes records (HVM, x86_64 and
arm64, as `fetch_catalog` asks) and the zones DescribeInstanceTypeOfferings gives each
type. It is made the way the controller makes its catalogue: `fetch_catalog` against
the sandbox's moto server, so the records are botocore's parse of EC2's XML, not moto's
internal files. moto ships a copy of the real EC2 answers, refreshed at its releases;
the file names the moto version and its release date (passed in: moto does not know it)
so an operator can tell how old the answer is.

    python -m karpy.sandbox.aws.catalogdata --released 2026-10-27 > aws-instance-types.json.gz

Only us-east-1: it is also the region of the static on-demand price table, so an offline
answer has both capacities and prices from one place.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import sys
from importlib.metadata import version
from typing import Any, Final

import orjson

from karpy.cloud.aws.clients import AWSClients
from karpy.cloud.aws.instancetypes.catalog import fetch_catalog
from karpy.sandbox.aws.server import MotoServer

__all__ = ["REGION", "build"]

REGION: Final = "us-east-1"


async def build(released: str, region: str = REGION) -> dict[str, Any]:
    """The catalogue document: provenance, then types and their zones, sorted by name."""
    with MotoServer() as server:
        clients = AWSClients(region, endpoint_url=server.url,
                             credentials=("testing", "testing"))  # fmt: skip
        try:
            catalog = await fetch_catalog(await clients.ec2())
        finally:
            await clients.aclose()
    return {
        "source": f"EC2 DescribeInstanceTypes and DescribeInstanceTypeOfferings as moto "
        f"{version('moto')} ships them",
        "released": released,
        "region": region,
        "instanceTypes": [catalog.types[name] for name in sorted(catalog.types)],
        "zones": {name: sorted(catalog.zones_of[name]) for name in sorted(catalog.zones_of)},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--released", required=True, metavar="YYYY-MM-DD",
                        help="the installed moto's release date")  # fmt: skip
    args = parser.parse_args(argv)
    document = asyncio.run(build(args.released))
    # mtime=0: the same data gives the same bytes, so a regenerated file diffs clean.
    sys.stdout.buffer.write(gzip.compress(orjson.dumps(document), mtime=0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
