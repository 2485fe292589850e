"""`SandboxAWS`: the AWS account beside a `SandboxCluster` (``karpy sandbox cluster --cloud aws``).

It starts moto in this process (`MotoServer`, with its Pricing stub), seeds it as the
account of EKS cluster ``cluster_name`` (`seed_account`), and runs the EC2 kubelet
stand-in (`EC2Kubelets`) on the cluster, so an AWS-provider karpy pointed at
`endpoint_url` sees instances it launches become Nodes. `controller_env` is the
environment such a ``karpy controller`` needs.

The fault injector is reachable from other processes at ``POST
<endpoint_url>/sandbox/v1/aws/faults`` and also on the cluster's API server, beside its
``/sandbox/v1/faults``, at ``/sandbox/v1/aws/faults`` (``kubectl create --raw``); both
take `EC2Faults.apply`'s JSON, e.g. ``{"ice": [["m5.large", "us-west-2a", "spot"]],
"throttle": {"CreateFleet": 3}}``, and answer the current faults.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from aiohttp import web

from karpy.cloud.aws.clients import AWSClients
from karpy.sandbox.apiserver.discovery import KUBERNETES_VERSION
from karpy.sandbox.aws.kubelet import EC2Kubelets
from karpy.sandbox.aws.seed import seed_account
from karpy.sandbox.aws.server import FAULTS_PATH, MotoServer

if TYPE_CHECKING:
    from karpy.sandbox.aws.seed import Account
    from karpy.sandbox.cluster import SandboxCluster

__all__ = ["CREDENTIALS", "DEFAULT_REGION", "SandboxAWS"]

DEFAULT_REGION: Final = "us-west-2"
CREDENTIALS: Final = ("testing", "testing")


class SandboxAWS:
    """moto + seeded account + EC2 kubelet stand-in for ``cluster`` (module docstring)."""

    def __init__(
        self,
        cluster: SandboxCluster,
        *,
        cluster_name: str = "sandbox",
        region: str = DEFAULT_REGION,
        moto_port: int = 0,
        kubelet_interval: float = 1.0,
    ) -> None:
        self.cluster = cluster
        self.cluster_name = cluster_name
        self.region = region
        self.moto = MotoServer(port=moto_port)
        self.kubelet_interval = kubelet_interval
        self.clients: AWSClients | None = None
        self.kubelets: EC2Kubelets | None = None
        self.account: Account | None = None

    @property
    def endpoint_url(self) -> str:
        return self.moto.url

    @property
    def pricing_url(self) -> str:
        return self.moto.pricing_url

    async def start(self) -> SandboxAWS:
        self.moto.start()
        self.clients = AWSClients(
            self.region,
            endpoint_url=self.moto.url,
            endpoints={"pricing": self.moto.pricing_url},
            credentials=CREDENTIALS,
        )
        # The AMIs and SSM parameters are those of the emulator's Kubernetes version, the
        # version karpy's NodeClass controller reads from /version to resolve aliases.
        version = f"{KUBERNETES_VERSION['major']}.{KUBERNETES_VERSION['minor']}"
        self.account = await seed_account(self.clients, self.cluster_name, k8s_version=version)
        self.kubelets = EC2Kubelets(
            self.clients, self.cluster.access, self.cluster_name, interval=self.kubelet_interval
        )
        await self.kubelets.start()
        self._serve_faults_on_apiserver()
        return self

    async def stop(self) -> None:
        if self.kubelets is not None:
            await self.kubelets.stop()
        if self.clients is not None:
            await self.clients.aclose()
        self.moto.stop()

    def controller_env(self, cluster_endpoint: str) -> dict[str, str]:
        """What ``karpy controller`` needs to use this account (``CLOUD_PROVIDER=aws``)."""
        return {
            "CLOUD_PROVIDER": "aws",
            "AWS_ENDPOINT_URL": self.moto.url,
            "AWS_ENDPOINT_URL_PRICING": self.moto.pricing_url,
            "AWS_REGION": self.region,
            "AWS_ACCESS_KEY_ID": CREDENTIALS[0],
            "AWS_SECRET_ACCESS_KEY": CREDENTIALS[1],
            "CLUSTER_NAME": self.cluster_name,
            "CLUSTER_ENDPOINT": cluster_endpoint,
        }

    def banner(self) -> list[str]:
        """The lines ``karpy sandbox cluster --cloud aws`` prints beside ``kubeconfig:``."""
        return [
            f"AWS_ENDPOINT_URL={self.moto.url}",
            f"AWS_ENDPOINT_URL_PRICING={self.moto.pricing_url}",
            f"AWS_REGION={self.region}",
            f"CLUSTER_NAME={self.cluster_name}",
        ]

    def _serve_faults_on_apiserver(self) -> None:
        """Answer ``/sandbox/v1/aws/faults`` on the API server too. The emulator has one
        handler for ``/sandbox/`` paths and no registry of routes, so this wraps that
        handler on this cluster's `Controls` object (nothing global is touched)."""
        controls = self.cluster.server.controls
        inner = controls.sandbox_faults
        faults = self.moto.faults

        async def sandbox_routes(request: web.Request, path: str) -> web.StreamResponse:
            if path != FAULTS_PATH:
                return await inner(request, path)
            if request.method == "POST":
                raw = await request.read()
                try:
                    body: Any = json.loads(raw or b"{}")
                    if not isinstance(body, dict):
                        raise ValueError("the body must be a JSON object")
                    faults.apply(body)
                except ValueError as error:
                    return web.json_response({"error": str(error)}, status=400)
                return web.json_response(faults.describe(), status=201)
            return web.json_response(faults.describe())

        controls.sandbox_faults = sandbox_routes  # type: ignore[method-assign]
