"""The disruption methods, one module each, tried in Karpenter's order by the
disruption controller (`karpy.disruption.methods.ordered.methods_in_order`); each
implements `karpy.disruption.methods.method.Method` and turns candidates into at most
one `karpy.disruption.methods.command.Command` per pass (or none, with the reasons why
not):

0. node repair (`repair`, gate ``NodeRepair`` unless ``LEGACY_NODE_REPAIR``): unhealthy
   nodes, replaced (or rebooted) one at a time within the ``Unhealthy`` budget;
1. emptiness (`emptiness`): empty nodes, deleted together;
2. drift (`drift`, and `staticdrift` for static pools): drifted nodes, replaced one at a
   time;
3. multi-node consolidation (`multinode`): several underused nodes removed at once,
   replaced by at most one cheaper node;
4. single-node consolidation (`singlenode`): one underused node deleted or replaced by a
   cheaper one.

What the two consolidations share is in `consolidation`.

Expiration is not a method: as in Karpenter v1 it is a forceful, per-object controller
with no candidates to choose between, no budget and no command to validate
(`karpy.disruption.expiration`); nor is legacy node repair (`karpy.disruption.repair`).
"""
