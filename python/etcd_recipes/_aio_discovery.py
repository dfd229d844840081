"""asyncio twins of :mod:`etcd_recipes.discovery`'s classes (see :mod:`etcd_recipes.aio`)."""

from __future__ import annotations

from typing import Any, List, Optional

from . import discovery as _blocking
from ._aio_base import run
from ._aio_caches import _AsyncCache
from ._base import _home
from ._core import ServiceInstance

__all__ = ["ServiceCache", "ServiceProvider", "ServiceRegistry", "ServiceDiscovery"]


class ServiceCache(_AsyncCache, _blocking.ServiceCache):  # type: ignore[misc]
    pass


class ServiceProvider(_blocking.ServiceProvider):
    _cache_type = ServiceCache

    async def wait_initialized(self, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return bool(await run(self._c.wait_initialized(), timeout, or_none=True))

    async def get_instance(self, *, timeout: Optional[float] = None) -> ServiceInstance:  # type: ignore[override]
        return await run(self._c.get_instance(), timeout)


class _AsyncRegistrations:
    _c: Any

    async def register_instance(self, instance: ServiceInstance, *, timeout: Optional[float] = None) -> None:
        """Registers ``instance`` under a lease of this object's (AlreadyExists: another owner has the id)."""
        await run(self._c.register_instance(instance), timeout)

    async def update(self, instance: ServiceInstance, *, timeout: Optional[float] = None) -> None:
        """Replaces a registered instance's record in place."""
        await run(self._c.update(instance), timeout)

    async def unregister(self, service: str, id: str, *, timeout: Optional[float] = None) -> bool:
        """Deletes this object's registration; False if it had none."""
        return await run(self._c.unregister(service, id), timeout)


class ServiceRegistry(_AsyncRegistrations, _blocking.ServiceRegistry):  # type: ignore[misc]
    pass


class ServiceDiscovery(_AsyncRegistrations, _blocking.ServiceDiscovery):  # type: ignore[misc]
    _provider_type = ServiceProvider

    async def query_names(self, *, timeout: Optional[float] = None) -> List[str]:  # type: ignore[override]
        return await run(self._c.query_names(), timeout)

    async def query_instances(self, service: str, *,  # type: ignore[override]
                              timeout: Optional[float] = None) -> List[ServiceInstance]:
        return await run(self._c.query_instances(service), timeout)

    async def query_instance(self, service: str, id: str, *,  # type: ignore[override]
                             timeout: Optional[float] = None) -> Optional[ServiceInstance]:
        return await run(self._c.query_instance(service, id), timeout)


_home("etcd_recipes.aio", globals(), __all__)
