"""What happens to a NodeClaim after it is created: launch, registration,
initialization, liveness, termination (cordon and drain), and the garbage collection of
what is left behind (instances without NodeClaims, NodeClaims without instances, node
leases without nodes). Every controller here is a `karpy.reconcile.Controller`."""
