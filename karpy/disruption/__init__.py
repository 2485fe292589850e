"""Voluntary disruption: remove capacity that is empty, underused, drifted or expired,
within the NodePools' disruption budgets. See ``docs/disruption.md``."""
