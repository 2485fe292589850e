"""Data files shipped with the AWS provider, read with `importlib.resources`:
``aws-on-demand-prices.json`` (the static on-demand price table used until, or instead of,
the Pricing API) and ``aws-instance-network.json`` (per instance type: baseline network
bandwidth and VPC limits, which DescribeInstanceTypes does not give as numbers)."""
