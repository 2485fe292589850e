"""Cloud providers: what launches, finds and terminates the instances behind NodeClaims.

`karpy.cloud.provider` defines the `CloudProvider` protocol the controllers call and the
records that cross it; `karpy.cloud.errors` the typed errors; `karpy.cloud.unavailable`
the insufficient-capacity cache shared by launches and scheduling. Implementations live
in sub-packages: `fake` (an instance is a Node object, as Karpenter's KWOK provider) and,
with the AWS provider, `aws`.
"""
