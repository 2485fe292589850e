"""What a scheduling round needs, for provisioning and disruption alike: the round's inputs
built from one state snapshot (`inputs`), the compiled NodePool and instance-type context,
cached per version (`contextcache`), a solve on a worker thread that stops when its
caller is cancelled (`cancellable`), and the NodeClaim a planned claim becomes
(`nodeclaims`). Provisioning places pending pods with them; disruption asks the same
questions of a cluster without its candidates. Neither controller imports the other."""
