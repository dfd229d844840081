"""Service discovery: registration, queries, caches and providers of instances.

The same classes as ``etcd_recipes`` has (one module per recipe family, as
``from etcd_recipes.discovery import ServiceDiscovery``); their asyncio twins are in
:mod:`etcd_recipes.aio`.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Union

from . import _core
from ._base import _ForwardCall, _Recipe, _home, _keep, _opts
from ._core import ServiceInstance, Subscription
from .caches import _CacheBase
from .client import Client, Session
from .errors import EtcdError

__all__ = ["ServiceDiscovery", "ServiceRegistry", "ServiceCache", "ServiceProvider", "ServiceInstance"]


class _Registrations(_Recipe):
    """Hears of this process's registrations (a ServiceRegistry's, a ServiceDiscovery's)."""

    def on_lost(self, listener: Callable[[ServiceInstance, EtcdError], None]) -> Subscription:
        """Runs with (instance, why) when a registration's key stops being ours
        (its lease was lost or revoked, or the key was deleted); it heals: the key
        is re-created where it is free, and on_restored listeners run."""
        return _keep(self, self._c.on_lost(listener))

    def on_restored(self, listener: Callable[[ServiceInstance], None]) -> Subscription:
        """Runs with the instance when a lost registration's key was re-created."""
        return _keep(self, self._c.on_restored(listener))


