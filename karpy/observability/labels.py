"""Label values as Karpenter's metrics spell them."""

from __future__ import annotations

__all__ = ["snake_case"]


def snake_case(name: str) -> str:
    """``WhenEmptyOrUnderutilized`` -> ``when_empty_or_underutilized`` (Karpenter's
    ``pretty.ToSnakeCase``, for condition types, policies and reasons in labels)."""
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name))
