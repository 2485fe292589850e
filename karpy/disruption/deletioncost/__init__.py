"""The pod-deletion-cost controller (gate ``PodDeletionCostManagement``): ReplicaSet
scale-downs steered toward the nodes disruption would remove first. ``ranking`` decides
the values, ``controller`` writes them; see ``docs/disruption.md``."""
