"""Service discovery: registration, queries, caches and providers of instances.

The same classes as ``etcd_recipes`` has (one module per recipe family, as
``from etcd_recipes.discovery import ServiceDiscovery``); their asyncio twins are in
:mod:`etcd_recipes.aio`.
"""

from . import (  # noqa: F401
    ServiceDiscovery, ServiceRegistry, ServiceCache, ServiceProvider, ServiceInstance,
)

__all__ = ["ServiceDiscovery", "ServiceRegistry", "ServiceCache", "ServiceProvider", "ServiceInstance"]
