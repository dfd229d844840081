"""Leader election: a latch, a selector with terms, an observer.

The same classes as ``etcd_recipes`` has (one module per recipe family, as
``from etcd_recipes.election import LeaderLatch``); their asyncio twins are in
:mod:`etcd_recipes.aio`.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional

from . import _core
from ._base import Bytes, Hold, _Forward, _ForwardCall, _Recipe, _home, _hold, _keep, _opts
from ._core import LeaderInfo, Participant, Subscription
from .client import Client, Session
from .errors import EtcdError, Timeout

__all__ = ["LeaderLatch", "LeaderSelector", "LeaderTerm", "LeaderObserver", "Participant", "LeaderInfo"]


class LeaderTerm(Hold):
    """A leader's term: a Hold whose token is the term token."""

    stop_requested = _Forward[bool]("True once the term was asked to stop (lost, interrupted, resigned, closed).")
    end = _Forward[Optional[str]](
        "Why the term is ending (lost, interrupted, resigned, closed), None while it goes on.")

    def proclaim(self, value: Bytes, *, timeout: Optional[float] = None) -> None:
        """Replaces the value the leader key carries while this term is current."""
        self._c.proclaim(value).wait(timeout)


class LeaderLatch(_Recipe):
    """Leader election: start() contends in the background; ``with latch:`` starts and closes."""

    def __init__(self, client: Client, name: str, value: Bytes = "", *, client_id: Optional[str] = None,
                 session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None,
                 layout: str = "go") -> None:
        """A candidate for leadership of ``name``, proclaiming ``value`` while it leads. client_id, session,
        session_ttl, metrics: the options every recipe takes (see the package's docstring). ``layout``: ``"go"``
        (that of ``etcdctl elect``) or ``"ordered"`` (the same cost per term at any number of candidates; still one
        election with ``"go"`` candidates and ``etcdctl elect``).
        """
        self._c = _core.LeaderLatch(client._c, name, value, **_opts(client_id, session, session_ttl, metrics, layout,
                                                                    session_factory=session_factory))

    def await_leadership(self, timeout: Optional[float] = None) -> bool:
        """True once this object leads; False when ``timeout`` ran out."""
        return bool(self._c.await_leadership().wait_or_none(timeout))

    @property
    def is_leader(self) -> bool:
        """True while this object leads (no I/O)."""
        return self._c.is_held

    @property
    def hold(self) -> Optional[Hold]:
        """The leadership's Hold while leading (key, token, on_lost, guarded), else None."""
        return _hold(self._c.hold)

    def proclaim(self, value: Bytes, *, timeout: Optional[float] = None) -> None:
        """Replaces the value the leader key carries (while leading)."""
        self._c.proclaim(value).wait(timeout)

    def resign(self, *, timeout: Optional[float] = None) -> bool:
        """Gives up leadership and the candidacy; whether it led."""
        return self._c.resign().wait(timeout)

    def participants(self, *, timeout: Optional[float] = None) -> List[Participant]:
        """Every candidate, the leader first."""
        return self._c.participants().wait(timeout)

    def leader(self, *, timeout: Optional[float] = None) -> Optional[LeaderInfo]:
        """The current leader as etcd has it, or None."""
        return self._c.leader().wait(timeout)

    def on_is_leader(self, listener: Callable[[int], None]) -> Subscription:
        """Runs ``listener`` with the term (the leader key's create revision) when this object becomes leader."""
        return _keep(self, self._c.on_is_leader(listener))

    def on_not_leader(self, listener: Callable[[Optional[EtcdError]], None]) -> Subscription:
        """Runs ``listener`` (with the reason, or None for a resign) when this object stops leading."""
        return _keep(self, self._c.on_not_leader(listener))

    def on_lost(self, listener: Callable[[EtcdError], None]) -> Subscription:
        """Runs ``listener`` with the reason when leadership is lost."""
        return _keep(self, self._c.on_lost(listener))

    def __enter__(self) -> "LeaderLatch":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Leadership:
    def __init__(self, selector: "LeaderSelector", timeout: Optional[float]) -> None:
        self._selector = selector
        self._timeout = timeout

    def __enter__(self) -> LeaderTerm:
        term = self._selector._c.wait_term(self._timeout)
        if term is None:
            raise Timeout("leadership: the timeout ran out", "DEADLINE_EXCEEDED", 4)
        return LeaderTerm(term)

    def __exit__(self, *exc: Any) -> None:
        self._selector._c.end_term()


