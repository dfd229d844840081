"""Group membership (Curator's GroupMember): join a group with a payload, list the members.

The same classes as ``etcd_recipes`` has (``from etcd_recipes.group import
GroupMember``); their asyncio twins are in :mod:`etcd_recipes.aio`.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from . import _core
from ._base import _Forward, _Recipe, _home, _keep, _opts
from ._core import GroupEvent, Subscription  # noqa: F401
from .client import Client, Session
from .errors import EtcdError

__all__ = ["GroupMember", "GroupEvent"]


class GroupMember(_Recipe):
    """This process's membership of ``group`` (the key GROUP/ID, with a payload, while it lives),
    and the live list of every member: ``with GroupMember(c, "/groups/g", "node-7", b"10.0.0.7"):``.

    The membership is a transient key: after a lease loss it re-joins by
    itself where its id is free (on_lost, then on_restored). members() answers
    from memory once start() (or ``with``) has read the group.
    """

    def __init__(self, client: Client, group: str, id: str, payload: bytes = b"", *,
                 client_id: Optional[str] = None, session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """Member ``id`` of ``group`` with ``payload``. session_ttl: how long the membership outlives a
        process that died without leaving. client_id, session, metrics: the options every recipe takes.
        """
        self._c = _core.GroupMember(client._c, group, id, payload,
                                    **_opts(client_id, session, session_ttl, metrics, session_factory=session_factory))

    group = _Forward[str]("The group (its members are the keys GROUP/ID).")
    id = _Forward[str]("This member's id.")
    member_key = _Forward[str]("This member's key, GROUP/ID.")
    payload = _Forward[bytes]("The current payload (the last one given).")
    is_member = _Forward[bool]("True while this member's key is ours.")
    lease = _Forward[int]("The lease of this member's key while it is ours, else 0.")
    revision = _Forward[int]("The revision the member list is current at (0 before the first read).")
    resyncs = _Forward[int]("Reads of the list after a gap in its watch since start().")

    def join(self, *, timeout: Optional[float] = None) -> None:
        """Joins now (AlreadyExists if the id is someone else's; nothing written)."""
        self._c.join().wait(timeout)

    def set_payload(self, payload: bytes, *, timeout: Optional[float] = None) -> None:
        """Replaces the payload (in etcd too, while a member)."""
        self._c.set_payload(payload).wait(timeout)

    def leave(self, *, timeout: Optional[float] = None) -> bool:
        """Leaves the group and closes; True if this was a member."""
        return self._c.leave().wait(timeout)

    def members(self) -> Dict[str, bytes]:
        """Every member as the list shows it now, id -> payload (no I/O)."""
        return self._c.members()

    def wait_initialized(self, timeout: Optional[float] = None) -> bool:
        """True once the member list is loaded; False when ``timeout`` ran out."""
        return bool(self._c.wait_initialized().wait_or_none(timeout))

    def on_change(self, listener: Callable[[GroupEvent], None]) -> Subscription:
        """Runs ``listener`` with every join, update and leave (a GroupEvent: type JOINED/UPDATED/LEFT)."""
        return _keep(self, self._c.on_change(listener))

    def on_lost(self, listener: Callable[[EtcdError], None]) -> Subscription:
        """Runs ``listener`` with the reason when this member's key stops being ours."""
        return _keep(self, self._c.on_lost(listener))

    def on_restored(self, listener: Callable[[], None]) -> Subscription:
        """Runs ``listener`` when this member re-joined after a loss."""
        return _keep(self, self._c.on_restored(listener))

    def __enter__(self) -> "GroupMember":
        self.start()
        self.join()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.leave()
        self.close()


_home("etcd_recipes", globals(), __all__)
