"""User data per AMI family: what makes a fresh instance join the cluster as its NodeClaim
expects (cluster endpoint and CA, kubelet settings, labels, taints), merged with the node
class's own ``userData`` the way Karpenter merges them.

`render_user_data` picks the family's renderer and returns the document as text; the
launch template stores it base64-encoded. Windows families are not supported by karpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.cloud.aws.launch.userdata.al2 import render_al2
from karpy.cloud.aws.launch.userdata.al2023 import render_al2023
from karpy.cloud.aws.launch.userdata.bottlerocket import render_bottlerocket
from karpy.cloud.aws.launch.userdata.custom import render_custom
from karpy.cloud.aws.launch.userdata.options import BootstrapOptions

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["BootstrapOptions", "render_user_data"]

_RENDERERS: Final[dict[str, Callable[[BootstrapOptions], str]]] = {
    "AL2": render_al2,
    "AL2023": render_al2023,
    "Bottlerocket": render_bottlerocket,
    "Custom": render_custom,
}


def render_user_data(family: str, opts: BootstrapOptions) -> str:
    """The user data of an instance of AMI ``family`` (``AL2023``, ``AL2``,
    ``Bottlerocket``, ``Custom``); `ValueError` for a family karpy cannot bootstrap."""
    renderer = _RENDERERS.get(family)
    if renderer is None:
        raise ValueError(f"AMI family {family!r} is not supported by karpy's AWS provider")
    return renderer(opts)
