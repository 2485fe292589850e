"""Rendering a round's `Results` as simulate's JSON document, YAML, or a table.

The JSON document is the contract (``shared/specs/simulate.md``); YAML is the same data,
and the table is for people: one row per new node, then existing nodes that receive pods,
then unschedulable and deferred pods with their reasons. Every list is in a fixed order so
the same input always renders to the same bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import yaml

from karpy.scheduling.resources import format_resources

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.scheduling.results import NodeClaimPlan, Results

__all__ = ["render_json", "render_table", "render_yaml", "to_document"]


def _price(value: float) -> float:
    return round(value, 10)


def _claim(plan: NodeClaimPlan) -> dict[str, Any]:
    return {
        "name": plan.name,
        "nodePool": plan.nodepool,
        "instanceType": plan.instance_type.name,
        "zone": plan.offering.zone,
        "capacityType": plan.offering.capacity_type,
        "price": _price(plan.offering.price),
        "instanceTypeOptions": [it.name for it, _ in plan.instance_type_options()],
        "labels": dict(sorted(plan.labels.items())),
        "requests": format_resources(plan.requests),
        "pods": sorted(p.key for p in plan.pods),
    }


def to_document(results: Results, *, seconds: float | None = None) -> dict[str, Any]:
    """The ``-o json`` document."""
    claims = [_claim(plan) for plan in results.new_nodeclaims]
    existing = [
        {"name": n.name, "pods": sorted(p.key for p in n.pods)}
        for n in sorted(results.existing_nodes, key=lambda n: n.name)
    ]
    unschedulable = [{"pod": u.pod.key, "reason": u.render()} for u in results.unschedulable]
    return {
        "nodeClaims": claims,
        "existingNodes": existing,
        "unschedulable": unschedulable,
        "stats": {
            "pendingPods": results.pods,
            "seconds": round(results.seconds if seconds is None else seconds, 6),
            "scheduled": results.scheduled,
            "deferred": len(results.deferred),
            "deferredPods": [p.key for p in results.deferred],
            "equivalenceClasses": results.shapes,
            "newNodeClaims": len(results.new_nodeclaims),
            "totalPrice": _price(results.total_price),
        },
    }


def render_json(document: dict[str, Any]) -> str:
    return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n"


def render_yaml(document: dict[str, Any]) -> str:
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=False)


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def render_table(document: dict[str, Any]) -> str:
    lines: list[str] = []
    claims = document["nodeClaims"]
    if claims:
        rows = [
            [
                "NODECLAIM",
                "NODEPOOL",
                "INSTANCE TYPE",
                "ZONE",
                "CAPACITY",
                "PRICE",
                "PODS",
                "OPTIONS",
            ]
        ]
        rows.extend(
            [
                c["name"],
                c["nodePool"],
                c["instanceType"],
                c["zone"],
                c["capacityType"],
                f"{c['price']:.4f}",
                str(len(c["pods"])),
                str(len(c["instanceTypeOptions"])),
            ]
            for c in claims
        )
        lines += _table(rows)
    else:
        lines.append(_no_new_nodes(document))
    existing = document["existingNodes"]
    if existing:
        lines.append("")
        lines += _table(
            [["EXISTING NODE", "PODS"]] + [[n["name"], str(len(n["pods"]))] for n in existing]
        )
    unschedulable = document["unschedulable"]
    if unschedulable:
        lines.append("")
        lines.append(f"Unschedulable pods ({len(unschedulable)}):")
        lines += [f"  {u['pod']}: {u['reason']}" for u in unschedulable]
    stats = document["stats"]
    if stats.get("deferred"):
        lines.append("")
        lines.append(f"Deferred pods ({stats['deferred']}), the time budget ran out:")
        lines += [f"  {p}" for p in stats.get("deferredPods", ())]
    lines.append("")
    lines.append(
        f"{stats['pendingPods']} pods considered, {stats['scheduled']} placed, "
        f"{len(claims)} new nodes costing {stats['totalPrice']:.4f}/hour, "
        f"{stats['seconds']:.3f}s"
    )
    return "\n".join(lines) + "\n"


def _no_new_nodes(document: Mapping[str, Any]) -> str:
    """What happened when no node is to be launched: needed or not, say which."""
    stuck = len(document["unschedulable"]) + int(document["stats"].get("deferred") or 0)
    if not stuck:
        return "No new nodes needed."
    placed = sum(len(n["pods"]) for n in document["existingNodes"])
    cannot = f"{stuck} pod{'s' if stuck != 1 else ''} cannot be placed"
    fits = f", {placed} fit on existing nodes" if placed else ""
    return f"0 new nodes; {cannot}{fits}."
