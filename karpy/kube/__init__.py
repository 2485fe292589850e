"""karpy's door to the Kubernetes API: configuration and a raw HTTP transport, the write
client, list+watch informers, leader election and the node-lease garbage collector.

Raw Kubernetes dicts live only inside this package: informers project every object into a
slim record (`karpy.state.projections`) as it arrives, and the write client returns dicts
to callers that asked for them. See ``docs/runtime.md``.
"""
