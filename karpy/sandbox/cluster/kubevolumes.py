"""VolumeBinding, the basics the sandbox needs: does a pod's claim let it onto a node?

Follows the outcomes of ``pkg/scheduler/framework/plugins/volumebinding/`` for the cases
the sandbox produces, not its machinery (no binding, no provisioning — the sandbox's
claims are bound by whoever creates them):

- a claim that does not exist fails the pod on every node (``persistentvolumeclaim "x"
  not found``; for an ephemeral volume, waiting for the ephemeral volume controller);
- a claim bound to a PersistentVolume keeps the pod to nodes the volume's required node
  affinity accepts ("node(s) had volume node affinity conflict");
- an unbound claim of a class with ``volumeBindingMode: Immediate`` (or no class) fails
  the pod ("pod has unbound immediate PersistentVolumeClaims");
- an unbound claim of a ``WaitForFirstConsumer`` class fits nodes the class's
  ``allowedTopologies`` accept ("node(s) didn't find available persistent volumes to
  bind").

Not modelled: CSI attach limits (NodeVolumeLimits) and VolumeZone's zone labels on PVs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from karpy.sandbox.cluster import facts
from karpy.sandbox.cluster.nodematch import term_matches

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from karpy.sandbox.apiserver.store import Entry
    from karpy.sandbox.cluster.kubepod import NodeSpec, PodInfo

CONFLICT = "node(s) had volume node affinity conflict"
NO_VOLUME = "node(s) didn't find available persistent volumes to bind"
IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


@attrs.frozen(slots=True)
class VolumeView:
    claims: dict[tuple[str, str], facts.Obj] = attrs.Factory(dict)
    volumes: dict[str, facts.Obj] = attrs.Factory(dict)
    classes: dict[str, facts.Obj] = attrs.Factory(dict)

    @classmethod
    def build(
        cls, claims: Iterable[Entry], volumes: Iterable[Entry], classes: Iterable[Entry]
    ) -> VolumeView:
        return cls(
            {(str(e.obj["metadata"].get("namespace")), str(e.obj["metadata"]["name"])): e.obj
             for e in claims},
            {str(e.obj["metadata"]["name"]): e.obj for e in volumes},
            {str(e.obj["metadata"]["name"]): e.obj for e in classes},
        )  # fmt: skip

    def prefilter(self, pod: PodInfo) -> str | None:
        """A reason no node can take the pod, or None."""
        for name in pod.claims:
            claim = self.claims.get((pod.namespace, name))
            if claim is None:
                return f'persistentvolumeclaim "{name}" not found'
            if facts.spec(claim).get("volumeName"):
                continue
            mode = facts.spec(self._class(claim)).get("volumeBindingMode", "Immediate")
            if mode != "WaitForFirstConsumer":
                return IMMEDIATE
        return None

    def _class(self, claim: facts.Obj) -> facts.Obj:
        return self.classes.get(str(facts.spec(claim).get("storageClassName") or ""), {})

    def filter_reason(self, pod: PodInfo, node: NodeSpec) -> str | None:
        for name in pod.claims:
            claim = self.claims[(pod.namespace, name)]
            volume_name = facts.spec(claim).get("volumeName")
            if volume_name:
                volume = self.volumes.get(str(volume_name), {})
                required = ((facts.spec(volume).get("nodeAffinity") or {}).get("required")) or {}
                terms: Sequence[Any] = required.get("nodeSelectorTerms") or ()
                if terms and not any(term_matches(t, node.labels, node.name) for t in terms):
                    return CONFLICT
                continue
            allowed = self._class(claim).get("allowedTopologies") or ()
            if allowed and not any(_topology_matches(t, node.labels) for t in allowed):
                return NO_VOLUME
        return None


def _topology_matches(term: dict[str, Any], labels: dict[str, str]) -> bool:
    return all(
        labels.get(str(e.get("key"))) in (e.get("values") or ())
        for e in term.get("matchLabelExpressions") or ()
    )
