"""`karpy controller`: the process (`karpy.operator.process`: settings, signals, running
components, a clean stop) and its wiring (`karpy.operator.wiring`: transports,
informers, cluster state, the leader elector and the controllers it gates, the HTTP
servers)."""

from karpy.operator.process import (
    ComponentFailed,
    Operator,
    add_arguments,
    controller,
    run,
    serve,
)

__all__ = ["ComponentFailed", "Operator", "add_arguments", "controller", "run", "serve"]
