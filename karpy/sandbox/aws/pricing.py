"""`PricingStub`: a loopback AWS Pricing API (``GetProducts``) answering the `PriceTable`.

moto has no Pricing backend (its server answers HTTP 500 for ``api.pricing``), yet the
AWS provider refreshes on-demand prices from ``GetProducts`` and must be tested against
answers shaped exactly as AWS shapes them: the AWSPriceListService JSON 1.1 protocol
(``X-Amz-Target: AWSPriceListService.GetProducts``), ``PriceList`` as a list of JSON
*strings*, each a product with ``attributes`` and ``terms.OnDemand.<sku>.priceDimensions
.<rate>.pricePerUnit.USD``, and ``NextToken`` paging at ``MaxResults`` (100 by default).

Every instance type of the table becomes one product for whatever ``regionCode`` is
asked (the table holds one region's prices). ``TERM_MATCH`` filters match product
attributes exactly, as AWS does; bare-metal types are listed as AWS lists them
(``productFamily: Compute Instance (bare metal)``, ``tenancy: Dedicated``), so a client
that forgets the second query Karpenter makes for them misses them here too. The server
runs in a thread (stdlib ``ThreadingHTTPServer``) so it outlives any one event loop, as a
session-scoped pytest fixture needs.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from typing import TYPE_CHECKING, Any, Final

from karpy.sandbox.aws.fleet import instance_shape

if TYPE_CHECKING:
    from karpy.sandbox.aws.prices import PriceTable

__all__ = ["PricingStub", "get_products", "product_document"]

TARGET_PREFIX: Final = "AWSPriceListService."
DEFAULT_PAGE: Final = 100
ON_DEMAND_TERM: Final = "JRTCKXETXF"
RATE_CODE: Final = "6YS6EN2CT7"
PUBLICATION: Final = "2026-07-18T00:00:00Z"


def _sku(instance_type: str, region: str) -> str:
    return hashlib.sha256(f"{instance_type}/{region}".encode()).hexdigest()[:16].upper()


def product_document(instance_type: str, region: str, prices: PriceTable) -> dict[str, Any]:
    """One ``PriceList`` entry (decoded) as AWS returns it for a Linux on-demand type."""
    vcpus, memory_mib = instance_shape(instance_type)
    metal = instance_type.endswith(".metal") or ".metal-" in instance_type
    sku = _sku(instance_type, region)
    price = prices.on_demand(instance_type, vcpus, memory_mib)
    term = f"{sku}.{ON_DEMAND_TERM}"
    return {
        "product": {
            "productFamily": "Compute Instance (bare metal)" if metal else "Compute Instance",
            "attributes": {
                "servicecode": "AmazonEC2",
                "serviceCode": "AmazonEC2",
                "regionCode": region,
                "instanceType": instance_type,
                "instanceFamily": "General purpose",
                "vcpu": str(vcpus),
                "memory": f"{memory_mib / 1024:g} GiB",
                "operatingSystem": "Linux",
                "preInstalledSw": "NA",
                "tenancy": "Dedicated" if metal else "Shared",
                "capacitystatus": "Used",
                "licenseModel": "No License required",
                "marketoption": "OnDemand",
                "usagetype": f"BoxUsage:{instance_type}",
                "operation": "RunInstances",
                "productFamily": ("Compute Instance (bare metal)" if metal else "Compute Instance"),
            },
            "sku": sku,
        },
        "serviceCode": "AmazonEC2",
        "terms": {
            "OnDemand": {
                term: {
                    "priceDimensions": {
                        f"{term}.{RATE_CODE}": {
                            "unit": "Hrs",
                            "endRange": "Inf",
                            "description": f"${price} per On Demand Linux {instance_type} "
                            "Instance Hour",
                            "appliesTo": [],
                            "rateCode": f"{term}.{RATE_CODE}",
                            "beginRange": "0",
                            "pricePerUnit": {"USD": f"{price:.10f}"},
                        }
                    },
                    "sku": sku,
                    "effectiveDate": PUBLICATION,
                    "offerTermCode": ON_DEMAND_TERM,
                    "termAttributes": {},
                }
            }
        },
        "version": "20260718000000",
        "publicationDate": PUBLICATION,
    }


def get_products(
    request: dict[str, Any],
    prices: PriceTable,
    documents: dict[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """The ``GetProducts`` answer to a decoded request body; ``documents`` caches each
    region's products between calls (paging through 1,400 types asks 15 times)."""
    filters = {
        str(f.get("Field")): str(f.get("Value"))
        for f in request.get("Filters", [])
        if f.get("Type", "TERM_MATCH") == "TERM_MATCH"
    }
    region = filters.get("regionCode", "us-east-1")
    cache = {} if documents is None else documents
    if region not in cache:
        cache[region] = [
            product_document(name, region, prices) for name in sorted(prices.on_demand_prices)
        ]
    matching = [
        document
        for document in cache[region]
        if all(
            document["product"]["attributes"].get(field) == value
            for field, value in filters.items()
        )
    ]
    start = int(request.get("NextToken") or 0)
    size = int(request.get("MaxResults") or DEFAULT_PAGE)
    page = matching[start : start + size]
    answer: dict[str, Any] = {
        "FormatVersion": request.get("FormatVersion", "aws_v1"),
        "PriceList": [json.dumps(document) for document in page],
    }
    if start + size < len(matching):
        answer["NextToken"] = str(start + size)
    return answer


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        target = self.headers.get("X-Amz-Target", "")
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._answer(400, {"__type": "SerializationException", "message": "bad JSON"})
            return
        if target == f"{TARGET_PREFIX}GetProducts":
            self._answer(200, get_products(request, self.server.prices, self.server.documents))
        elif target == f"{TARGET_PREFIX}DescribeServices":
            services = [{"ServiceCode": "AmazonEC2", "AttributeNames": ["instanceType"]}]
            self._answer(200, {"Services": services, "FormatVersion": "aws_v1"})
        else:
            message = f"the sandbox pricing stub does not serve {target or 'this request'}"
            self._answer(400, {"__type": "UnknownOperationException", "message": message})

    def _answer(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-amzn-RequestId", _sku(str(status), str(len(data))))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the sandbox logs through structlog, not stderr lines per request."""


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], prices: PriceTable) -> None:
        super().__init__(address, _Handler)
        self.prices = prices
        self.documents: dict[str, list[dict[str, Any]]] = {}


class PricingStub:
    """The Pricing API stub on ``host:port`` (0: any free port); `url` once started."""

    def __init__(self, prices: PriceTable, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = _Server((host, port), prices)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="pricing-stub", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
