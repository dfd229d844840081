"""The exceptions of etcd_recipes: one per way a caller reacts, all EtcdError.

Every exception carries the C++ status: ``code`` (gRPC code name, e.g.
``"DEADLINE_EXCEEDED"``), ``code_value`` (its number), ``reason`` (the etcd
reason, e.g. ``"hold_lost"``, ``"outcome_unknown"``; ``""`` when none),
``message`` (for people, not for parsing) and ``revision`` (a compact
revision for ``compacted`` / ``resync_needed``, else 0). ``str(e)`` is the
C++ ``Status::to_string()``. See docs/errors.md.
"""

from __future__ import annotations

__all__ = ["EtcdError", "HoldLost", "Timeout", "Closed", "InvalidArgument", "DecodeFailed"]


class EtcdError(Exception):
    """Any failure reported by etcd or by the library."""

    def __init__(
        self,
        text: str,
        code: str = "UNKNOWN",
        code_value: int = 2,
        reason: str = "",
        message: str = "",
        revision: int = 0,
    ) -> None:
        """``text`` as str() shows it; the gRPC ``code`` name and number; the library's ``reason``
        (e.g. "outcome_unknown"); etcd's own ``message``; and a ``revision`` where one matters."""
        super().__init__(text)
        self.code = code
        self.code_value = code_value
        self.reason = reason
        self.message = message or text
        self.revision = revision


class HoldLost(EtcdError):
    """An exclusive hold (lock, permit, leadership term) is gone (reason ``hold_lost``)."""


class Timeout(EtcdError, TimeoutError):
    """The call's deadline passed (code ``DEADLINE_EXCEEDED``).

    With reason ``outcome_unknown`` a write may or may not have been applied.
    """


class Closed(EtcdError):
    """The client or recipe was closed (reason ``closed``)."""


class InvalidArgument(EtcdError, ValueError):
    """Rejected before anything was written (code ``INVALID_ARGUMENT``)."""


class DecodeFailed(EtcdError, ValueError):
    """A stored value is not a valid value for the recipe's codec (code
    ``DATA_LOSS``, reason ``decode_failed``); the message names the key.

    The value stays where it is: a queue leaves the item in place and skips
    it, a work queue moves it to its dead letters, a cache keeps the node
    (its ``value`` raises this, its ``error`` is this).
    """
