"""What every recipe module shares, the blocking ones and the asyncio twins
(:mod:`etcd_recipes.aio`) alike: the recipes' options, codecs and listeners,
the one lifecycle (_Recipe), the exclusive hold (Hold), and the forwarders
that make a class's trivial members.

Private: users import these names from :mod:`etcd_recipes`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Generic, Iterable, List, Optional, TypeVar, Union, overload

from . import _core
from . import codecs
from ._core import Subscription, Txn, TxnResponse
from .codecs import Codec
from .errors import EtcdError, InvalidArgument

Bytes = Union[str, bytes]

T = TypeVar("T")


# --- forwarders -----------------------------------------------------------------------


def _returns(forwarder: Any) -> Dict[str, Any]:
    """The annotations of a forwarder's function: T of ``_Forward[T](...)``."""
    orig = getattr(forwarder, "__orig_class__", None)
    if orig is None:
        return {}
    (returns,) = orig.__args__
    return {"return": None if returns is type(None) else returns}


class _Forward(Generic[T]):
    """``name = _Forward[T](doc)`` in a class body makes the read-only property
    ``name``: ``self._c.name`` (with ``via="_life"``: ``self._life.name``),
    documented by ``doc``. The class gets a plain property whose getter is a
    function named ``name`` returning T, as if it had been written out:
    help(), inspect and the API parity tests see no difference. For a type
    checker, the attribute is a T.
    """

    def __init__(self, doc: str, *, via: str = "_c") -> None:
        self._doc = doc
        self._via = via

    def _function(self, owner: type, name: str) -> Callable[..., Any]:
        via = self._via

        def forward(self: Any) -> Any:
            return getattr(getattr(self, via), name)

        return forward

    def _member(self, function: Callable[..., Any]) -> Any:
        return property(function)

    def __set_name__(self, owner: type, name: str) -> None:
        function = self._function(owner, name)
        function.__name__ = name
        function.__qualname__ = f"{owner.__qualname__}.{name}"
        function.__module__ = owner.__module__
        function.__doc__ = self._doc
        function.__annotations__ = _returns(self)
        setattr(owner, name, self._member(function))

    if TYPE_CHECKING:
        @overload
        def __get__(self, obj: None, owner: Any) -> "_Forward[T]": ...

        @overload
        def __get__(self, obj: object, owner: Any) -> T: ...

        def __get__(self, obj: Any, owner: Any) -> Any: ...


class _ForwardCall(_Forward[T]):
    """``name = _ForwardCall[T](doc)`` in a class body makes the method
    ``name(self) -> T``: ``self._c.name()`` (``via=`` as for _Forward); for
    ``_ForwardCall[None]``, a method that returns None whatever the core's
    returns."""

    def _function(self, owner: type, name: str) -> Callable[..., Any]:
        via = self._via
        if _returns(self).get("return", ...) is None:
            def forward(self: Any) -> Any:
                getattr(getattr(self, via), name)()
        else:
            def forward(self: Any) -> Any:
                return getattr(getattr(self, via), name)()
        return forward

    def _member(self, function: Callable[..., Any]) -> Any:
        return function

    if TYPE_CHECKING:
        @overload  # type: ignore[override]
        def __get__(self, obj: None, owner: Any) -> "_ForwardCall[T]": ...

        @overload
        def __get__(self, obj: object, owner: Any) -> Callable[[], T]: ...

        def __get__(self, obj: Any, owner: Any) -> Any: ...


def _home(module: str, namespace: Dict[str, Any], names: Iterable[str]) -> None:
    """Names ``module`` (the package users import them from: etcd_recipes, or
    etcd_recipes.aio) as the module of the classes and functions among
    ``names`` that ``namespace`` (a module's globals()) defines, as when they
    were written there: their repr, pickling and the documentation checks
    (tests/test_api_parity.py) see them where users find them."""
    for name in names:
        obj = namespace[name]
        if getattr(obj, "__module__", None) == namespace["__name__"]:
            obj.__module__ = module


# --- what recipes share ------------------------------------------------------------------


def _keep(owner: Any, sub: Subscription) -> Subscription:
    """Keeps a listener registered for as long as ``owner`` lives, unless
    ``sub.cancel()`` is called: dropping the returned Subscription (the usual
    ``cache.on_event(f)`` without keeping the result) must not unregister it,
    as destroying a C++ Subscription would."""
    owner.__dict__.setdefault("_subscriptions", []).append(sub)
    return sub