class LeaderSelector(_Recipe):
    """Leader election by terms.

    Without a callback: ``with selector.leadership() as term: ...`` waits until this
    candidate leads, and the term ends (the leader key is deleted) when the block
    exits. With ``callback(term)``: start() runs it once per term on the selector's
    thread (with the GIL), re-queueing after each term.
    """

    def __init__(self, client: Client, name: str, value: Bytes = "",
                 callback: Optional[Callable[[Any], None]] = None, *, client_id: Optional[str] = None,
                 session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None,
                 layout: str = "go") -> None:
        """Leadership of ``name`` with a callback: ``callback(term)`` runs while this object leads; the term
        ends when it returns. ``value``: what the leader key carries.
        client_id, session, session_ttl, metrics: the options every recipe takes (see the package's docstring).
        ``layout``: ``"go"`` or ``"ordered"``, as for LeaderLatch.
        """
        wrapped = None if callback is None else (lambda term: callback(LeaderTerm(term)))
        self._c = _core.LeaderSelector(client._c, name, value, wrapped,
                                       **_opts(client_id, session, session_ttl, metrics, layout,
                                               session_factory=session_factory))

    def leadership(self, timeout: Optional[float] = None) -> _Leadership:
        """``with selector.leadership() as term:``: stands, waits up to ``timeout`` for a term, ends it on exit."""
        return _Leadership(self, timeout)

    interrupt = _ForwardCall[None]("Requests the current term to stop (term.stop_requested becomes True).")
    resign = _ForwardCall[None]("Ends the current term and the candidacy.")
    requeue = _ForwardCall[bool]("Stands again after the current term; False if closed.")

    def set_auto_requeue(self, on: bool) -> None:
        """Whether to stand again after each term."""
        self._c.set_auto_requeue(on)

    terms = _Forward[int]("How many terms this object has led.")

    @property
    def is_leader(self) -> bool:
        """True while a term of this object runs."""
        return self._c.is_held

    def on_term_end(self, listener: Callable[[str, Optional[EtcdError]], None]) -> Subscription:
        """Runs ``listener(how, error)`` when a term ends (how: "returned", "threw", "lost", ...)."""
        return _keep(self, self._c.on_term_end(listener))

    def participants(self, *, timeout: Optional[float] = None) -> List[Participant]:
        """Every candidate, the leader first."""
        return self._c.participants().wait(timeout)

    def leader(self, *, timeout: Optional[float] = None) -> Optional[LeaderInfo]:
        """The current leader as etcd has it, or None."""
        return self._c.leader().wait(timeout)


class LeaderObserver(_Recipe):
    """Follows an election's leader without taking part."""

    def __init__(self, client: Client, name: str, *, client_id: Optional[str] = None,
                 session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """Follows the leader of election ``name`` without standing. client_id, session, session_ttl, metrics: the
        options every recipe takes (see the package's docstring).
        """
        self._c = _core.LeaderObserver(client._c, name, **_opts(client_id, session, session_ttl, metrics,
                                                                session_factory=session_factory))

    def wait_initialized(self, timeout: Optional[float] = None) -> bool:
        """True once the first read is loaded; False when ``timeout`` ran out."""
        return bool(self._c.wait_initialized().wait_or_none(timeout))

    current = _Forward[Optional[LeaderInfo]]("The leader as last seen (no I/O), or None.")

    def on_change(self, listener: Callable[[Optional[LeaderInfo]], None]) -> Subscription:
        """Runs ``listener`` with the new leader (or None) at every change."""
        return _keep(self, self._c.on_change(listener))

    def leader(self, *, timeout: Optional[float] = None) -> Optional[LeaderInfo]:
        """The leader as etcd has it now, or None."""
        return self._c.leader().wait(timeout)

    def __enter__(self) -> "LeaderObserver":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_home("etcd_recipes", globals(), __all__)