class ServiceRegistry(_Registrations):
    """Registrations as transient keys, healed after a lease loss only where free."""

    def __init__(self, client: Client, *, base_path: str = "/services", client_id: Optional[str] = None,
                 session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """Registrations under ``base_path``, each a transient key of this object's lease. client_id, session,
        session_ttl, metrics: the options every recipe takes (see the package's docstring).
        """
        self._c = _core.ServiceRegistry(client._c, base_path=base_path,
                                        **_opts(client_id, session, session_ttl, metrics,
                                                session_factory=session_factory))

    def register_instance(self, instance: ServiceInstance, *, timeout: Optional[float] = None) -> None:
        """Registers ``instance`` under this object's lease (AlreadyExists: another owner has the id)."""
        self._c.register_instance(instance).wait(timeout)

    def update(self, instance: ServiceInstance, *, timeout: Optional[float] = None) -> None:
        """Replaces a registered instance's record in place."""
        self._c.update(instance).wait(timeout)

    def unregister(self, service: str, id: str, *, timeout: Optional[float] = None) -> bool:
        """Deletes this object's registration of ``id``; False if it had none."""
        return self._c.unregister(service, id).wait(timeout)

    registered = _ForwardCall[List[ServiceInstance]]("The instances this object has registered (no I/O).")


class ServiceCache(_CacheBase):
    def __init__(self, client: Client, service: str, *, base_path: str = "/services",
                 client_id: Optional[str] = None, session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """A local copy of the instances of ``service`` under ``base_path``. client_id, session, session_ttl,
        metrics: the options every recipe takes (see the package's docstring).
        """
        self._c = _core.ServiceCache(client._c, service, base_path=base_path,
                                     **_opts(client_id, session, session_ttl, metrics, session_factory=session_factory))

    @classmethod
    def _wrap(cls, core: Any, owner: Any) -> "ServiceCache":
        cache = cls.__new__(cls)
        cache._c = core
        cache._owner = owner  # the provider the cache belongs to
        return cache

    instances = _ForwardCall[List[ServiceInstance]](
        "Every cached instance that decodes, disabled ones included (no I/O).")


# A strategy of your own: given the candidates (enabled, not ejected, sorted by
# id), the index of the one to use, or None for none.
ProviderStrategy = Callable[[List[ServiceInstance]], Optional[int]]


class ServiceProvider(_Recipe):
    """Picks an instance of a service (round_robin, random, sticky or your own strategy), ejecting
    failing ones."""

    def __init__(self, client: Optional[Client], service: str, *, base_path: str = "/services",
                 strategy: Union[str, ProviderStrategy] = "round_robin", errors_before_ejection: int = 2,
                 ejection_time: float = 30.0,
                 client_id: Optional[str] = None, session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None,
                 _core_provider: Any = None) -> None:
        """Picks instances of ``service`` under ``base_path`` by ``strategy`` ("round_robin", "random",
        "sticky", or a callable given the candidates — a list of ServiceInstance sorted by id, never
        empty — that returns the index of the one to use, or None for none; it runs inside pick(),
        under the provider's lock: keep it quick, and do not call this provider from it; what it raises
        is reported as unraisable and picks none); ``errors_before_ejection`` errors eject an instance
        for ``ejection_time`` seconds.
        client_id, session, session_ttl, metrics: the options every recipe takes (see the package's docstring).
        """
        if _core_provider is not None:
            self._c = _core_provider
        else:
            assert client is not None
            self._c = _core.ServiceProvider(client._c, service, base_path=base_path, strategy=strategy,
                                            errors_before_ejection=errors_before_ejection,
                                            ejection_time=ejection_time,
                                            **_opts(client_id, session, session_ttl, metrics,
                                                    session_factory=session_factory))

    def wait_initialized(self, timeout: Optional[float] = None) -> bool:
        """True once the first read is loaded; False when ``timeout`` ran out."""
        return bool(self._c.wait_initialized().wait_or_none(timeout))

    pick = _ForwardCall[Optional[ServiceInstance]](
        "An instance (no I/O), or None when there is none or the first read is not done.")

    def get_instance(self, *, timeout: Optional[float] = None) -> ServiceInstance:
        """Waits for the first read, then picks; NotFound when there is none to pick."""
        return self._c.get_instance().wait(timeout)

    all_instances = _ForwardCall[List[ServiceInstance]](
        "Every cached instance, ejected and disabled ones included (no I/O).")
    candidates = _ForwardCall[List[ServiceInstance]](
        "The instances pick() chooses among now: enabled and not ejected (no I/O).")

    def cache(self) -> "ServiceCache":
        """The cache the provider picks from (its instances, initialized, revision)."""
        return self._cache_type._wrap(self._c.cache(), self)

    def note_error(self, instance: ServiceInstance) -> None:
        """A request to ``instance`` failed: enough of them eject it for a while."""
        self._c.note_error(instance)

    _cache_type = ServiceCache


class ServiceDiscovery(_Registrations):
    """The facade: register, query, providers."""

    def __init__(self, client: Client, *, base_path: str = "/services", client_id: Optional[str] = None,
                 session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """Registration, queries and providers under ``base_path``. client_id, session, session_ttl, metrics: the
        options every recipe takes (see the package's docstring).
        """
        self._c = _core.ServiceDiscovery(client._c, base_path=base_path,
                                         **_opts(client_id, session, session_ttl, metrics,
                                                 session_factory=session_factory))

    def register_instance(self, instance: ServiceInstance, *, timeout: Optional[float] = None) -> None:
        """Registers ``instance`` under this object's lease (AlreadyExists: another owner has the id)."""
        self._c.register_instance(instance).wait(timeout)

    def update(self, instance: ServiceInstance, *, timeout: Optional[float] = None) -> None:
        """Replaces a registered instance's record in place."""
        self._c.update(instance).wait(timeout)

    def unregister(self, service: str, id: str, *, timeout: Optional[float] = None) -> bool:
        """Deletes this object's registration of ``id``; False if it had none."""
        return self._c.unregister(service, id).wait(timeout)

    def query_names(self, *, timeout: Optional[float] = None) -> List[str]:
        """The names of the services registered."""
        return self._c.query_names().wait(timeout)

    def query_instances(self, service: str, *, timeout: Optional[float] = None) -> List[ServiceInstance]:
        """Every instance of ``service``, sorted by id (one Range)."""
        return self._c.query_instances(service).wait(timeout)

    def query_instance(self, service: str, id: str, *, timeout: Optional[float] = None) -> Optional[ServiceInstance]:
        """Instance ``id`` of ``service`` as etcd has it, or None."""
        return self._c.query_instance(service, id).wait(timeout)

    def provider(self, service: str, *, strategy: Union[str, ProviderStrategy] = "round_robin") -> ServiceProvider:
        """A provider of ``service`` closed with this object (no I/O until used)."""
        return self._provider_type(None, service, _core_provider=self._c.provider(service, strategy=strategy))

    _provider_type = ServiceProvider

    def __enter__(self) -> "ServiceDiscovery":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_home("etcd_recipes", globals(), __all__)
