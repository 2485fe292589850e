"""`PriceTable`: the on-demand and spot prices the moto sandbox pretends AWS charges.

moto has no Pricing API and its spot price history is a placeholder (``0.00001`` for
everything), so a price-aware allocation strategy cannot be tested against it as is.
The sandbox answers both from this one table, so the Pricing stub, the spot price
history and the CreateFleet allocation agree with each other: on-demand prices are the
public Linux prices karpy ships as its static fallback table
(`karpy/cloud/aws/data/aws-on-demand-prices.json`, us-east-1, used for every region),
and a spot price is 30-40% of the on-demand price, drawn from a
hash of (type, zone) so it is the same in every run and differs between zones.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Final

import attrs

__all__ = ["PRICES_FILE", "PriceTable", "default_prices"]

PRICES_FILE: Final = (
    Path(__file__).parents[2] / "cloud" / "aws" / "data" / "aws-on-demand-prices.json"
)
SPOT_FLOOR: Final = 0.30
SPOT_SPAN: Final = 0.10
# Types missing from the table (moto's catalog is a little larger) are priced per vCPU
# and GiB, roughly as general-purpose instances are.
PER_VCPU_HOUR: Final = 0.0240
PER_GIB_HOUR: Final = 0.0060


@attrs.frozen(slots=True)
class PriceTable:
    """On-demand prices (USD per hour) by instance type; spot prices derived from them."""

    on_demand_prices: dict[str, float]

    @classmethod
    def load(cls, path: Path = PRICES_FILE) -> PriceTable:
        raw = json.loads(path.read_text())
        regions: dict[str, dict[str, float]] = raw["onDemand"]
        merged: dict[str, float] = {}
        for prices in regions.values():
            for name, price in prices.items():
                merged.setdefault(name, float(price))
        return cls(merged)

    def on_demand(self, instance_type: str, vcpus: int = 2, memory_mib: int = 8192) -> float:
        """The on-demand price; estimated from ``vcpus``/``memory_mib`` if unlisted."""
        found = self.on_demand_prices.get(instance_type)
        if found is not None:
            return found
        return round(vcpus * PER_VCPU_HOUR + memory_mib / 1024 * PER_GIB_HOUR, 4)

    def spot(self, instance_type: str, zone: str, vcpus: int = 2, memory_mib: int = 8192) -> float:
        """A deterministic spot price in ``zone``: 30-40% of the on-demand price."""
        digest = hashlib.sha256(f"{instance_type}/{zone}".encode()).digest()
        fraction = SPOT_FLOOR + SPOT_SPAN * int.from_bytes(digest[:4], "big") / 2**32
        return round(self.on_demand(instance_type, vcpus, memory_mib) * fraction, 6)

    def __contains__(self, instance_type: object) -> bool:
        return instance_type in self.on_demand_prices


@functools.cache
def default_prices() -> PriceTable:
    """The table loaded from `PRICES_FILE` (once per process)."""
    return PriceTable.load()
