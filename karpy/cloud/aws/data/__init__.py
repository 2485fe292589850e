"""Data files shipped with the AWS provider, read with `importlib.resources`:
``aws-on-demand-prices.json`` (the static on-demand price table used until, or instead of,
the Pricing API), ``aws-instance-network.json`` (per instance type: baseline network
bandwidth and VPC limits, which DescribeInstanceTypes does not give as numbers) and
``aws-instance-types.json.gz`` (one region's catalogue, for ``karpy instance-types
--offline``; see `karpy.cloud.aws.instancetypes.offline`)."""
