"""The class store on Redis (#42): one class shared by app replicas on several machines.

ATTENTION_LAB_CLASS_STORE=redis://host:6379/0 selects it (`class_store.open_for_server`). It keeps what the SQLite
store keeps, with the same operations, answers and bounds (`class_mode.ClassStoreAPI`; the store-level tests run on
both). Each operation that reads and writes is one Lua script, so it is atomic on the server as a SQLite transaction
is; the times come from the store's `clock` (tests move it), never from the server's.

A class's keys (PREFIX + kind + ":" + code):
  c: a hash (created, leader, leader_seen, page, view, version)     q: the open question (a hash)
  a: its answers {student: choice}                                   k: the closed questions {qid: [kind, ...counts]}
  fs: students by last seen (a sorted set)                           ff: {student: 1 following / 0 exploring}
  lb: the browsers that led the class (never counted as students)
and three global keys: PREFIX "classes" (code -> created), "ended" (code -> when), "salt" (student ids).

What Redis keeps, and for how long: in memory only. The app asks for no persistence (the tests and deploy/ start
redis-server with `--save '' --appendonly no`); a Redis restart loses the classes, as a restart of the one SQLite
machine does. Every key of a class carries an EXPIRE of CLASS_TTL_S, refreshed by every write to the class, so a
class nobody touches for 3 hours leaves Redis by itself; `expire()` also drops a class whose leader was not seen for
CLASS_TTL_S (the SQLite rule). The `redis` client is the optional extra `[hall]`: without it the SQLite store runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import secrets
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from viz_model.lessons.class_summary import AskedQuestion
from viz_model.runtime import class_mode as cr
from viz_model.runtime.class_mode import ClassError, ClassStoreAPI, ClassStoreDown, ClassView, Question

PREFIX = "attention-lab:"
_CLASS_KEYS = ("c", "q", "a", "k", "fs", "ff", "lb")

# Helpers shared by the scripts (prepended to each): KEYS[1] is the prefix, ARGV[1] the code, ARGV[2] now, ARGV[3] ttl.
# A time is stored as ARGV[2], the client's text of it: Redis's Lua writes a number with 14 digits only.
_LUA_LIB = """
local P, C, now, ttl = KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local function k(kind, code) return P .. kind .. ':' .. (code or C) end
local KINDS = {'c', 'q', 'a', 'k', 'fs', 'ff', 'lb'}
local function touch(code)  -- the class's keys, and the list of classes while any class is active
  for _, kind in ipairs(KINDS) do redis.call('EXPIRE', k(kind, code), ttl) end
  redis.call('EXPIRE', P .. 'classes', ttl)
end
local function drop(code)
  for _, kind in ipairs(KINDS) do redis.call('DEL', k(kind, code)) end
  redis.call('ZREM', P .. 'classes', code)
  redis.call('ZADD', P .. 'ended', ARGV[2], code)
  redis.call('EXPIRE', P .. 'ended', ttl)
end
local function leads(leader) return redis.call('HGET', k('c'), 'leader') == leader end
local function counts_json()
  local q = redis.call('HMGET', k('q'), 'qid', 'choices')
  local n = #cjson.decode(q[2])
  local counts = {}
  for i = 1, n do counts[i] = 0 end
  for _, choice in ipairs(redis.call('HVALS', k('a'))) do
    local i = tonumber(choice) + 1
    counts[i] = counts[i] + 1
  end
  return q[1], '[' .. table.concat(counts, ',') .. ']'
end
local function archive()  -- the open question and its counts only (never who answered what) go to k:
  if redis.call('EXISTS', k('q')) == 1 then
    local qid, counts = counts_json()
    local f = redis.call('HMGET', k('q'), 'kind', 'prompt', 'choices', 'answer')
    redis.call('HSET', k('k'), qid, cjson.encode({f[1], f[2], f[3], f[4], counts}))
  end
end
"""

_SCRIPTS = {
    # ARGV[4] expire before; ARGV[5] leader, ARGV[6] browser, ARGV[7] max classes, ARGV[8..] candidate codes
    "create": """
if redis.call('ZCARD', P .. 'classes') >= tonumber(ARGV[7]) then return {-1} end
for i = 8, #ARGV do
  local code = ARGV[i]
  if redis.call('EXISTS', k('c', code)) == 0 then
    redis.call('HSET', k('c', code), 'created', ARGV[2], 'leader', ARGV[5], 'leader_seen', ARGV[2], 'view', '{}',
               'version', 0)
    redis.call('ZADD', P .. 'classes', ARGV[2], code)
    redis.call('EXPIRE', P .. 'classes', ttl)
    redis.call('ZREM', P .. 'ended', code)
    if ARGV[6] ~= '' then redis.call('SADD', k('lb', code), ARGV[6]) end
    touch(code)
    return {1, code}
  end
