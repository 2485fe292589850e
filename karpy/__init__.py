"""karpy: a Kubernetes node autoscaler in Python that serves Karpenter's v1 API."""

from __future__ import annotations

__version__ = "0.1.0"
