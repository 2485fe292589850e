"""ClusterState: karpy's in-memory copy of the cluster, fed by the informers, read by
every controller through immutable snapshots (``docs/runtime.md``)."""
