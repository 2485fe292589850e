"""The disruption methods, one module each, tried in Karpenter's order by the
disruption controller (`karpy.disruption.methods.ordered.methods_in_order`); each
implements `karpy.disruption.methods.method.Method` and turns candidates into at most
one `karpy.disruption.methods.command.Command` per pass (or none, with the reasons why
not):

1. emptiness (`emptiness`): empty nodes, deleted together;
2. drift (`drift`): drifted nodes, replaced one at a time;
3. multi-node consolidation (`multinode`): several underused nodes removed at once,
   replaced by at most one cheaper node;
4. single-node consolidation (`singlenode`): one underused node deleted or replaced by a
   cheaper one.

What the two consolidations share is in `consolidation`.

Expiration and repair are not methods: as in Karpenter v1 both are forceful, per-object
controllers with no candidates to choose between, no budget and no command to validate
(`karpy.disruption.expiration`, `karpy.disruption.repair`). Repair as a budgeted method
(as Karpenter 1.15 has it) is left for later.
"""