end
return {0}
""",
    # ARGV[4] follower drop seconds
    "expire": """
local dropped = 0
for _, code in ipairs(redis.call('ZRANGE', P .. 'classes', 0, -1)) do
  local seen = redis.call('HGET', k('c', code), 'leader_seen')
  if not seen or tonumber(seen) < now - ttl then
    drop(code)
    dropped = dropped + 1
  else
    local gone = redis.call('ZRANGEBYSCORE', k('fs', code), '-inf', '(' .. (now - tonumber(ARGV[4])))
    for _, s in ipairs(gone) do redis.call('ZREM', k('fs', code), s); redis.call('HDEL', k('ff', code), s) end
  end
end
redis.call('ZREMRANGEBYSCORE', P .. 'ended', '-inf', '(' .. (now - ttl))
return dropped
""",
    "end": "drop(C) return 1",
    # ARGV[4] leader, ARGV[5] browser
    "lead": """
if redis.call('EXISTS', k('c')) == 0 then return 0 end
redis.call('HSET', k('c'), 'leader', ARGV[4], 'leader_seen', ARGV[2])
if ARGV[5] ~= '' then redis.call('SADD', k('lb'), ARGV[5]) end
touch()
return 1
""",
    "stop_leading": "if leads(ARGV[4]) then redis.call('HDEL', k('c'), 'leader') end return 1",
    "heartbeat": """
if not leads(ARGV[4]) then return 0 end
redis.call('HSET', k('c'), 'leader_seen', ARGV[2])
touch()
return 1
""",
    # ARGV[4] leader, ARGV[5] page, ARGV[6] the view's JSON
    "publish": """
if not leads(ARGV[4]) then return -1 end
local row = redis.call('HMGET', k('c'), 'view', 'version')
local version = tonumber(row[2]) + ((row[1] ~= ARGV[6]) and 1 or 0)
redis.call('HSET', k('c'), 'page', ARGV[5], 'view', ARGV[6], 'version', version, 'leader_seen', ARGV[2])
touch()
return version
""",
    # ARGV[4] student, ARGV[5] following (0/1), ARGV[6] stale seconds, ARGV[7] max followers
    "seen": """
if redis.call('EXISTS', k('c')) == 0 then return 0 end
if not redis.call('ZSCORE', k('fs'), ARGV[4]) then
  if redis.call('ZCOUNT', k('fs'), now - tonumber(ARGV[6]), '+inf') >= tonumber(ARGV[7]) then return 0 end
end
redis.call('ZADD', k('fs'), ARGV[2], ARGV[4])
redis.call('HSET', k('ff'), ARGV[4], ARGV[5])
touch()
return 1
""",
    # ARGV[4] stale seconds
    "counts": """
local following, present = 0, 0
for _, s in ipairs(redis.call('ZRANGEBYSCORE', k('fs'), now - tonumber(ARGV[4]), '+inf')) do
  if redis.call('SISMEMBER', k('lb'), s) == 0 then
    present = present + 1
    following = following + tonumber(redis.call('HGET', k('ff'), s) or '0')
  end
end
return {following, present}
""",
    # ARGV[4] leader, ARGV[5] kind, ARGV[6] prompt, ARGV[7] choices JSON, ARGV[8] answer JSON
    "ask": """
if not leads(ARGV[4]) then return -1 end
archive()
local last = 0
for _, qid in ipairs(redis.call('HKEYS', k('k'))) do last = math.max(last, tonumber(qid)) end
redis.call('DEL', k('a'), k('q'))
redis.call('HSET', k('q'), 'qid', last + 1, 'kind', ARGV[5], 'prompt', ARGV[6], 'choices', ARGV[7],
           'answer', ARGV[8], 'revealed', 0)
touch()
return last + 1
""",
    # ARGV[4] qid, ARGV[5] student, ARGV[6] choice
    "answer": """
local q = redis.call('HMGET', k('q'), 'qid', 'choices', 'revealed')
local choice = tonumber(ARGV[6])
if not q[1] or q[1] ~= ARGV[4] or q[3] ~= '0' or choice < 0 or choice >= #cjson.decode(q[2]) then return 0 end
local taken = redis.call('HSETNX', k('a'), ARGV[5], choice)
touch()
return taken
""",
    "has_answered": """
if redis.call('HGET', k('q'), 'qid') ~= ARGV[4] then return 0 end
return redis.call('HEXISTS', k('a'), ARGV[5])
""",
    "tally": """
