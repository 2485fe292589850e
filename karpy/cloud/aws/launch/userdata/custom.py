"""Custom AMI family: the node class's ``userData`` is the user data, verbatim.

Karpenter adds nothing for ``amiFamily: Custom``; the user's bootstrap must join the
cluster itself (and register the ``karpenter.sh/unregistered`` taint)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from karpy.cloud.aws.launch.userdata.options import BootstrapOptions

__all__ = ["render_custom"]


def render_custom(opts: BootstrapOptions) -> str:
    return opts.custom_user_data or ""
