"""Both class-store backends for the class-store tests (#42): a real `redis-server` on a free loopback port (no
persistence, a temp dir, stopped at the end) and the SQLite file. A test module takes the fixtures by assigning them
(an import would read to ruff as shadowed by the test's argument):

    import class_backends
    backend, redis_url = class_backends.backend, class_backends.redis_url

`backend` is parametrised over "sqlite" and "redis": every test that takes it runs on both. Without redis-server or
the `redis` client the Redis half FAILS with how to install them (`make test` installs both); it is never skipped.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from viz_model.runtime.class_mode import ClassStoreAPI
from viz_model.runtime.class_store import open_store

BACKENDS = ("sqlite", "redis")
PREFIX = "attention-lab:"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _missing() -> str | None:
    """Why Redis tests cannot run here, or None."""
    if shutil.which("redis-server") is None:
        return ("redis-server is not installed: the class store's Redis tests need it. Run `make test` as root on "
                "Debian (scripts/ensure_redis.sh installs it), or `sudo apt-get install -y redis-server`.")
    try:
        import redis  # noqa: F401
    except ImportError:
        return "The `redis` client is not installed: .venv/bin/pip install -e '.[dev]' (or '.[hall]')."
    return None


@contextlib.contextmanager
def redis_server(timeout: float = 20.0, port: int | None = None) -> Iterator[str]:
    """A real redis-server on a free 127.0.0.1 port (or `port`: a restart where the app looks for it), keeping nothing
    on disk (`--save '' --appendonly no`, in a temp dir); yields its URL once it answers PING; stopped after."""
    import redis

    with tempfile.TemporaryDirectory(prefix="attention-lab-redis-") as tmp:
        port = port or _free_port()
        log = open(Path(tmp) / "redis.log", "w")
        proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                 "--appendonly", "no", "--dir", tmp], stdout=log, stderr=subprocess.STDOUT)
        url = f"redis://127.0.0.1:{port}/0"
        client = redis.Redis.from_url(url, socket_connect_timeout=1.0)
        deadline = time.monotonic() + timeout
        try:
            while True:  # polls until the server answers (a condition, bounded in time)
                try:
                    if client.ping():
                        break
                except redis.exceptions.ConnectionError as e:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        why = (Path(tmp) / "redis.log").read_text()
                        raise RuntimeError(f"redis-server did not start: {why}") from e
                    time.sleep(0.05)
            yield url
        finally:
            client.close()
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    if why := _missing():
        pytest.fail(why, pytrace=False)
    with redis_server() as url:
        yield url


@dataclass
class Backend:
    """One store backend under test: `where` is a SQLite path or a Redis URL (its database emptied before the
    test)."""

    name: str
    where: str

    def open(self, clock: Callable[[], float] = time.time) -> ClassStoreAPI:
        return open_store(self.where, clock=clock)

    def env(self, monkeypatch) -> None:
        """The app's environment for this backend (ui.class_mode.store opens it)."""
        if self.name == "redis":
            monkeypatch.setenv("ATTENTION_LAB_CLASS_STORE", self.where)
        else:
            monkeypatch.delenv("ATTENTION_LAB_CLASS_STORE", raising=False)
            monkeypatch.setenv("ATTENTION_LAB_CLASS_DB", self.where)

    def vanish(self, store: ClassStoreAPI) -> None:
        """Every class goes without an end (a restarted server: a new SQLite file, an emptied Redis)."""
        if self.name == "redis":
            store._redis.flushdb()
        else:
            store._db.execute("DELETE FROM classes")

    def age_leader(self, store: ClassStoreAPI, code: str, seconds: float) -> None:
        """The class's leader was last seen `seconds` earlier than the store holds."""
        if self.name == "redis":
            key = f"{PREFIX}c:{code}"
            store._redis.hset(key, "leader_seen", repr(float(store._redis.hget(key, "leader_seen")) - seconds))
        else:
            store._db.execute("UPDATE classes SET leader_seen = leader_seen - ? WHERE code = ?", (seconds, code))


@pytest.fixture(params=BACKENDS)
def backend(request, tmp_path) -> Iterator[Backend]:
    if request.param == "sqlite":
        yield Backend("sqlite", str(tmp_path / "class.sqlite"))
        return
    url = request.getfixturevalue("redis_url")
    import redis

    with contextlib.closing(redis.Redis.from_url(url)) as client:
        client.flushdb()
    yield Backend("redis", url)
