"""The AWS side of the sandbox: moto on loopback, made to behave like EC2 where karpy cares.

`server.MotoServer` serves moto with throttling, a faithful instant CreateFleet
(`fleet`), real-looking spot prices (`spotprices`) and a Pricing API stub (`pricing`), all
priced from one `prices.PriceTable`; `faults.EC2Faults` is what tests (or the sandbox's
``/sandbox/v1/aws/faults`` route) use to take capacity away or throttle calls;
`seed.seed_account` makes the account of an EKS cluster (network, role, cluster, the
EKS-optimized AMIs and their SSM parameters, `amis`). The kubelet stand-in for EC2
instances (`kubelet`) turns running instances into Nodes for ``karpy sandbox cluster
--cloud aws``. moto's state is per process: everything here runs moto in-process.

`CATALOG_CACHE_ENV` is defined here, not in `server`, so that what only sets it (the test
suite's process helpers) need not import moto.
"""

from __future__ import annotations

from typing import Final

# A directory where moto servers keep their rendered catalogue answers (server.CatalogCache).
CATALOG_CACHE_ENV: Final = "KARPY_SANDBOX_CATALOG_CACHE"
