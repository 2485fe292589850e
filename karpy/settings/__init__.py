"""Every setting of `karpy controller`, read once at start-up into a frozen `Settings`.

Karpenter is configured with environment variables (its Helm chart writes them) and, less
often, with flags; karpy reads the same names, flags and defaults so a deployment's
configuration carries over. Each setting is one row of `OPTIONS`: env var, flag, default
as text, and a parser. A setting's value is the flag if given, else the env var if set,
else the default, and all three go through the same parser, so a default can never be
something the parser would reject.

Karpenter falls back to the default when an env var does not parse and ignores unknown
feature gates; karpy refuses to start instead, since a typo in a gate or a duration should
not run a controller configured otherwise than its operator asked. Every problem found is
reported, all on one line (`; `-separated, in table order), as a `SettingsError`, which
the CLI prints after ``karpy controller:`` before exiting with status 2.

Durations are integer nanoseconds (`karpy.durations`): convert with `to_timedelta` or
divide by `durations.SECOND` before handing one to asyncio.

The package holds one idea a module: value `parsers`, feature `gates`, the `options`
table, the Settings `record` and the controller's `flags`.

`Settings.from_env_and_args` is pure: it reads only the mapping it is given. The one fact
it needs from the pod's file system, its namespace (the default leader-election lease
namespace), is read by the caller with `read_service_account_namespace` and passed in.
"""

from __future__ import annotations

from karpy.settings.flags import add_arguments
from karpy.settings.gates import AWSFeatureGates, FeatureGates
from karpy.settings.options import OPTIONS, OPTIONS_BY_FIELD, UNSUPPORTED, Option
from karpy.settings.parsers import (
    FALLBACK_NAMESPACE,
    LOG_FORMATS,
    LOG_LEVELS,
    SERVICE_ACCOUNT_NAMESPACE_FILE,
    SettingsError,
)
from karpy.settings.record import Settings, read_service_account_namespace

__all__ = [
    "FALLBACK_NAMESPACE",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "OPTIONS",
    "OPTIONS_BY_FIELD",
    "SERVICE_ACCOUNT_NAMESPACE_FILE",
    "UNSUPPORTED",
    "AWSFeatureGates",
    "FeatureGates",
    "Option",
    "Settings",
    "SettingsError",
    "add_arguments",
    "read_service_account_namespace",
]
