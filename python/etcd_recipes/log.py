"""The library's log records: what it does in the background (a call retried,
a hold lost, a key healed, a view read again after a compaction, an item moved
to the dead letters, a loop that gave up).

Silent by default. Either hand the records to a callable::

    etcd_recipes.set_log_sink(lambda r: print(r), level="info")

or to Python's :mod:`logging`, under the logger named ``etcd_recipes``::

    etcd_recipes.log_to_logging()          # then configure logging as usual
    logging.basicConfig(level=logging.INFO)

A record (:class:`LogRecord`) has ``level`` ("debug", "info", "warning",
"error"), ``time`` (seconds since the epoch), ``source_kind`` ("client" or the
recipe's C++ kind, e.g. "DistributedMutex"), ``source_name`` (the endpoint or
the recipe's name), ``message`` and ``status`` (the error the record is about,
as the exception the library would raise, or None); ``str(record)`` is one line.

The sink runs on the client's executor thread with the GIL, never while the
library holds a lock; an exception it raises is reported as unraisable and the
sink keeps receiving records. There is one sink per process: setting one
replaces the other (``set_log_sink(None)`` silences the library again).
"""

from __future__ import annotations

import logging
from typing import Callable, Optional

from . import _core
from ._base import _home
from ._core import LogRecord

__all__ = ["LogRecord", "set_log_sink", "log_to_logging", "LOGGER_NAME"]

LOGGER_NAME = "etcd_recipes"

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def set_log_sink(sink: Optional[Callable[[LogRecord], None]], level: str = "info") -> None:
    """Hands every record at ``level`` and above to ``sink``; None: silent."""
    if level not in _LEVELS:
        raise ValueError(f"level must be one of {sorted(_LEVELS)}, got {level!r}")
    _core.set_log_sink(sink, level)


def log_to_logging(level: str = "info") -> logging.Logger:
    """Sends the records at ``level`` and above to the :mod:`logging` logger
    ``etcd_recipes`` (returned): its level, handlers and propagation decide the
    rest. Each is logged with the record's level and its line as the message;
    the record itself is in the log record's ``etcd_record`` attribute."""
    logger = logging.getLogger(LOGGER_NAME)

    def forward(record: LogRecord) -> None:
        levelno = _LEVELS.get(record.level, logging.INFO)
        if logger.isEnabledFor(levelno):
            status = record.status
            text = f"{record.source_kind}[{record.source_name}]: {record.message}"
            if status is not None:
                text += f": {status}"
            logger.log(levelno, "%s", text, extra={"etcd_record": record})

    set_log_sink(forward, level)
    return logger


_home("etcd_recipes", globals(), ["set_log_sink", "log_to_logging"])
