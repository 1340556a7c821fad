"""Which class store a server process uses (#42): the one place that chooses.

ATTENTION_LAB_CLASS_STORE=redis://host:6379/0 (or rediss://, unix://): the Redis store, shared by replicas on several
machines (deploy/lecture_hall.sh). Unset or empty: the SQLite file (ATTENTION_LAB_CLASS_DB, else /dev/shm), shared by
the processes of one machine. Anything else is told in a sentence, not guessed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from viz_model.runtime.classroom import ClassStore, ClassStoreAPI, ClassStoreDown

STORE_ENV = "ATTENTION_LAB_CLASS_STORE"
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def target() -> str:
    """The store this process is configured for: a Redis URL, or the SQLite file's path."""
    return os.environ.get(STORE_ENV, "").strip()


def is_redis(where: str | Path | None) -> bool:
    return isinstance(where, str) and where.startswith(REDIS_SCHEMES)


def _check(where: str | Path | None) -> None:
    if isinstance(where, str) and "://" in where and not is_redis(where):
        raise ClassStoreDown(f"{STORE_ENV}={where.split('@')[-1]!r} is not a class store: use redis://host:6379/0, "
                             "or leave it unset for the SQLite file.")


def open_store(where: str | Path | None = None, clock: Callable[[], float] = time.time) -> ClassStoreAPI:
    """A store at `where` (a Redis URL or a SQLite path; None: the configured one), one connection."""
    where = where if where not in (None, "") else (target() or None)
    _check(where)
    if is_redis(where):
        from viz_model.runtime.class_redis import RedisClassStore

        return RedisClassStore(where, clock=clock)
    return ClassStore(where, clock=clock)


def open_for_server(where: str | Path | None = None) -> ClassStoreAPI:
    """A server process's store (ui.classroom.store): SQLite registers the process and empties a file no live
    process holds; Redis keeps what the other replicas hold."""
    where = where if where not in (None, "") else (target() or None)
    _check(where)
    if is_redis(where):
        from viz_model.runtime.class_redis import RedisClassStore

        return RedisClassStore.open_for_server(where)
    return ClassStore.open_for_server(where)