def _opts(client_id: Optional[str], session: Any, session_ttl: Optional[float],
          metrics: Any, contender_layout: str = "go", *, session_factory: Any = None) -> Dict[str, Any]:
    """The options keyword of every recipe of the core (``session``: an etcd_recipes.Session or None; this
    module sits below the one that defines it). ``session_factory``: a callable returning an
    etcd_recipes.Session, called (with no lock of the recipe held) whenever the recipe needs a session."""
    factory = None
    if session_factory is not None:
        if not callable(session_factory):
            raise InvalidArgument(f"session_factory must be callable, returning a Session (got {session_factory!r})",
                                  "INVALID_ARGUMENT", 3, "bad_argument")

        def factory() -> Any:
            made = session_factory()
            return getattr(made, "_c", made)
    return {"options": _core.RecipeOptions(client_id=client_id,
                                           session=session._c if session is not None else None,
                                           session_ttl=session_ttl, metrics=metrics,
                                           contender_layout=contender_layout, session_factory=factory)}


def _typed(codec: Optional[Codec]) -> Optional[Codec]:
    """The codec a recipe must run, or None for bytes as stored (no codec, or
    BYTES: the bytes recipes, with no Python per value)."""
    if codec is None or codec is codecs.BYTES:
        return None
    if not (callable(getattr(codec, "encode", None)) and callable(getattr(codec, "decode", None))):
        raise InvalidArgument(f"codec must have encode(value) -> bytes and decode(bytes) -> value (got {codec!r})",
                              "INVALID_ARGUMENT", 3, "bad_argument")
    return codec


class _Recipe:
    """The one lifecycle of every recipe (docs/recipes.md): no I/O in the
    constructor, start() is optional for most, close() is idempotent."""

    _c: Any

    @property
    def _life(self) -> Any:
        """The core that carries this object's lifecycle: its own (a lock
        side's: its lock's)."""
        return self._c

    name = _Forward[str]("The recipe's name (its key or prefix).", via="_life")
    identity = _Forward[str]("This object's identity in etcd (the client_id, or one made up).", via="_life")
    start = _ForwardCall[None](
        "Starts background work now instead of at first use (most recipes need no start()).", via="_life")
    close = _ForwardCall[None](
        "Ends the recipe: releases what it holds, stops its background work. Idempotent.", via="_life")
    closed = _Forward[bool]("True once close() was called.", via="_life")
    state = _Forward[str](
        'The connection\'s state as the recipe sees it: "CONNECTED", "SUSPENDED", "RECONNECTED" or "LOST".',
        via="_life")
    errors = _ForwardCall[List[EtcdError]]("The errors background work recorded, oldest first.", via="_life")

    def on_state_change(self, listener: Callable[[str], None]) -> Subscription:
        """Runs ``listener`` with the new state (see ``state``) at every change."""
        return _keep(self, self._life.on_state_change(listener))

    def on_error(self, listener: Callable[[EtcdError], None]) -> Subscription:
        """Runs ``listener`` with each error background work records."""
        return _keep(self, self._life.on_error(listener))


class _HoldBase:
    """An exclusive hold (lock, rwlock side, permit, leadership term): key,
    fencing token, loss. Falsy when empty."""

    def __init__(self, core: Any) -> None:
        self._c = core

    key = _Forward[str]("The key that holds it.")
    token = _Forward[int]("The fencing token: strictly increases from one holder to the next.")
    lease = _Forward[int]("The lease the hold lives under.")
    is_held = _Forward[bool]("True until the hold ends (released or lost).")
    ended = _Forward[bool]("True once the hold was lost or released (the C++ stop_token).")

    def on_lost(self, listener: Callable[[EtcdError], None]) -> Subscription:
        """Runs ``listener`` with the reason if the hold is lost (not when released)."""
        return _keep(self, self._c.on_lost(listener))

    @property
    def release_requested(self) -> bool:
        """True once someone asked the holder to release (DistributedMutex.request_release); the hold goes on."""
        return self._c.release_requested()

    def on_release_requested(self, listener: Callable[[], None]) -> Subscription:
        """Runs ``listener`` once someone asks the holder to release."""
        return _keep(self, self._c.on_release_requested(listener))

    def __bool__(self) -> bool:
        return self._c.valid

    def __repr__(self) -> str:
        return repr(self._c)


class Hold(_HoldBase):
    def guarded(self, txn: Txn, *, timeout: Optional[float] = None) -> TxnResponse:
        """Runs ``txn`` only while the hold is intact, atomically; HoldLost otherwise."""
        return self._c.guarded(txn).wait(timeout)

    def release(self, *, timeout: Optional[float] = None) -> bool:
        """True if the hold was still intact, False if it had been lost."""
        return self._c.release().wait(timeout)

    def __enter__(self) -> "Hold":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _hold(core: Any) -> Optional[Hold]:
    return Hold(core) if core is not None else None


_home("etcd_recipes", globals(), ["Hold"])
