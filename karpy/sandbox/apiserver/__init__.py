"""An emulator of kube-apiserver for karpy's tests, demos and `karpy sandbox`.

There is no kube-apiserver or Docker on the machines karpy is built and tested on, so
every component test talks to this emulator over real HTTP. It models the semantics a
controller depends on (resourceVersions and conflicts, watches with history, bookmarks
and 410s, selectors, the patch types, finalizers, the status split, eviction and PDBs,
CRDs with schemas) rather than a fixed script; see docs/apiserver-emulator.md.
"""

from __future__ import annotations

from karpy.sandbox.apiserver.errors import APIError
from karpy.sandbox.apiserver.faults import Fault, Faults
from karpy.sandbox.apiserver.pods import PodTermination
from karpy.sandbox.apiserver.server import APIServer, load_manifests

__all__ = ["APIError", "APIServer", "Fault", "Faults", "PodTermination", "load_manifests"]
