"""The names controllers key their work by, one type per kind of object.

A reconcile key is a string on the wire (the snapshot's maps are keyed by name), but a
NodeClaim's name and a Node's are not interchangeable: `NodeClaimName` and `NodeName`
let mypy tell them apart in ``keys_for``, ``all_keys`` and ``reconcile``, at no cost at
run time (a `NewType` is the string itself). Each controller's ``K`` is one of these,
or a record of its own (`karpy.reconcile`).
"""

from __future__ import annotations

from typing import NewType

__all__ = ["LeaseKey", "NodeClaimName", "NodeClassName", "NodeName", "NodePoolName"]

NodeClaimName = NewType("NodeClaimName", str)
NodeName = NewType("NodeName", str)
NodePoolName = NewType("NodePoolName", str)
NodeClassName = NewType("NodeClassName", str)  # a NodeClass of any kind a provider serves
LeaseKey = NewType("LeaseKey", str)  # "<namespace>/<name>", as the node-lease map keys it
