"""DescribeSpotPriceHistory answering the `PriceTable`'s spot prices, patched into moto.

moto lists a row per offered (type, zone) but with ``SpotPrice "0.00001"`` and a 2006
timestamp, which makes every spot offering look free and stale. `install` replaces the
response handler so each row carries the table's deterministic price for its (type,
zone), stamped a minute ago, with the product description the request asked for (Karpenter
asks for ``Linux/UNIX`` and ``Linux/UNIX (Amazon VPC)``). moto's own filtering (by
``InstanceTypes`` and the ``instance-type`` / ``availability-zone`` filters) is kept; other
filters, which moto would treat as matching nothing, are ignored.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, Final

from moto.core.responses import ActionResult
from moto.ec2.responses.spot_instances import SpotInstances

from karpy.sandbox.aws.fleet import instance_shape

if TYPE_CHECKING:
    from karpy.sandbox.aws.prices import PriceTable

__all__ = ["install"]

MOTO_FILTERS: Final = frozenset({"instance-type", "availability-zone"})
DEFAULT_DESCRIPTION: Final = "Linux/UNIX (Amazon VPC)"


def _history(response: SpotInstances, prices: PriceTable) -> ActionResult:
    instance_types = response._get_param("InstanceTypes", [])
    descriptions = response._get_param("ProductDescriptions", []) or [DEFAULT_DESCRIPTION]
    filters = {
        key: values
        for key, values in response._filters_from_querystring().items()
        if key in MOTO_FILTERS
    }
    if "product-description" in response._filters_from_querystring():
        descriptions = response._filters_from_querystring()["product-description"]
    rows = response.ec2_backend.describe_spot_price_history(instance_types, filters)
    stamp = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=1)
    history: list[dict[str, Any]] = []
    for row in rows:
        name, zone = row["InstanceType"], row["Location"]
        vcpus, memory = instance_shape(name)
        price = prices.spot(name, zone, vcpus, memory)
        history.extend(
            {
                "InstanceType": name,
                "ProductDescription": description,
                "SpotPrice": f"{price:.6f}",
                "AvailabilityZone": zone,
                "Timestamp": stamp,
            }
            for description in descriptions
        )
    return ActionResult({"SpotPriceHistory": history})


def install(prices: PriceTable) -> None:
    """Patch moto's DescribeSpotPriceHistory handler to answer ``prices``."""

    def describe_spot_price_history(self: SpotInstances) -> ActionResult:
        return _history(self, prices)

    SpotInstances.describe_spot_price_history = describe_spot_price_history  # type: ignore[method-assign]
