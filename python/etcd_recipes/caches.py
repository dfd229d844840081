"""Local copies of keys, kept current by a watch.

The same classes as ``etcd_recipes`` has (one module per recipe family, as
``from etcd_recipes.caches import PathChildrenCache``); their asyncio twins are in
:mod:`etcd_recipes.aio`.
"""

from . import (  # noqa: F401
    PathChildrenCache, NodeCache, CachedNode, ChildEvent, NodeEvent, TypedCachedNode, TypedChildEvent,
    TypedNodeEvent,
)

__all__ = [
    "PathChildrenCache",
    "NodeCache",
    "CachedNode",
    "ChildEvent",
    "NodeEvent",
    "TypedCachedNode",
    "TypedChildEvent",
    "TypedNodeEvent",
]
