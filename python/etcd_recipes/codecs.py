"""Codecs: how a recipe turns your values into the bytes of an etcd value and back.

Queues, work queues, transient keys and caches take ``codec=``::

    jobs = etcd_recipes.DistributedWorkQueue(client, "/jobs", codec=etcd_recipes.codecs.JSON)
    jobs.enqueue({"resize": 42})
    with jobs.receive() as item:
        item.value["resize"]          # 42

A codec is any object with ``encode(value) -> bytes`` and
``decode(data: bytes) -> value`` (the C++ library's Codec<T>, codec.h). The
recipe calls them: ``encode`` on your thread, inside the call that writes
(an exception or a result that is not bytes is InvalidArgument, nothing
written); ``decode`` on the client's executor thread, with the GIL, before
the value is used (an exception makes the value *poison*: DecodeFailed,
naming the key, and the value stays where it is — see
:class:`etcd_recipes.errors.DecodeFailed`).

Without ``codec=`` (or with ``BYTES``) values are bytes, as stored.
"""

from __future__ import annotations

import json
from typing import Any, Protocol, Union

__all__ = ["Codec", "BytesCodec", "Utf8Codec", "JsonCodec", "BYTES", "UTF8", "JSON"]


class Codec(Protocol):
    def encode(self, value: Any) -> bytes:
        """The bytes that stand for ``value``."""
        ...

    def decode(self, data: bytes) -> Any:
        """The value the bytes stand for (raise to refuse them)."""
        ...


class BytesCodec:
    """Bytes as they are (str is written as its UTF-8 bytes, as without a codec).

    Recipes given this codec are the plain bytes recipes: no Python runs per value.
    """

    def encode(self, value: Union[bytes, bytearray, memoryview, str]) -> bytes:
        if isinstance(value, str):
            return value.encode("utf-8")
        return bytes(value)

    def decode(self, data: bytes) -> bytes:
        return data

    def __repr__(self) -> str:
        return "etcd_recipes.codecs.BYTES"


class Utf8Codec:
    """Text: str stored as UTF-8; a value that is not valid UTF-8 is poison."""

    def encode(self, value: str) -> bytes:
        if not isinstance(value, str):
            raise TypeError(f"UTF8 encodes str, not {type(value).__name__}")
        return value.encode("utf-8")

    def decode(self, data: bytes) -> str:
        return data.decode("utf-8")  # strict: UnicodeDecodeError says where

    def __repr__(self) -> str:
        return "etcd_recipes.codecs.UTF8"


class JsonCodec:
    """Compact JSON text in UTF-8, as the C++ JsonCodec (codec_json.h) writes it:
    each reads what the other wrote (object keys keep Python's order, where C++
    sorts them). NaN and infinities are not JSON: refused.

    ``JsonCodec(**dumps_options)`` passes options to json.dumps (``default=``
    for your own types, ``sort_keys=True``, ...).
    """

    def __init__(self, **dumps_options: Any) -> None:
        self._dumps = {"separators": (",", ":"), "ensure_ascii": False, "allow_nan": False, **dumps_options}

    def encode(self, value: Any) -> bytes:
        return json.dumps(value, **self._dumps).encode("utf-8")

    def decode(self, data: bytes) -> Any:
        return json.loads(data.decode("utf-8"))

    def __repr__(self) -> str:
        return "etcd_recipes.codecs.JSON" if self._dumps == JSON._dumps else f"JsonCodec({self._dumps!r})"


BYTES = BytesCodec()
UTF8 = Utf8Codec()
JSON = JsonCodec()
