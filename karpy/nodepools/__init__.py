"""Controllers that keep NodePools' own status and annotations current: readiness
(``NodeClassReady``, ``ValidationSucceeded``, ``Ready``), the counter
(``status.resources``, ``status.nodes``) and the template hash annotation that drift
detection compares NodeClaims with."""
