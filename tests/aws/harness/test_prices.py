"""Spot price history and the Pricing API stub answer the sandbox's one price table."""

from __future__ import annotations

import datetime
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from karpy.cloud.aws.clients import AWSClients
    from karpy.sandbox.aws.seed import Account
    from karpy.sandbox.aws.server import MotoServer

# The filters Karpenter's pricing provider sends (pkg/providers/pricing/pricing.go).
KARPENTER_FILTERS = [
    {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-west-2"},
    {"Type": "TERM_MATCH", "Field": "serviceCode", "Value": "AmazonEC2"},
    {"Type": "TERM_MATCH", "Field": "preInstalledSw", "Value": "NA"},
    {"Type": "TERM_MATCH", "Field": "operatingSystem", "Value": "Linux"},
    {"Type": "TERM_MATCH", "Field": "capacitystatus", "Value": "Used"},
    {"Type": "TERM_MATCH", "Field": "marketoption", "Value": "OnDemand"},
]
SHARED = [
    {"Type": "TERM_MATCH", "Field": "tenancy", "Value": "Shared"},
    {"Type": "TERM_MATCH", "Field": "productFamily", "Value": "Compute Instance"},
]
METAL = [
    {"Type": "TERM_MATCH", "Field": "tenancy", "Value": "Dedicated"},
    {"Type": "TERM_MATCH", "Field": "productFamily", "Value": "Compute Instance (bare metal)"},
]


async def test_spot_price_history_is_priced_per_type_and_zone(
    aws_account: Account, aws_clients: AWSClients, moto_server: MotoServer
) -> None:
    ec2 = await aws_clients.ec2()
    answer = await ec2.describe_spot_price_history(
        InstanceTypes=["m5.large"], ProductDescriptions=["Linux/UNIX (Amazon VPC)"]
    )
    rows = {r["AvailabilityZone"]: float(r["SpotPrice"]) for r in answer["SpotPriceHistory"]}
    assert set(rows) >= {"us-west-2a", "us-west-2b", "us-west-2c"}
    on_demand = moto_server.prices.on_demand("m5.large")
    assert on_demand == 0.096
    for zone, price in rows.items():
        assert price == moto_server.prices.spot("m5.large", zone)
        assert 0.30 * on_demand <= price <= 0.40 * on_demand
    assert len(set(rows.values())) > 1  # zones differ
    stamp = answer["SpotPriceHistory"][0]["Timestamp"]
    assert abs(datetime.datetime.now(datetime.UTC) - stamp) < datetime.timedelta(hours=1)


async def test_pricing_stub_answers_karpenters_query_through_aiobotocore(
    aws_account: Account, aws_clients: AWSClients
) -> None:
    pricing = await aws_clients.pricing()
    prices: dict[str, float] = {}
    pages = 0
    token = None
    while True:
        kwargs: dict[str, str] = {"NextToken": token} if token else {}
        answer = await pricing.get_products(
            ServiceCode="AmazonEC2",
            Filters=KARPENTER_FILTERS + SHARED,
            MaxResults=100,
            **kwargs,
        )
        pages += 1
        for raw in answer["PriceList"]:
            item = json.loads(raw)
            for term in item["terms"]["OnDemand"].values():
                for dimension in term["priceDimensions"].values():
                    prices[item["product"]["attributes"]["instanceType"]] = float(
                        dimension["pricePerUnit"]["USD"]
                    )
        token = answer.get("NextToken")
        if not token:
            break
    assert pages > 5
    assert prices["m5.large"] == 0.096
    assert "m5.metal" not in prices  # bare metal is listed as Dedicated, as in AWS
    metal = await pricing.get_products(ServiceCode="AmazonEC2", Filters=KARPENTER_FILTERS + METAL)
    names = {json.loads(raw)["product"]["attributes"]["instanceType"] for raw in metal["PriceList"]}
    assert "m5.metal" in names or metal.get("NextToken")
