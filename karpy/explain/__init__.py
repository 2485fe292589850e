"""``karpy explain``: why karpy does what it does, answered from a live cluster or a
snapshot. A command, not a controller: it may use every package below it (disruption's
reasoning, the provisioning context, a cloud's catalog) and nothing imports it."""
