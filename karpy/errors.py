"""Exceptions shared across karpy's package boundaries.

Only errors that cross packages live here; a package's internal errors stay in it.
"""

from __future__ import annotations


class KarpyError(Exception):
    """Base class of karpy's own exceptions."""


class ExpectedError(KarpyError):
    """A failure whose message says all there is to say: an API server or cloud answered
    with an error. Reconcilers log it as one line, without a traceback, and retry."""


class UsageError(KarpyError):
    """Unusable input from the person running a command: bad settings, a file that does
    not parse, an object that fails validation. The CLI prints it as one line and exits
    with status 2. The message names the input (variable, file, object) and the rule."""
