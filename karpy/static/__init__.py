"""Static NodePools (``spec.replicas``, behind the ``StaticCapacity`` feature gate): a
pool that keeps a fixed number of nodes whatever the pending pods, scaled with
``kubectl scale nodepool``. `karpy.static.controller` keeps the count;
`karpy.static.scaledown` says which nodes go first when there are too many."""
