"""Which class store a server process uses (#42): the one place that chooses.

ATTENTION_LAB_CLASS_STORE=redis://host:6379/0 (or rediss://, unix://): the Redis store, shared by replicas on
several machines (deploy/lecture_hall.py). Unset, empty or "sqlite": the SQLite file (ATTENTION_LAB_CLASS_DB, else
/dev/shm), shared by the processes of one machine. Anything else is told in a sentence, never taken for a file name.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from viz_model.runtime.class_mode import ClassStore, ClassStoreAPI, ClassStoreDown

STORE_ENV = "ATTENTION_LAB_CLASS_STORE"
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def is_redis(where: str | Path | None) -> bool:
    return isinstance(where, str) and where.startswith(REDIS_SCHEMES)


def target() -> str:
    """The store this process is configured for: a Redis URL, or "" for the SQLite file. A value that is neither (a
    host without redis://, a typo) is told in a sentence."""
    value = os.environ.get(STORE_ENV, "").strip()
    if value in ("", "sqlite"):
        return ""
    if not is_redis(value):
        raise ClassStoreDown(f"{STORE_ENV}={value.split('@')[-1]!r} is not a class store: use redis://host:6379/0, "
                             "or leave it unset (or 'sqlite') for the SQLite file.")
    return value


def _where(where: str | Path | None) -> str | Path | None:
    if where in (None, ""):
        return target() or None
    if isinstance(where, str) and "://" in where and not is_redis(where):
        raise ClassStoreDown(f"{where.split('@')[-1]!r} is not a class store: use redis://host:6379/0, or a SQLite "
                             "file's path.")
    return where


def open_store(where: str | Path | None = None, clock: Callable[[], float] = time.time) -> ClassStoreAPI:
    """A store at `where` (a Redis URL or a SQLite path; None: the configured one), one connection."""
    where = _where(where)
    if is_redis(where):
        from viz_model.runtime.class_redis import RedisClassStore

        return RedisClassStore(where, clock=clock)
    return ClassStore(where, clock=clock)


def open_for_server(where: str | Path | None = None) -> ClassStoreAPI:
    """A server process's store (ui.class_mode.store): SQLite registers the process and empties a file no live
    process holds; Redis keeps what the other replicas hold."""
    where = _where(where)
    if is_redis(where):
        from viz_model.runtime.class_redis import RedisClassStore

        return RedisClassStore.open_for_server(where)
    return ClassStore.open_for_server(where)
