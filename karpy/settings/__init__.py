"""Every setting of `karpy controller`, read once at start-up into a frozen `Settings`.

Karpenter is configured with environment variables (its Helm chart writes them) and, less
often, with flags; karpy reads the same names, flags and defaults so a deployment's
configuration carries over. Each setting is one row of `OPTIONS`: env var, flag, default
as text, and a parser. A setting's value is the flag if given, else the env var if set,
else the default, and all three go through the same parser, so a default can never be
something the parser would reject.

Karpenter falls back to the default when an env var does not parse; karpy refuses to
start instead, since a typo in a duration should not run a controller configured otherwise
than its operator asked. Unknown feature gate names are the exception: Karpenter ignores
them and charts for later Karpenter versions render gates karpy does not know yet, so they
are ignored too, with a warning at start-up (`apply_to_process`). Every problem found is
reported, all on one line (`; `-separated, in table order), as a `SettingsError`, which
the CLI prints after ``karpy controller:`` before exiting with status 2.

Durations are integer nanoseconds (`karpy.durations`): convert with `to_timedelta` or
divide by `durations.SECOND` before handing one to asyncio.

The package holds one idea a module: value `parsers`, feature `gates`, the `options`
table, the Settings `record`, the controller's `flags`, and what settings do to the
`process` (its thread pool, warnings) once its event loop runs.

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
from karpy.settings.process import apply_to_process
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
    "apply_to_process",
    "read_service_account_namespace",
]
