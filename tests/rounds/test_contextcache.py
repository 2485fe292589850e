"""The compiled scheduling context takes the cloud provider's label answers as they are:
its well-known labels and restricted label domains beside Karpenter's, and no other
provider's."""

from __future__ import annotations

from collections.abc import Sequence

from karpy.apis.labels import AWS_WELL_KNOWN_LABELS, LABEL_AWS_INSTANCE_FAMILY
from karpy.apis.nodepool import NodePool
from karpy.cloud.fake.catalog import embedded_catalog
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.rounds.contextcache import ContextCache
from karpy.scheduling.instancetypes import InstanceType
from karpy.state import kinds
from karpy.state.cluster import ClusterState
from tests import factories as f

GPU_LABEL = "gpus.example.com/model"


class GPUCloud:
    """The part of a provider the context reads: its instance types and label answers."""

    name = "gpu"
    well_known_labels = frozenset({GPU_LABEL})
    restricted_label_domains = frozenset({"gpus.example.com"})

    async def get_instance_types(self, nodepool: NodePool) -> Sequence[InstanceType]:
        return embedded_catalog().instance_types


async def test_the_context_knows_the_providers_labels_and_domains_and_not_another_providers():
    state = ClusterState()
    pool = NodePool.from_dict(f.nodepool("default"))
    state.apply(kinds.NODEPOOL, [(pool.name, pool)], [])
    cache = ContextCache(GPUCloud(), UnavailableOfferings())  # type: ignore[arg-type]
    context = (await cache.get(state.snapshot())).context
    assert GPU_LABEL in context.well_known_labels
    assert LABEL_AWS_INSTANCE_FAMILY not in context.well_known_labels
    assert not AWS_WELL_KNOWN_LABELS & context.well_known_labels
    assert context.restricted_label_domains == {"karpenter.sh", "gpus.example.com"}