if redis.call('HGET', k('q'), 'qid') ~= ARGV[4] then return false end
local _, counts = counts_json()
return counts
""",
    "reveal": """
if not leads(ARGV[4]) or redis.call('HGET', k('q'), 'qid') ~= ARGV[5] then return 0 end
redis.call('HSET', k('q'), 'revealed', 1)
return 1
""",
    # the closed questions [qid, entry, ...] in any order, then the open one as one more pair
    "asked": """
local out = redis.call('HGETALL', k('k'))
if redis.call('EXISTS', k('q')) == 1 then
  local qid, counts = counts_json()
  local f = redis.call('HMGET', k('q'), 'kind', 'prompt', 'choices', 'answer')
  table.insert(out, qid)
  table.insert(out, cjson.encode({f[1], f[2], f[3], f[4], counts}))
end
return out
""",
    # ARGV[4] browser
    "led_by": """
for _, code in ipairs(redis.call('ZREVRANGE', P .. 'classes', 0, -1)) do
  if redis.call('EXISTS', k('c', code)) == 1 and redis.call('SISMEMBER', k('lb', code), ARGV[4]) == 1 then
    return code
  end
end
return false
""",
    "close_question": """
if leads(ARGV[4]) then
  archive()
  redis.call('DEL', k('q'), k('a'))
