"""Karpenter's v1 API types (NodePool, NodeClaim, NodeOverlay, EC2NodeClass) as attrs
models: parsing from plain dicts with Karpenter's defaults, validation into field-path
errors, and printing back to dicts."""

from __future__ import annotations
