"""The AWS instance-type provider on moto's full catalogue (``make bench``).

moto (with the harness's Pricing stub and spot prices) runs in this process; the provider
runs in a child process, so its resident memory is its own. Measured, for one AL2023
EC2NodeClass with three zones and the standard AMIs:

* **catalog build, cold**: DescribeInstanceTypes + DescribeInstanceTypeOfferings
  (`refresh_catalog`), then prices (`refresh_pricing`: GetProducts and spot history), then
  the first `list` (every type's labels, capacity and allocatable, then offerings);
* **warm**: `list` again with nothing changed (the memoised tuple: CPU per call, which
  should be ~0), a rebuild after one offering is marked out of capacity (offerings only),
  and a rebuild for a second NodeClass whose kubelet differs (shapes and offerings);
* **RSS** of the process before the catalogue and after it and the cached lists.

Results go to ``bench/results/instance_types.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

CHILD = r"""
import asyncio, json, resource, sys, time
from karpy.cloud.aws.clients import AWSClients
from karpy.cloud.aws.instancetypes import InstanceTypeProvider
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.settings import Settings
from tests.aws.instancetypes.factories import make_nodeclass, standard_amis

def rss_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

async def main(url, pricing_url):
    out = {}
    clients = AWSClients("us-west-2", endpoint_url=url, endpoints={"pricing": pricing_url},
                         credentials=("testing", "testing"))
    await clients.ec2()
    out["rss_before_mib"] = rss_mib()
    p = InstanceTypeProvider(clients, Settings(cluster_name="bench"),
                             unavailable=UnavailableOfferings())
    t = time.perf_counter()
    await p.refresh_catalog()
    out["catalog_fetch_s"] = time.perf_counter() - t
    t = time.perf_counter()
    await p.refresh_pricing()
    out["pricing_refresh_s"] = time.perf_counter() - t
    nodeclass = make_nodeclass(amis=standard_amis())
    t = time.perf_counter()
    types = p.list(nodeclass)
    out["first_list_s"] = time.perf_counter() - t
    out["instance_types"] = len(types)
    calls = 100_000
    c = time.process_time()
    for _ in range(calls):
        p.list(nodeclass)
    out["warm_list_cpu_us_per_call"] = (time.process_time() - c) / calls * 1e6
    p.unavailable.mark([("m5.large", "us-west-2a", "spot")])
    t = time.perf_counter(); p.list(nodeclass); out["list_after_ice_s"] = time.perf_counter() - t
    other = make_nodeclass(name="other", amis=standard_amis(), spec={"kubelet": {"maxPods": 110}})
    t = time.perf_counter(); p.list(other); out["list_new_nodeclass_s"] = time.perf_counter() - t
    out["rss_after_mib"] = rss_mib()
    out["rss_catalog_and_lists_mib"] = out["rss_after_mib"] - out["rss_before_mib"]
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    await clients.aclose()
    print(json.dumps(out))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def main(results_dir: Path) -> None:
    from karpy.sandbox.aws.server import MotoServer

    server = MotoServer().start()
    try:
        env = {**os.environ, "PYTHONPATH": str(Path.cwd()), "LOG_LEVEL": "warn"}
        done = subprocess.run([sys.executable, "-c", CHILD, server.url, server.pricing_url],
                              capture_output=True, text=True, env=env, check=False,
                              timeout=600)  # fmt: skip
    finally:
        server.stop()
    if done.returncode != 0:
        raise RuntimeError(f"bench child failed:\n{done.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    for key, value in figures.items():
        print(f"  {key:<32} {value:.3f}" if isinstance(value, float) else f"  {key:<32} {value}")
    (results_dir / "instance_types.json").write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    results = Path("bench/results")
    results.mkdir(parents=True, exist_ok=True)
    main(results)
