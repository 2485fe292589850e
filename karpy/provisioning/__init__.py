"""Provisioning: pending pods in, NodeClaims out.

A `karpy.reconcile.BatchingSource` turns a stream of "this pod needs a home" triggers
(`Provisioner.batch_items`) into windows (``BATCH_IDLE_DURATION`` /
``BATCH_MAX_DURATION``); when one closes, the `Provisioner`
takes a snapshot of cluster state, schedules the pods pending now against existing
nodes, in-flight NodeClaims and new capacity (`karpy.scheduling`), and creates the
NodeClaims it decided on. ``docs/provisioning.md`` tells the story end to end.
"""
