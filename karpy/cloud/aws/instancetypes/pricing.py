"""Prices of offerings: on-demand per instance type, spot per instance type and zone.

The scheduler picks the cheapest offering that fits, so every offering needs a price,
and an offering without one is unavailable. Prices come, as in Karpenter, from:

* a **static on-demand table** shipped with karpy (``aws-on-demand-prices.json``; the
  region's table, else us-east-1's), in force from the start, so a controller that
  cannot reach the Pricing API still launches sensibly; with ``ISOLATED_VPC`` it is the
  only source;
* the **Pricing API** (GetProducts, Linux, shared tenancy and bare metal, in the region's
  pricing endpoint), refreshed every 12 hours; a failed refresh keeps the last prices;
* **DescribeSpotPriceHistory** for spot, the latest price per type and zone. Until the
  first spot refresh succeeds, a type's spot price in any zone is its on-demand price,
  as Karpenter assumes; afterwards a (type, zone) with no spot price has no spot offering.

`version` changes whenever any price changes, so instance-type lists are rebuilt only then.
"""

from __future__ import annotations

import asyncio
import functools
import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from karpy.cloud.aws.instancetypes.network import load_json
from karpy.log import describe_error, get_logger

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.cloud.aws.clients import AWSClients

__all__ = ["PricingProvider", "keep_latest", "parse_price_list", "static_on_demand_prices"]

log = get_logger("aws.pricing")

PRICES_FILE: Final = "aws-on-demand-prices.json"
FALLBACK_REGION: Final = "us-east-1"
SPOT_PRODUCTS: Final = ("Linux/UNIX", "Linux/UNIX (Amazon VPC)")
_COMMON_FILTERS: Final = (
    ("serviceCode", "AmazonEC2"),
    ("preInstalledSw", "NA"),
    ("operatingSystem", "Linux"),
    ("capacitystatus", "Used"),
    ("marketoption", "OnDemand"),
)
# (tenancy, productFamily): virtualised types, then bare metal.
_PRODUCT_QUERIES: Final = (("Shared", "Compute Instance"),
                           ("Dedicated", "Compute Instance (bare metal)"))  # fmt: skip


@functools.cache
def _static_tables() -> Mapping[str, Mapping[str, float]]:
    data = load_json(PRICES_FILE)
    return {region: {str(k): float(v) for k, v in table.items()}
            for region, table in data["onDemand"].items()}  # fmt: skip


def static_on_demand_prices(region: str) -> dict[str, float]:
    tables = _static_tables()
    return dict(tables.get(region) or tables[FALLBACK_REGION])


def parse_price_list(items: list[str], currency: str = "USD") -> dict[str, float]:
    """On-demand hourly prices from GetProducts ``PriceList`` entries (JSON strings)."""
    out: dict[str, float] = {}
    for raw in items:
        try:
            item = json.loads(raw)
        except ValueError:
            log.warning("skipped unparsable price item")
            continue
        name = ((item.get("product") or {}).get("attributes") or {}).get("instanceType")
        if not name:
            continue
        for term in ((item.get("terms") or {}).get("OnDemand") or {}).values():
            for dimension in (term.get("priceDimensions") or {}).values():
                try:
                    price = float((dimension.get("pricePerUnit") or {}).get(currency, ""))
                except ValueError:
                    continue
                if price:
                    out[str(name)] = price
    return out


class PricingProvider:
    def __init__(self, clients: AWSClients, *, region: str, isolated_vpc: bool) -> None:
        self.clients = clients
        self.region = region
        self.isolated_vpc = isolated_vpc
        self.version = 0
        self.on_demand_live = False  # the Pricing API has answered at least once
        self._on_demand = static_on_demand_prices(region)
        self._spot: dict[str, dict[str, float]] = {}
        self._spot_loaded = False
        self._lock = asyncio.Lock()

    # --- reading ------------------------------------------------------------------------

    def on_demand(self, instance_type: str) -> float | None:
        return self._on_demand.get(instance_type)

    def spot(self, instance_type: str, zone: str) -> float | None:
        if not self._spot_loaded:
            return self._on_demand.get(instance_type)
        return self._spot.get(instance_type, {}).get(zone)

    # --- refreshing ---------------------------------------------------------------------

    async def refresh(self) -> None:
        """Both refreshes; each failure is logged and leaves the last prices in place."""
        async with self._lock:
            for what, refresh in (("on-demand", self._refresh_on_demand),
                                  ("spot", self._refresh_spot)):  # fmt: skip
                try:
                    await refresh()
                except Exception as exc:  # any AWS failure: keep the old prices
                    log.warning("price refresh failed", prices=what, error=describe_error(exc))

    async def _refresh_on_demand(self) -> None:
        if self.isolated_vpc:
            return  # no public endpoints: the static table stays
        client = await self.clients.pricing()
        prices: dict[str, float] = {}
        currency = "CNY" if self.region.startswith("cn-") else "USD"
        for tenancy, product_family in _PRODUCT_QUERIES:
            terms = (("regionCode", self.region), *_COMMON_FILTERS, ("tenancy", tenancy),
                     ("productFamily", product_family))  # fmt: skip
            filters = [{"Field": f, "Type": "TERM_MATCH", "Value": v} for f, v in terms]
            paginator = client.get_paginator("get_products")
            async for page in paginator.paginate(ServiceCode="AmazonEC2", Filters=filters,
                                                 MaxResults=100):  # fmt: skip
                prices.update(parse_price_list(list(page.get("PriceList") or ()), currency))
        if not prices:
            raise RuntimeError("the Pricing API returned no on-demand prices")
        merged = {**self._on_demand, **prices}
        self.on_demand_live = True
        if merged != self._on_demand:
            self._on_demand = merged
            self.version += 1
            log.debug("updated on-demand prices", instanceTypes=len(prices))

    async def _refresh_spot(self) -> None:
        ec2 = await self.clients.ec2()
        latest: dict[tuple[str, str], tuple[datetime, float]] = {}
        paginator = ec2.get_paginator("describe_spot_price_history")
        pages = paginator.paginate(ProductDescriptions=list(SPOT_PRODUCTS),
                                   StartTime=datetime.now(UTC), MaxResults=2000)  # fmt: skip
        async for page in pages:
            for row in page.get("SpotPriceHistory") or ():
                keep_latest(latest, row)
        if not latest:
            raise RuntimeError("DescribeSpotPriceHistory returned no prices")
        spot: dict[str, dict[str, float]] = {}
        for (name, zone), (_, price) in latest.items():
            spot.setdefault(name, {})[zone] = price
        if not self._spot_loaded or spot != self._spot:
            self._spot = spot
            self._spot_loaded = True
            self.version += 1
            log.debug("updated spot prices", instanceTypes=len(spot), offerings=len(latest))


def keep_latest(latest: dict[tuple[str, str], tuple[datetime, float]], row: Any) -> None:
    """Fold one DescribeSpotPriceHistory row into ``latest`` if it is the newest seen."""
    try:
        price = float(row["SpotPrice"])
        stamp = row["Timestamp"]
        key = (str(row["InstanceType"]), str(row["AvailabilityZone"]))
    except (KeyError, TypeError, ValueError):
        return
    seen = latest.get(key)
    if seen is None or stamp >= seen[0]:
        latest[key] = (stamp, price)
