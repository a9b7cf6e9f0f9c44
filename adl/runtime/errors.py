"""The runtime's errors: each is a problem with the user's input, printed as one message."""

from __future__ import annotations

from adl.errors import UserError

__all__ = [
    "CheckpointError",
    "ConfigError",
    "DataError",
    "RunDirError",
    "TrainingStopped",
    "UserError",
    "VizError",
]


class ConfigError(UserError):
    """An unknown or badly typed setting."""


class DataError(UserError):
    """Unreadable or inconsistent training data; the message names the file and line."""


class CheckpointError(UserError):
    """A checkpoint that is missing, damaged, or not safe to load."""


class TrainingStopped(UserError):
    """Training could not go on (e.g. K non-finite losses in a row)."""


class VizError(UserError):
    """Nothing to draw: a layer without a hard-coded pattern, a run without metrics, ..."""


class RunDirError(UserError):
    """A run directory that cannot be used: another process holds it, or the file system
    refuses to write it (a file where a directory should be, read-only, immutable, full)."""
