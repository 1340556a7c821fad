#!/usr/bin/env python3
"""A lecture hall on one machine or several (#42): Redis, N app replicas, and HAProxy with sticky cookies in front.

    ATTENTION_LAB_INSTRUCTOR_KEY=... .venv/bin/python deploy/lecture_hall.py --replicas 2
    # students open http://<this machine>:8080/ ; Ctrl-C stops everything this script started

One machine, no Redis (`make hall`: one replica per core): `--sqlite` puts the class in one SQLite file that this
machine's replicas share (ATTENTION_LAB_CLASS_DB, else the app's own file on /dev/shm, in memory). A Streamlit process
runs its students' pages on one core (the GIL): 60 followers of a lecture waited 2.2-2.8 s (p95) for a page switch on
one process, 1.3-1.5 s on two replicas of a 2-core machine (bench/lecture_present.py --replicas 2 measures this setup).

What runs, and why:
- Redis (Debian's redis-server): the class store every replica reads (ATTENTION_LAB_CLASS_STORE=redis://...). Started
  with `--save '' --appendonly no`: answers are kept in memory only, never on a disk; a Redis restart loses the classes
  (and only them). Every key of a class expires CLASS_TTL_S (3 h) after its last activity.
- N replicas (`streamlit run app.py`, one Python process each, so one core each): Streamlit keeps a tab's session in
  one process. Each replica gets its own ATTENTION_LAB_CLASS_DB file, so nothing but Redis joins them.
- HAProxy: deploy/haproxy.cfg (the file the benches measure) with this hall's bind address and one `server` line per
  replica. A cookie pins each browser to a replica; HAProxy checks each replica's health endpoint, Streamlit's own
  GET /_stcore/health (200 when the server runs), and sends no student to a replica that fails it.

Several machines: the same script, with host names instead of 127.0.0.1 (Redis and HAProxy on machine A, 10.0.0.1;
replicas on A and B, 10.0.0.2). Keep Redis on a private network (it has no password unless you give it one: then
write it in the URL, redis://:PASSWORD@10.0.0.1:6379/0).

    # machine B: two replicas, the class store on A's Redis, no Redis and no HAProxy of its own
    deploy/lecture_hall.py --replicas 2 --address 10.0.0.2 --redis-url redis://10.0.0.1:6379/0 --no-front
    # machine A: Redis on its private address, two replicas, and HAProxy in front of all four
    deploy/lecture_hall.py --replicas 2 --address 10.0.0.1 --redis-bind 10.0.0.1 --bind 0.0.0.0:8080 \
        --servers 10.0.0.1:8501,10.0.0.1:8502,10.0.0.2:8501,10.0.0.2:8502

`--print-config` prints the HAProxy config it would run and exits. `--ready-file F` writes the hall's addresses and
process ids (JSON) to F once every part answers its health check (the test and bench/hall_faults.py wait on it).

Faults (#42, item 3): a replica that dies is reported and the hall goes on with the others; HAProxy's health check
takes it out and `option redispatch` sends its students' reconnecting tabs to a live replica, where their URL's
?class=CODE puts them back in the class. The hall stops when Redis (started here), HAProxy or every replica is gone.
Every process this script starts is stopped when it exits (Ctrl-C, SIGTERM, or one of those).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "deploy" / "haproxy.cfg"
START_TIMEOUT_S = 120.0  # a replica imports torch and loads the models: ~10-30 s on 2 cores


def haproxy_config(bind: str, servers: list[str], stats_socket: Path | None = None) -> str:
    """deploy/haproxy.cfg with this hall's front address and one `server appI HOST:PORT check cookie appI` line per
    replica (its own lines dropped), so one file describes every hall."""
    cfg = TEMPLATE.read_text()
    cfg = re.sub(r"^(\s*bind\s+)\S+", rf"\g<1>{bind}", cfg, count=1, flags=re.M)
    lines = [ln for ln in cfg.splitlines() if not re.match(r"\s*server\s+app\d+\s", ln)]
    # a replica that fails 2 health checks 2 s apart gets no new student; one pass brings it back
    lines += [f"    server app{i} {addr} check inter 2s fall 2 rise 1 cookie app{i}"
              for i, addr in enumerate(servers, 1)]
    cfg = "\n".join(lines) + "\n"
    if stats_socket is not None:  # `show stat` on it tells each replica's health check (the test reads it)
        cfg = cfg.replace("global\n", f"global\n    stats socket {stats_socket} mode 600 level user\n", 1)
    return cfg


def redis_answers(host: str, port: int) -> bool:
    """A Redis PING over a plain socket (the script needs no client library)."""
    try:
        with socket.create_connection((host, port), timeout=1.0) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith((b"+PONG", b"-NOAUTH"))
    except OSError:
        return False


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


class Hall:
    """The processes of this hall, each in its own process group, stopped in reverse order."""

    def __init__(self, run_dir: Path):
        self.run_dir, self.procs = run_dir, []

    def start(self, name: str, cmd: list[str], env: dict | None = None) -> subprocess.Popen:
        log = open(self.run_dir / f"{name}.log", "w")
        p = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
                             start_new_session=True)
        p.name, p.log = name, log
        self.procs.append(p)
        return p

    def wait(self, what: str, ok, timeout: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while not ok():  # a condition, polled, bounded in time
            if dead := [p.name for p in self.procs if p.poll() is not None]:
                raise RuntimeError(f"{', '.join(dead)} exited; see {self.run_dir}/{dead[0]}.log")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not answer within {timeout:.0f} s; logs in {self.run_dir}")
            time.sleep(0.25)

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)
            p.log.close()


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--replicas", type=int, default=2, help="app replicas on this machine (0: none)")
    ap.add_argument("--address", default="127.0.0.1", help="the address this machine's replicas listen on")
    ap.add_argument("--app-port", type=int, default=8501, help="the first replica's port (the next ones count up)")
    ap.add_argument("--app-ports", default="", help="each replica's port, comma separated (instead of --app-port)")
    ap.add_argument("--sqlite", action="store_true",
                    help="one machine: the replicas share one SQLite file (ATTENTION_LAB_CLASS_DB, else the app's on "
                         "/dev/shm), no Redis")
    ap.add_argument("--redis-url", default="", help="use this Redis (redis://host:6379/0) instead of starting one")
    ap.add_argument("--redis-bind", default="127.0.0.1", help="the address the Redis started here listens on")
    ap.add_argument("--redis-port", type=int, default=6379)
    ap.add_argument("--no-front", action="store_true", help="start no HAProxy (replicas of a hall fronted elsewhere)")
    ap.add_argument("--bind", default="0.0.0.0:8080", help="HAProxy's front address, where students connect")
    ap.add_argument("--servers", default="", help="HOST:PORT of every replica HAProxy spreads students over "
                                                  "(default: this machine's replicas)")
    ap.add_argument("--run-dir", default="", help="logs, each replica's SQLite file, the HAProxy config")
    ap.add_argument("--ready-file", default="", help="write the hall's addresses here (JSON) once it is healthy")
    ap.add_argument("--print-config", action="store_true", help="print the HAProxy config and exit")
    a = ap.parse_args(argv)
    if a.sqlite and a.redis_url:
        ap.error("--sqlite keeps the class in a file of this machine; --redis-url names a Redis: give one of them")
    a.ports = [int(p) for p in a.app_ports.split(",")] if a.app_ports else \
        [a.app_port + i for i in range(a.replicas)]
    a.servers = a.servers.split(",") if a.servers else [f"{a.address}:{p}" for p in a.ports]
    return a


def run(a) -> int:
    run_dir = Path(a.run_dir or tempfile.mkdtemp(prefix="lecture-hall-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    if a.print_config:
        print(haproxy_config(a.bind, a.servers), end="")
        return 0
    hall = Hall(run_dir)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stop() runs in `finally`
    try:
        # --sqlite: ATTENTION_LAB_CLASS_DB if set, else the app's own file on /dev/shm (in memory, as Redis's is)
        store = (os.environ.get("ATTENTION_LAB_CLASS_DB") or "the app's SQLite file on /dev/shm") if a.sqlite else None
        redis_url = "" if a.sqlite else a.redis_url
        if not a.sqlite and not redis_url:
            exe = shutil.which("redis-server") or sys.exit("redis-server is not installed: apt-get install -y "
                                                         "redis-server (or give --redis-url)")
            hall.start("redis", [exe, "--bind", a.redis_bind, "--port", str(a.redis_port), "--save", "",
                                 "--appendonly", "no", "--dir", str(run_dir)])
            hall.wait("redis", lambda: redis_answers(a.redis_bind, a.redis_port), 20)
            redis_url = f"redis://{a.redis_bind}:{a.redis_port}/0"
        urls = []
        for i, port in enumerate(a.ports, 1):
            env = {"ATTENTION_LAB_CLASS_STORE": redis_url}  # --sqlite: every replica inherits the same file
            if not a.sqlite:  # each its own file, so only Redis joins them
                env["ATTENTION_LAB_CLASS_DB"] = str(run_dir / f"class-replica{i}.sqlite")
            hall.start(f"replica{i}", [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                                       "--server.address", a.address, "--server.headless", "true",
                                       "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
                       env)
            urls.append(f"http://{a.address}:{port}")
        for i, url in enumerate(urls, 1):
            hall.wait(f"replica{i}", lambda url=url: http_ok(url + "/_stcore/health"))
        front = None
        if not a.no_front:
            exe = shutil.which("haproxy") or "/usr/sbin/haproxy"
            cfg = run_dir / "haproxy.cfg"
            cfg.write_text(haproxy_config(a.bind, a.servers, run_dir / "haproxy.sock"))
            hall.start("haproxy", [exe, "-f", str(cfg), "-db"])
            host, port = a.bind.rsplit(":", 1)
            front = f"http://{'127.0.0.1' if host in ('0.0.0.0', '*', '') else host}:{port}"
            hall.wait("haproxy", lambda: http_ok(front + "/_stcore/health"), 30)
        info = {"front": front, "replicas": urls, "redis": redis_url, "sqlite": store,
                "run_dir": str(run_dir),
                "stats_socket": None if a.no_front else str(run_dir / "haproxy.sock"),
                "pids": {p.name: p.pid for p in hall.procs}}
        if not os.environ.get("ATTENTION_LAB_INSTRUCTOR_KEY"):
            print("Note: ATTENTION_LAB_INSTRUCTOR_KEY is not set, so class mode is off on these replicas.")
        print(f"Lecture hall ready: {front or 'no front here'} -> {len(urls)} replica(s), class store "
              f"{redis_url or store}. "
              f"Logs: {run_dir}. Ctrl-C stops it.", flush=True)
        if a.ready_file:
            Path(a.ready_file).write_text(json.dumps(info))
        told: set[str] = set()
        while True:  # until Ctrl-C / SIGTERM, or the hall cannot serve
            dead = {p.name for p in hall.procs if p.poll() is not None}
            for name in sorted(dead - told):
                print(f"{name} exited (see {run_dir}/{name}.log).", file=sys.stderr, flush=True)
            told |= dead
            replicas = {f"replica{i}" for i in range(1, len(urls) + 1)}
            if dead - replicas or (replicas and replicas <= dead):  # Redis or HAProxy gone, or every replica
                print(f"The hall cannot serve without {', '.join(sorted(dead))}; stopping it.", file=sys.stderr)
                return 1
            time.sleep(1.0)
    except KeyboardInterrupt:
        return 0
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 1
    finally:
        hall.stop()


if __name__ == "__main__":
    sys.exit(run(parse_args()))