end
return 1
""",
}


CONNECT_TIMEOUT_S = 0.25  # loopback or a LAN answers a connect in milliseconds: a dead host is told fast
SOCKET_TIMEOUT_S = 0.5    # a script runs in well under a millisecond; a stopped or swamped server is told fast
DOWN_RETRY_S = 1.0        # after a failure, calls fail at once (no network) for this long, then one try again


def _client(url: str):
    """A redis-py client for `url`, with short timeouts (a page never waits long on a class: one SOCKET_TIMEOUT_S, a
    timeout is not retried) and one retry of a refused or closed connection (a pooled connection that a Redis restart
    closed); a missing `redis` package is told as a store that cannot be reached."""
    try:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry
    except ImportError as e:
        raise ClassStoreDown("ATTENTION_LAB_CLASS_STORE names Redis, but the `redis` client is not installed: "
                             "pip install 'attention-lab[hall]'") from e
    return redis.Redis.from_url(url, decode_responses=True, socket_timeout=SOCKET_TIMEOUT_S,
                                socket_connect_timeout=CONNECT_TIMEOUT_S,
                                retry=Retry(NoBackoff(), 1, supported_errors=(redis.exceptions.ConnectionError,)),
                                health_check_interval=30)


class RedisClassStore(ClassStoreAPI):
    """The class store on a Redis server at `url` (redis://host:port/db). Thread-safe (redis-py's connection pool);
    one per server process. Any Redis error becomes ClassStoreDown with the server's address. A server that failed
    is not asked again for DOWN_RETRY_S (every call in between fails at once), so a dead Redis costs a page nothing
    and no call retries forever; the first call after that window finds a server that is back."""

    def __init__(self, url: str, clock: Callable[[], float] | None = None, prefix: str = PREFIX):
        import time

        self.url, self.prefix, self.clock = url, prefix, clock or time.time
        u = urlsplit(url)
        self.where = f"{u.hostname}:{u.port or 6379}{u.path}" if u.hostname else u.path  # no password in a message
        self._redis = _client(url)
        self._scripts = {name: self._redis.register_script(_LUA_LIB + body) for name, body in _SCRIPTS.items()}

    @classmethod
    def open_for_server(cls, url: str) -> RedisClassStore:
        """A server process's store. Nothing is emptied: the other replicas' classes live on (a Redis restart is what
        loses them, as it keeps nothing on disk)."""
        return cls(url)

    @contextlib.contextmanager
    def _reached(self):
        import time

        import redis

        if time.monotonic() < getattr(self, "_down_until", 0.0):
            raise ClassStoreDown(f"Redis at {self.where} is not answering: it failed under {DOWN_RETRY_S:g} s ago")
        try:
            yield
        except redis.exceptions.RedisError as e:
            self._down_until = time.monotonic() + DOWN_RETRY_S
            raise ClassStoreDown(f"Redis at {self.where} is not answering: {type(e).__name__}") from e

    def _run(self, name: str, code: str, *args: Any) -> Any:
        with self._reached():
            return self._scripts[name](keys=[self.prefix], args=[code, self.clock(), cr.CLASS_TTL_S, *args])

    def student_id(self, browser_token: str) -> str:
        """As ClassStore.student_id: the salt lives in Redis, shared by every replica; a Redis restart renews it."""
        if not getattr(self, "_salt", None):
            with self._reached():
                self._redis.set(self.prefix + "salt", secrets.token_hex(16), nx=True)
                self._salt = self._redis.get(self.prefix + "salt")
        return hmac.new(self._salt.encode(), browser_token.encode(), hashlib.sha256).hexdigest()[:16]

    def close(self) -> None:
        self._redis.close()

    # -- classes -------------------------------------------------------------------------------------------------
    def expire(self) -> int:
        return int(self._run("expire", "", cr.FOLLOWER_DROP_S))

    def ended(self, code: str) -> bool:
        with self._reached():
            return self._redis.zscore(self.prefix + "ended", code) is not None

    def create(self, leader: str, browser: str | None = None) -> str:
        self.expire()
        candidates = [cr.new_code() for _ in range(100)]
        result = self._run("create", "", 0, leader, browser or "", cr.MAX_CLASSES, *candidates)
        if result[0] == -1:
            raise ClassError(f"This server already runs {cr.MAX_CLASSES} classes; end one first (or wait for an "
                             "idle one to expire).")
        if result[0] == 0:
            raise ClassError("No free class code; try again.")
        return result[1]

    def end(self, code: str) -> None:
        self._run("end", code)

    def get(self, code: str) -> ClassView | None:
        with self._reached(), self._redis.pipeline(transaction=True) as pipe:
            row, q = pipe.hgetall(f"{self.prefix}c:{code}").hgetall(f"{self.prefix}q:{code}").execute()
        if not row:
            return None
        question = None
        if q:
            question = Question(int(q["qid"]), q["kind"], q["prompt"], tuple(json.loads(q["choices"])),
                                json.loads(q["answer"]), q["revealed"] == "1")
        view = json.loads(row.get("view", "{}"))
        return ClassView(code, row.get("leader"), float(row["leader_seen"]), row.get("page"),
                         values=view.get("values", {}), version=int(row["version"]), question=question,
                         query=view.get("query", {}))

    def lead(self, code: str, leader: str, browser: str | None = None) -> bool:
        return self._run("lead", code, leader, browser or "") == 1

    def stop_leading(self, code: str, leader: str) -> None:
        self._run("stop_leading", code, leader)

    def heartbeat(self, code: str, leader: str) -> bool:
        return self._run("heartbeat", code, leader) == 1

    def publish(self, code: str, leader: str, page: str, values: dict[str, Any],
                query: dict[str, Any] | None = None) -> int | None:
        text = cr._view_json(page, values, query or {})
        version = int(self._run("publish", code, leader, page, text))
        return None if version < 0 else version

    # -- students ------------------------------------------------------------------------------------------------
    def seen(self, code: str, student: str, following: bool) -> bool:
        return self._run("seen", code, student, int(following), cr.FOLLOWER_STALE_S, cr.MAX_FOLLOWERS) == 1

    def counts(self, code: str) -> tuple[int, int]:
        following, present = self._run("counts", code, cr.FOLLOWER_STALE_S)
        return int(following), int(present)

    # -- questions -----------------------------------------------------------------------------------------------
    def ask(self, code: str, leader: str, kind: str, prompt: str, choices: Sequence[str],
            answer: dict | None = None) -> int:
        prompt, choices, answer = cr.checked_question(kind, prompt, choices, answer)
        qid = int(self._run("ask", code, leader, kind, prompt, json.dumps(choices), json.dumps(answer)))
        if qid < 0:
            raise ClassError("Only the tab that leads the class can ask.")
        return qid

    def answer(self, code: str, qid: int, student: str, choice: int) -> bool:
        return self._run("answer", code, int(qid), student, int(choice)) == 1

    def has_answered(self, code: str, qid: int, student: str) -> bool:
        return self._run("has_answered", code, int(qid), student) == 1

    def tally(self, code: str, qid: int) -> list[int]:
        counts = self._run("tally", code, int(qid))
        return json.loads(counts) if counts else []

    def reveal(self, code: str, leader: str, qid: int) -> bool:
        return self._run("reveal", code, leader, int(qid)) == 1

    def asked(self, code: str) -> list[AskedQuestion]:
        flat = self._run("asked", code)
        rows = sorted((int(qid), json.loads(entry)) for qid, entry in zip(flat[::2], flat[1::2]))
        return [AskedQuestion(qid, kind, prompt, tuple(json.loads(choices)), json.loads(answer),
                              tuple(json.loads(counts))) for qid, (kind, prompt, choices, answer, counts) in rows]

    def led_by(self, browser: str) -> str | None:
        return self._run("led_by", "", browser) or None

    def close_question(self, code: str, leader: str) -> None:
        self._run("close_question", code, leader)
