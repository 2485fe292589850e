"""The catalogue shipped with karpy, for answers without an AWS account.

``karpy instance-types --offline`` (and so ``--explain TYPE --offline``) reads the
region's instance types from ``aws-instance-types.json.gz`` instead of EC2, and prices
from the static on-demand table the controller starts with. The figures are then those a
controller in that region would compute, as of the data's date: EC2 adds types and
changes nothing about existing ones' memory or vCPUs, so an old catalogue still answers
"why does this pod not fit an r5a.8xlarge" exactly; what ages is the list of types,
their zones and prices. `OfflineCatalog.provenance` says which data and how old, and the
command prints it with every offline answer.

The file is made by ``python -m karpy.sandbox.aws.catalogdata`` (see there).
"""

from __future__ import annotations

import functools
import gzip
from importlib import resources
from typing import Any, Final

import attrs
import orjson

from karpy.cloud.aws.instancetypes.catalog import Catalog
from karpy.cloud.aws.instancetypes.network import DATA_PACKAGE, load_json
from karpy.cloud.aws.instancetypes.pricing import PRICES_FILE

__all__ = ["OFFLINE_FILE", "OfflineCatalog", "load_offline_catalog"]

OFFLINE_FILE: Final = "aws-instance-types.json.gz"


@attrs.frozen(slots=True)
class OfflineCatalog:
    catalog: Catalog
    region: str
    source: str  # where the records come from
    released: str  # the date of that source
    prices_retrieved: str  # when the static on-demand prices were read

    @property
    def provenance(self) -> str:
        return (f"offline catalogue for {self.region}: {len(self.catalog.types)} types from "
                f"{self.source} (released {self.released}); on-demand prices retrieved "
                f"{self.prices_retrieved[:10]}, spot prices assumed equal to on-demand; "
                "subnets and AMIs assumed (every zone, one image per architecture)")  # fmt: skip


@functools.cache
def load_offline_catalog() -> OfflineCatalog:
    """The shipped catalogue, read once per process."""
    raw = resources.files(DATA_PACKAGE).joinpath(OFFLINE_FILE).read_bytes()
    document: dict[str, Any] = orjson.loads(gzip.decompress(raw))
    types = {str(record["InstanceType"]): record for record in document["instanceTypes"]}
    zones = {str(name): frozenset(map(str, z)) for name, z in document["zones"].items()}
    return OfflineCatalog(
        catalog=Catalog(types=types, zones_of=zones),
        region=str(document["region"]),
        source=str(document["source"]),
        released=str(document["released"]),
        prices_retrieved=str(load_json(PRICES_FILE).get("retrieved", "unknown")),
    )
