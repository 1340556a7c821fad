"""The class store: what a class shares between the instructor's tab and the students' tabs (issue #28).

A class is a short code (four letters), the leader's view (the page's URL path and the values of its URL-bound
widgets), the students who follow, and at most one open question with its anonymous answers. Streamlit sessions live
in one server process, and a lecture hall runs two processes behind HAProxy, so the class cannot live in a
process's memory: it lives in one SQLite file in WAL mode that every server process on the machine opens (stdlib
sqlite3; no new server). WAL lets the many readers (followers polling once a second) run beside the one writer.

Where the file is, and why: by default on /dev/shm, a tmpfs, so the class state (answers included) is held in
memory, shared by the server processes of this machine, and never written to a disk (the issue asks that answers
never are); `ATTENTION_LAB_CLASS_DB` names another file (tests use a temp file). `:memory:` would not do: each
connection, and so each process, would get a database of its own. Without /dev/shm (macOS) the file goes to the
temp folder, which may be a disk: the README says so.

A server restart loses the class state, and only it: the first server process to open the store while no other
registered server process is alive empties it (`ClassStore.open_for_server`). A second replica starting beside a
running one keeps the classes. Tabs that reconnect with `?class=CODE` then learn that the class is gone.

Bounds: at most MAX_CLASSES classes (idle ones expire after CLASS_TTL_S), MAX_FOLLOWERS students a class, a view of
at most MAX_STATE_BYTES, MAX_CHOICES choices of MAX_CHOICE_CHARS, a prompt of MAX_PROMPT_CHARS, one answer per student
per question. The instructor key is compared in constant time (`key_matches`) and is never stored here; its tries
are limited per tab and per address, then a cool-down (`key_limit`, a table in this process: why, there).

Two stores, one interface (#42): `ClassStoreAPI` names every operation; `ClassStore` (this SQLite file, the embedded
default: nothing to start, one machine) and `class_redis.RedisClassStore` (ATTENTION_LAB_CLASS_STORE=redis://...,
several machines) implement it with the same behaviour and bounds; `class_store.open_for_server` picks one.
A store that cannot be reached raises `ClassStoreDown`, the one error the UI reports as a class it cannot reach.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import json
import os
import re
import secrets
import sqlite3
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from viz_model.lessons.class_summary import AskedQuestion
from viz_model.lessons.classview import AWAY_TEXT, leader_notice, lost_text  # noqa: F401 (AWAY_TEXT: its old home)
from viz_model.runtime import key_limit

ROOT = Path(__file__).resolve().parents[2]
CODE_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"   # no I or O: read off a projector, they look like 1 and 0
CODE_LEN = 4
MAX_CLASSES = 64
MAX_FOLLOWERS = 500
MAX_STATE_BYTES = 16_000     # a view: a page name and a few dozen widget values
MAX_CHOICES = 16
MAX_CHOICE_CHARS = 60
MAX_PROMPT_CHARS = 200
CLASS_TTL_S = 3 * 3600       # a class whose leader has not been seen for this long is dropped
LEADER_STALE_S = 10.0        # no heartbeat for this long: the leader's tab is closed or asleep
FOLLOWER_STALE_S = 10.0      # a student not seen for this long is not counted
FOLLOWER_DROP_S = 600.0      # ... and is forgotten after this long
QUESTION_KIND = re.compile(r"[a-z][a-z0-9-]{0,31}")  # a preset's kind (its page: "explorer"), "free", "lecture"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS servers (pid INTEGER PRIMARY KEY, started REAL NOT NULL);
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS classes (
    code TEXT PRIMARY KEY, created REAL NOT NULL, leader TEXT, leader_seen REAL NOT NULL,
    page TEXT, view TEXT NOT NULL DEFAULT '{}', version INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS followers (
    code TEXT NOT NULL, student TEXT NOT NULL, seen REAL NOT NULL, following INTEGER NOT NULL,
    PRIMARY KEY (code, student));
CREATE TABLE IF NOT EXISTS questions (
    code TEXT PRIMARY KEY, qid INTEGER NOT NULL, kind TEXT NOT NULL, prompt TEXT NOT NULL, choices TEXT NOT NULL,
    answer TEXT NOT NULL, revealed INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS answers (
    code TEXT NOT NULL, qid INTEGER NOT NULL, student TEXT NOT NULL, choice INTEGER NOT NULL,
    PRIMARY KEY (code, qid, student));
CREATE TABLE IF NOT EXISTS leader_browsers (code TEXT NOT NULL, browser TEXT NOT NULL, PRIMARY KEY (code, browser));
CREATE TABLE IF NOT EXISTS ended (code TEXT PRIMARY KEY, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS asked (
    code TEXT NOT NULL, qid INTEGER NOT NULL, kind TEXT NOT NULL, prompt TEXT NOT NULL, choices TEXT NOT NULL,
    answer TEXT NOT NULL, counts TEXT NOT NULL, PRIMARY KEY (code, qid));
"""
# `asked` (#39): each question a class closed or replaced, with its counts only (no student ids), for the class summary;
# CREATE TABLE IF NOT EXISTS adds it to a store file made before it, whose other tables stay as they were.
_TABLES = ("classes", "followers", "questions", "answers", "leader_browsers", "asked")  # a class's rows, by its code


class ClassError(ValueError):
    """Something a user asked that the class cannot do, with a sentence they understand."""


class ClassStoreDown(sqlite3.OperationalError):
    """The class store cannot be reached (a Redis server that is down or too slow): the pages run on, the class
    says why it is not reachable. A sqlite3.OperationalError, so the UI's one handler for a store it cannot read
    (a locked or missing SQLite file) reports both backends the same way."""


def key_matches(given: str | None, expected: str | None) -> bool:
    """The instructor key check: constant time in the typed key's content (hmac.compare_digest on digests of
    equal length, so neither the content nor the length of the real key leaks through timing). No key configured:
    nobody matches."""
    if not expected or not given:
        return False
    a = hashlib.sha256(given.encode("utf-8", "surrogatepass")).digest()
    b = hashlib.sha256(expected.encode("utf-8", "surrogatepass")).digest()
    return hmac.compare_digest(a, b)


def parse_code(text: str | None) -> str | None:
    """A typed or linked class code, cleaned ('abcd ' -> 'ABCD'), or None when it cannot be one."""
    code = (text or "").strip().upper()
    if len(code) == CODE_LEN and all(c in CODE_LETTERS for c in code):
        return code
    return None


def new_code() -> str:
    return "".join(secrets.choice(CODE_LETTERS) for _ in range(CODE_LEN))


def new_id() -> str:
    """An anonymous id for a tab (a leader or a student): random, tied to nothing about the person."""
    return secrets.token_hex(8)


def default_path() -> Path:
    """ATTENTION_LAB_CLASS_DB, else a file on /dev/shm (memory, shared by this machine's processes), else the temp
    folder; one file per checkout, so two apps on one machine keep their classes apart."""
    env = os.environ.get("ATTENTION_LAB_CLASS_DB")
    if env:
        return Path(env)
    shm = Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())
    tag = hashlib.sha1(str(ROOT).encode()).hexdigest()[:10]
    return base / f"attention-lab-class-{os.getuid()}-{tag}.sqlite"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def checked_question(kind: str, prompt: str, choices: Sequence[str],
                     answer: dict | None) -> tuple[str, list[str], dict]:
    """A question as a store keeps it (prompt and choices stripped), or a ClassError naming the limit it breaks; the
    same checks for every backend."""
    if not QUESTION_KIND.fullmatch(kind):
        raise ClassError(f"Unknown question kind {kind!r}.")
    prompt = prompt.strip()
    choices = [str(c).strip() for c in choices if str(c).strip()]
    if not prompt:
        raise ClassError("Type a question.")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise ClassError(f"Your question has {len(prompt):,} characters; a question has at most "
                         f"{MAX_PROMPT_CHARS}. Shorten it (your text is kept).")
    if long := [i for i, c in enumerate(choices) if len(c) > MAX_CHOICE_CHARS]:
        raise ClassError(f"Choice {long[0] + 1} has {len(choices[long[0]])} characters; a choice has at most "
                         f"{MAX_CHOICE_CHARS}. Shorten it (your text is kept).")
    if not 2 <= len(choices) <= MAX_CHOICES:
        raise ClassError(f"A question needs 2 to {MAX_CHOICES} choices.")
    answer = answer or {}
    if any(not 0 <= i < len(choices) for i in answer.get("correct", [])):
        raise ClassError("The model's answer is not one of the choices.")
    return prompt, choices, answer


def _view_json(page: str, values: dict[str, Any], query: dict[str, Any]) -> str:
    text = json.dumps({"page": page, "values": values, "query": query}, sort_keys=True, separators=(",", ":"))
    if len(text.encode()) > MAX_STATE_BYTES:
        raise ClassError(f"This view has too many settings to share (over {MAX_STATE_BYTES:,} bytes).")
    return text


@dataclass(frozen=True)
class Question:
    qid: int
    kind: str
    prompt: str
    choices: tuple[str, ...]
    answer: dict          # the model's own answer: {"correct": [indices], "why": sentence}, or {} for free text
    revealed: bool


@dataclass(frozen=True)
class ClassView:
    code: str
    leader: str | None
    leader_seen: float
    page: str | None
    values: dict = field(default_factory=dict)
    version: int = 0
    query: dict = field(default_factory=dict)  # the leader's URL query (a page switch opens it like a link)
    question: Question | None = None

    def leader_active(self, now: float) -> bool:
        return self.leader is not None and now - self.leader_seen <= LEADER_STALE_S

    def pulse(self, now: float) -> tuple:
        """What a student's tab shows of the class, in three values: the leader's view (its version), the question
        (its id, and whether it is revealed) and the line about the leader. ui.class_push reruns the students' class
        fragment when it changes."""
        q = self.question
        return self.version, q and (q.qid, q.revealed), leader_notice(self.leader, self.leader_seen, now)


class ClassStoreAPI(ABC):
    """What a class store does, whichever backend keeps it (#42): the SQLite file (`ClassStore`) or Redis
    (`class_redis.RedisClassStore`). The callers (ui.class_mode, Tab, the benches) use only these; the store-level tests
    run each against both. Times come from `clock` (tests move it). A backend that cannot be reached raises
    ClassStoreDown; a request the class cannot do raises ClassError with a sentence."""

    clock: Callable[[], float]

    @abstractmethod
    def student_id(self, browser_token: str) -> str: ...
    @abstractmethod
    def close(self) -> None: ...
    @abstractmethod
    def expire(self) -> int: ...
    @abstractmethod
    def ended(self, code: str) -> bool: ...
    @abstractmethod
    def create(self, leader: str, browser: str | None = None) -> str: ...
    @abstractmethod
    def end(self, code: str) -> None: ...
    @abstractmethod
    def get(self, code: str) -> ClassView | None: ...
    @abstractmethod
    def lead(self, code: str, leader: str, browser: str | None = None) -> bool: ...
    @abstractmethod
    def stop_leading(self, code: str, leader: str) -> None: ...
    @abstractmethod
    def heartbeat(self, code: str, leader: str) -> bool: ...
    @abstractmethod
    def publish(self, code: str, leader: str, page: str, values: dict[str, Any],
                query: dict[str, Any] | None = None) -> int | None: ...
    @abstractmethod
    def seen(self, code: str, student: str, following: bool) -> bool: ...
    @abstractmethod
    def counts(self, code: str) -> tuple[int, int]: ...
    @abstractmethod
    def ask(self, code: str, leader: str, kind: str, prompt: str, choices: Sequence[str],
            answer: dict | None = None) -> int: ...
    @abstractmethod
    def answer(self, code: str, qid: int, student: str, choice: int) -> bool: ...
    @abstractmethod
    def has_answered(self, code: str, qid: int, student: str) -> bool: ...
    @abstractmethod
    def tally(self, code: str, qid: int) -> list[int]: ...
    @abstractmethod
    def reveal(self, code: str, leader: str, qid: int) -> bool: ...
    @abstractmethod
    def asked(self, code: str) -> list[AskedQuestion]: ...
    @abstractmethod
    def led_by(self, browser: str) -> str | None: ...
    @abstractmethod
    def close_question(self, code: str, leader: str) -> None: ...

    def pulses(self, codes: Collection[str]) -> dict[str, tuple]:
        """Each class's ClassView.pulse now; a class gone is left out. One read a class (ui.class_push reads the few
        classes followed on its process ten times a second)."""
        now = self.clock()
        return {code: view.pulse(now) for code in codes if (view := self.get(code)) is not None}


class ClassStore(ClassStoreAPI):
    """The embedded class store: one SQLite file. One connection per process, shared by its script threads under a
    lock (each call is one short transaction). Every method takes the time from `clock` so tests can move it."""

    def __init__(self, path: str | Path | None = None, clock: Callable[[], float] = time.time):
        self.path = Path(path) if path is not None else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.clock = clock
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), timeout=10.0, isolation_level=None, check_same_thread=False)
        with contextlib.suppress(OSError):
            os.chmod(self.path, 0o600)  # answers are the class's only: not readable by other users
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=10000")
        self._db.executescript(_SCHEMA)

    @classmethod
    def open_for_server(cls, path: str | Path | None = None) -> ClassStore:
        """The store of a server process: registered in `servers`; emptied when no other registered server
        process is alive (a restart of the whole server loses the classes, and only them)."""
        store = cls(path)
        with store._tx() as db:
            pids = [p for (p,) in db.execute("SELECT pid FROM servers") if p != os.getpid()]
            alive = [p for p in pids if _pid_alive(p)]
            if not alive:
                for table in (*_TABLES, "ended", "servers", "meta"):
                    db.execute(f"DELETE FROM {table}")  # noqa: S608 (fixed table names)
            else:
                db.execute(f"DELETE FROM servers WHERE pid NOT IN ({','.join('?' * len(alive))})", alive)
            db.execute("INSERT OR REPLACE INTO servers VALUES (?, ?)", (os.getpid(), store.clock()))
        return store

    def student_id(self, browser_token: str) -> str:
        """An anonymous id for a browser from a secret it already holds (its XSRF token): keyed by this store's own
        random salt, so a reload keeps the id (one answer per browser, not per tab) while the id tells nothing about
        the token, and a restart (a new salt) unlinks it."""
        if not getattr(self, "_salt", None):
            with self._tx() as db:
                db.execute("INSERT OR IGNORE INTO meta VALUES ('salt', ?)", (secrets.token_hex(16),))
                (self._salt,) = db.execute("SELECT v FROM meta WHERE k = 'salt'").fetchone()
        return hmac.new(self._salt.encode(), browser_token.encode(), hashlib.sha256).hexdigest()[:16]

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextlib.contextmanager
    def _tx(self):
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _read(self, sql: str, args: Sequence = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    # -- classes -------------------------------------------------------------------------------------------------
    def expire(self) -> int:
        """Drop classes whose leader has been away for CLASS_TTL_S, and students gone for FOLLOWER_DROP_S."""
        now = self.clock()
        with self._tx() as db:
            old = [c for (c,) in db.execute("SELECT code FROM classes WHERE leader_seen < ?", (now - CLASS_TTL_S,))]
            for code in old:
                self._drop(db, code, now)
            db.execute("DELETE FROM followers WHERE seen < ?", (now - FOLLOWER_DROP_S,))
            db.execute("DELETE FROM ended WHERE at < ?", (now - CLASS_TTL_S,))
        return len(old)

    @staticmethod
    def _drop(db, code: str, now: float) -> None:
        """A class goes; its code is remembered as ended (a late link says it ended, not that it never existed)."""
        for table in _TABLES:
            db.execute(f"DELETE FROM {table} WHERE code = ?", (code,))  # noqa: S608 (fixed table names)
        db.execute("INSERT OR REPLACE INTO ended VALUES (?, ?)", (code, now))

    def ended(self, code: str) -> bool:
        """The class `code` ran on this server (since it started) and has ended or expired."""
        return bool(self._read("SELECT 1 FROM ended WHERE code = ?", (code,)))

    def create(self, leader: str, browser: str | None = None) -> str:
        """A new class led by `leader` (a tab's id) in `browser` (its anonymous browser id: never counted as a
        student); its code."""
        self.expire()
        now = self.clock()
        with self._tx() as db:
            (n,) = db.execute("SELECT COUNT(*) FROM classes").fetchone()
            if n >= MAX_CLASSES:
                raise ClassError(f"This server already runs {MAX_CLASSES} classes; end one first (or wait for an "
                                 "idle one to expire).")
            for _ in range(100):
                code = new_code()
                if db.execute("SELECT 1 FROM classes WHERE code = ?", (code,)).fetchone() is None:
                    break
            else:  # 24^4 codes: only with thousands of classes
                raise ClassError("No free class code; try again.")
            db.execute("INSERT INTO classes (code, created, leader, leader_seen) VALUES (?, ?, ?, ?)",
                       (code, now, leader, now))
            db.execute("DELETE FROM ended WHERE code = ?", (code,))
            self._leader_browser(db, code, browser)
        return code

    @staticmethod
    def _leader_browser(db, code: str, browser: str | None) -> None:
        if browser:
            db.execute("INSERT OR IGNORE INTO leader_browsers VALUES (?, ?)", (code, browser))

    def end(self, code: str) -> None:
        with self._tx() as db:
            self._drop(db, code, self.clock())

    def get(self, code: str) -> ClassView | None:
        rows = self._read("SELECT leader, leader_seen, page, view, version FROM classes WHERE code = ?", (code,))
        if not rows:
            return None
        leader, seen, page, view, version = rows[0]
        q = self._read("SELECT qid, kind, prompt, choices, answer, revealed FROM questions WHERE code = ?", (code,))
        question = None
        if q:
            qid, kind, prompt, choices, answer, revealed = q[0]
            question = Question(qid, kind, prompt, tuple(json.loads(choices)), json.loads(answer), bool(revealed))
        view = json.loads(view)
        return ClassView(code, leader, seen, page, values=view.get("values", {}), version=version, question=question,
                         query=view.get("query", {}))

    def lead(self, code: str, leader: str, browser: str | None = None) -> bool:
        """`leader` takes the class over (a new tab of the instructor, after the old one closed) in `browser` (not
        counted as a student from now on). False if the class is gone."""
        with self._tx() as db:
            cur = db.execute("UPDATE classes SET leader = ?, leader_seen = ? WHERE code = ?",
                             (leader, self.clock(), code))
            if cur.rowcount == 1:
                self._leader_browser(db, code, browser)
            return cur.rowcount == 1

    def stop_leading(self, code: str, leader: str) -> None:
        with self._tx() as db:
            db.execute("UPDATE classes SET leader = NULL WHERE code = ? AND leader = ?", (code, leader))

    def heartbeat(self, code: str, leader: str) -> bool:
        """The leader's tab is alive. False when the class is gone or another tab leads it now."""
        with self._tx() as db:
            cur = db.execute("UPDATE classes SET leader_seen = ? WHERE code = ? AND leader = ?",
                             (self.clock(), code, leader))
            return cur.rowcount == 1

    def publish(self, code: str, leader: str, page: str, values: dict[str, Any],
                query: dict[str, Any] | None = None) -> int | None:
        """The leader's view (page URL path, URL-bound widget values, and the URL query they make): a new version
        when it changed. Returns the version now held, or None when `leader` does not lead the class."""
        text = _view_json(page, values, query or {})
        with self._tx() as db:
            row = db.execute("SELECT view, version, leader FROM classes WHERE code = ?", (code,)).fetchone()
            if row is None or row[2] != leader:
                return None
            version = row[1] + (row[0] != text)
            db.execute("UPDATE classes SET page = ?, view = ?, version = ?, leader_seen = ? WHERE code = ?",
                       (page, text, version, self.clock(), code))
            return version

    # -- students ------------------------------------------------------------------------------------------------
    def seen(self, code: str, student: str, following: bool) -> bool:
        """A student's heartbeat (following or exploring). False when the class is gone or full."""
        now = self.clock()
        with self._tx() as db:
            if db.execute("SELECT 1 FROM classes WHERE code = ?", (code,)).fetchone() is None:
                return False
            known = db.execute("SELECT 1 FROM followers WHERE code = ? AND student = ?", (code, student)).fetchone()
            if known is None:
                (n,) = db.execute("SELECT COUNT(*) FROM followers WHERE code = ? AND seen >= ?",
                                  (code, now - FOLLOWER_STALE_S)).fetchone()
                if n >= MAX_FOLLOWERS:
                    return False
            db.execute("INSERT OR REPLACE INTO followers VALUES (?, ?, ?, ?)", (code, student, now, int(following)))
            return True

    def counts(self, code: str) -> tuple[int, int]:
        """(students following, students in the class) seen in the last FOLLOWER_STALE_S seconds. A browser that led
        the class is the instructor's (a second tab on the class link, a tab that stopped leading), not a student."""
        rows = self._read("SELECT COALESCE(SUM(following), 0), COUNT(*) FROM followers WHERE code = ? AND seen >= ? "
                          "AND student NOT IN (SELECT browser FROM leader_browsers WHERE code = ?)",
                          (code, self.clock() - FOLLOWER_STALE_S, code))
        return int(rows[0][0]), int(rows[0][1])

    # -- questions -----------------------------------------------------------------------------------------------
    def ask(self, code: str, leader: str, kind: str, prompt: str, choices: Sequence[str],
            answer: dict | None = None) -> int:
        """Open a question (replacing the open one, whose answers go); its id."""
        prompt, choices, answer = checked_question(kind, prompt, choices, answer)
        with self._tx() as db:
            row = db.execute("SELECT leader FROM classes WHERE code = ?", (code,)).fetchone()
            if row is None or row[0] != leader:
                raise ClassError("Only the tab that leads the class can ask.")
            self._archive(db, code)
            (last,) = db.execute("SELECT MAX(qid) FROM asked WHERE code = ?", (code,)).fetchone()
            qid = (last or 0) + 1
            db.execute("DELETE FROM answers WHERE code = ?", (code,))
            db.execute("INSERT OR REPLACE INTO questions VALUES (?, ?, ?, ?, ?, ?, 0)",
                       (code, qid, kind, prompt, json.dumps(choices), json.dumps(answer)))
        return qid

    def answer(self, code: str, qid: int, student: str, choice: int) -> bool:
        """A student's answer to the open question; only the first one counts. False if not taken (already
        answered, another question is open, revealed, or not a choice)."""
        with self._tx() as db:
            q = db.execute("SELECT qid, choices, revealed FROM questions WHERE code = ?", (code,)).fetchone()
            if q is None or q[0] != qid or q[2] or not 0 <= choice < len(json.loads(q[1])):
                return False
            cur = db.execute("INSERT OR IGNORE INTO answers VALUES (?, ?, ?, ?)", (code, qid, student, choice))
            return cur.rowcount == 1

    def has_answered(self, code: str, qid: int, student: str) -> bool:
        return bool(self._read("SELECT 1 FROM answers WHERE code = ? AND qid = ? AND student = ?",
                               (code, qid, student)))

    def tally(self, code: str, qid: int) -> list[int]:
        """Answers per choice of question `qid` (empty when it is not the open question)."""
        q = self._read("SELECT choices FROM questions WHERE code = ? AND qid = ?", (code, qid))
        if not q:
            return []
        counts = [0] * len(json.loads(q[0][0]))
        for choice, n in self._read("SELECT choice, COUNT(*) FROM answers WHERE code = ? AND qid = ? GROUP BY choice",
                                    (code, qid)):
            counts[choice] = n
        return counts

    def reveal(self, code: str, leader: str, qid: int) -> bool:
        with self._tx() as db:
            cur = db.execute("UPDATE questions SET revealed = 1 WHERE code = ? AND qid = ? AND code IN "
                             "(SELECT code FROM classes WHERE leader = ?)", (code, qid, leader))
            return cur.rowcount == 1

    @staticmethod
    def _counts(db, code: str, qid: int, n_choices: int) -> list[int]:
        counts = [0] * n_choices
        for choice, n in db.execute("SELECT choice, COUNT(*) FROM answers WHERE code = ? AND qid = ? GROUP BY choice",
                                    (code, qid)):
            counts[choice] = n
        return counts

    def _archive(self, db, code: str) -> None:
        """The open question and its counts (never who answered what) go to `asked` before it is replaced or closed."""
        q = db.execute("SELECT qid, kind, prompt, choices, answer FROM questions WHERE code = ?", (code,)).fetchone()
        if q is not None:
            counts = self._counts(db, code, q[0], len(json.loads(q[3])))
            db.execute("INSERT OR REPLACE INTO asked VALUES (?, ?, ?, ?, ?, ?, ?)", (code, *q, json.dumps(counts)))

    def asked(self, code: str) -> list[AskedQuestion]:
        """Every question asked in class `code`, in order: the closed ones with their final counts, then the open one
        with its counts now (lessons.class_summary makes the summary of them)."""
        with self._tx() as db:
            rows = db.execute("SELECT qid, kind, prompt, choices, answer, counts FROM asked WHERE code = ? "
                              "ORDER BY qid", (code,)).fetchall()
            q = db.execute("SELECT qid, kind, prompt, choices, answer FROM questions WHERE code = ?",
                           (code,)).fetchone()
            if q is not None:
                rows.append((*q, json.dumps(self._counts(db, code, q[0], len(json.loads(q[3]))))))
        return [AskedQuestion(qid, kind, prompt, tuple(json.loads(choices)), json.loads(answer),
                              tuple(json.loads(counts))) for qid, kind, prompt, choices, answer, counts in rows]

    def led_by(self, browser: str) -> str | None:
        """The class this browser (its anonymous id) led most recently, if it still runs: an instructor who reloads or
        opens another link takes it back with the key (#39)."""
        rows = self._read("SELECT c.code FROM classes c JOIN leader_browsers b ON b.code = c.code WHERE b.browser = ? "
                          "ORDER BY c.created DESC LIMIT 1", (browser,))
        return rows[0][0] if rows else None

    def close_question(self, code: str, leader: str) -> None:
        with self._tx() as db:
            if db.execute("SELECT 1 FROM classes WHERE code = ? AND leader = ?", (code, leader)).fetchone():
                self._archive(db, code)
                db.execute("DELETE FROM questions WHERE code = ?", (code,))
                db.execute("DELETE FROM answers WHERE code = ?", (code,))


# -- a tab's side of a class -----------------------------------------------------------------------------------
# The class link's ?class=CODE is not a widget's value (joining a class is session state, and the code box is emptied
# once read), so it is read and written through the URL query by hand; every followed setting uses the widgets' own
# bind="query-params".
LINK_PARAM = "class"
KEY_ENV = "ATTENTION_LAB_INSTRUCTOR_KEY"  # the instructor key the server was launched with (class mode is off without)
NOT_FOLLOWED = frozenset({"presenter_mode"})  # the projector's big type is the instructor's, not the students'
PLACE_PARAMS = ("lecture", "step")  # a lecture's place (ui.lecture): in the leader's query, written by hand, no widget
SEEN_EVERY_S = 3.0      # a student's heartbeat is written at most this often
REPUBLISH_S = 2.0       # a leader's unchanged view is republished (its heartbeat) at least this often

# A tab's own state: widget keys (never bound to the URL, so never part of a view) and the tab's bookkeeping
KEY_BOX, LEAD_KEY, FOLLOW_KEY, CODE_BOX = "class_key", "class_lead", "class_follow", "class_code_box"
TAB, CODE, INSTRUCTOR, KEY_BAD = "_class_tab", "_class_code", "_class_instructor", "_class_key_bad"
PAGE, APPLIED, PUBLISHED, ON_OWN = "_class_page", "_class_applied", "_class_published", "_class_on_own"
GONE, ERROR, SEEN_AT, BEAT_AT = "_class_gone", "_class_error", "_class_seen_at", "_class_beat_at"
LOST, DEMOTED, STUDENT = "_class_lost", "_class_demoted", "_class_student"
PAUSED = "_class_paused"  # the store could not be reached on this tab's last try: the class is paused (#42)
LEADS = "_class_leads"    # LEAD_KEY's value, kept where Streamlit does not keep a widget's (Tab.keep_lead)
ECHO, DRAWING, REDRAWS = "_class_echo", "_class_drawing", "_class_redraws"
PAGE_ECHO = "\0page"      # ECHO's entry for the page (no widget key starts with a NUL)
MAX_TRIES = 4             # follow ticks a view may take to settle before the student is told it did not


def jsonable(value: Any) -> Any:
    """A widget value as JSON keeps it (tuples become lists); None for a value JSON cannot carry."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return None


def xsrf_token(cookie: str | None) -> str | None:
    """The browser's secret in Streamlit's XSRF cookie ("2|mask|masked|time": the token under a per-request mask is
    the same for every tab and reload of one browser); None when the cookie is not one."""
    parts = (cookie or "").split("|")
    if len(parts) != 4 or parts[0] != "2":
        return None
    try:
        mask, masked = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
    except ValueError:
        return None
    return bytes(b ^ mask[i % len(mask)] for i, b in enumerate(masked)).hex() if mask else None


FOLLOWING_TEXT = ("You follow the instructor: they move the steps. Switch “Follow the instructor” off in the sidebar's "
                  "Class box to step on your own.")


def class_link(url: str, page: str | None, code: str) -> str:
    """The class link to show, from the address of the page the leader is on (on /rope the app's root is one up)."""
    base = url.split("?")[0].rstrip("/")
    return f"{base.rsplit('/', 1)[0] if page else base}/?class={code}"


def followed_values(keys: Collection[str], state: Mapping[str, Any]) -> dict[str, Any]:
    """{key: value} of the URL-bound widgets `keys` a view carries (JSON values; NOT_FOLLOWED left out)."""
    values = {k: jsonable(state[k]) for k in keys if k not in NOT_FOLLOWED and k in state}
    return {k: v for k, v in values.items() if v is not None}


def take_place(leader_query: Mapping[str, Any], query: MutableMapping[str, Any]) -> bool:
    """A follower's URL takes the leader's lecture place (PLACE_PARAMS: set, changed, or gone when the leader left the
    lecture). True when it changed."""
    changed = False
    for name in PLACE_PARAMS:
        value = leader_query.get(name)
        if query.get(name) != value:
            if value is None:
                del query[name]
            else:
                query[name] = value
            changed = True
    return changed


def link_differs(leader_query: Mapping[str, Any], keys: Collection[str], query: Mapping[str, Any]) -> bool:
    """Whether the tab's URL holds another value than the leader's link for a followed setting (`keys`; one the
    leader's link leaves out is at its default). A setting the tab's URL does not hold takes the state's value: a
    plain class link (?class=CODE) needs no second run."""
    return any(name in query and query.get(name) != leader_query.get(name) for name in keys)


def not_taken_text(what: Collection[str]) -> str:
    """A follower's notice when the leader's view did not take (FollowStep.failed)."""
    return ("Your screen did not " + ("finish drawing the instructor's page" if "page" in what or PAGE_ECHO in what
            else "take the instructor's latest settings") + ". Press Catch up to load their view again.")


def question_notes(prompt: str, choices: Sequence[str]) -> list[str]:
    """What keeps a typed question from being asked, each in a sentence naming the limit (the text is kept)."""
    notes = []
    if len(prompt.strip()) > MAX_PROMPT_CHARS:
        notes.append(f"Your question has {len(prompt.strip()):,} characters; a question has at most "
                     f"{MAX_PROMPT_CHARS}. Shorten it: Ask is refused until then.")
    for i, c in enumerate(choices):
        if len(c.strip()) > MAX_CHOICE_CHARS:
            notes.append(f"Choice {i + 1} has {len(c.strip())} characters; a choice has at most {MAX_CHOICE_CHARS}. "
                         "Shorten it: Ask is refused until then.")
    if len(choices) > MAX_CHOICES:
        notes.append(f"{len(choices)} choices; a question has at most {MAX_CHOICES}.")
    return notes


def question_count(prompt: str, choices: Sequence[str]) -> str:
    """The typed question's size against its limits ("23 / 200 characters · 3 choices (2 to 16)")."""
    return (f"{len(prompt.strip()):,} / {MAX_PROMPT_CHARS} characters · {len(choices)} choice"
            f"{'' if len(choices) == 1 else 's'} (2 to {MAX_CHOICES}, each at most {MAX_CHOICE_CHARS} characters)")


def fit_choice(text: str) -> str:
    """A preset's choice (a token of the view's sentence) cut to MAX_CHOICE_CHARS where it is longer, with a visible
    "…" (a typed choice over the limit is refused instead, with a sentence)."""
    text = text.strip()
    return text if len(text) <= MAX_CHOICE_CHARS else text[:MAX_CHOICE_CHARS - 1] + "…"


def presence_text(following: int, present: int) -> str:
    """The leader's count of the class ("**3** students follow · 1 exploring on their own")."""
    text = f"**{following}** student{' follows' if following == 1 else 's follow'}"
    return text + (f" · {present - following} exploring on their own" if present > following else "")


@dataclass(frozen=True)
class FollowStep:
    """What one look at the leader's view asks of a following tab (nothing, when every field is empty)."""

    stopped: bool = False           # the student moved: following stops
    page: str | None = None         # switch to the leader's page (its settings are set already)
    changed: tuple[str, ...] = ()   # settings just set on this page: rerun what shows them
    full: bool = False              # ... the whole page (a view that did not take from its own rerun)
    redraw: bool = False            # the last full run was cut short: draw the page again
    failed: tuple[str, ...] = ()    # the leader's view did not take after MAX_TRIES ticks: tell the student
    place: bool = False             # a new lecture step: `page` opens afresh (settings the view lacks forgotten)


def store_error_text(e: Exception) -> str:
    """What a tab says when the class store cannot be reached (a Redis that is down, a locked file)."""
    return f"The class store cannot be reached just now ({e}); your page is not affected."


def _told(callback):
    """A widget callback that reads the class store: a store it cannot reach is told in the Class box, never raised
    (Streamlit shows an exception raised in a callback as a traceback)."""
    @functools.wraps(callback)
    def run(self, *args, **kwargs):
        try:
            return callback(self, *args, **kwargs)
        except sqlite3.Error as e:  # ClassStoreDown included
            self.unreachable(e)
    return run


class Tab:
    """One browser tab's side of a class. Its own part lives in `state` (Streamlit's session_state in the app, a dict
    in the tests); the shared part in the class store, which `store` opens when first needed. The methods named after
    a widget are its on_change/on_click callbacks; a leader's tab publishes, a student's follows."""

    def __init__(self, state: MutableMapping[str, Any], store: Callable[[], ClassStoreAPI]):
        self.state, self._store = state, store

    @property
    def store(self) -> ClassStoreAPI:
        return self._store()

    @property
    def id(self) -> str:
        return self.state.setdefault(TAB, new_id())

    def student_id(self, cookie: str | None) -> str:
        """This browser's anonymous id: its XSRF token (`cookie`) hashed with the store's salt; the tab's random id
        where there is no such cookie."""
        if self.state.get(STUDENT) is None:
            token = xsrf_token(cookie)
            self.state[STUDENT] = self.store.student_id(token) if token else self.id
        return self.state[STUDENT]

    def unreachable(self, e: Exception) -> None:
        """The one handler of a class store that cannot be reached (ClassStoreDown: Redis down or too slow; a locked
        SQLite file), for the UI's runs (ui.class_mode.reachable) and the callbacks (`_told`): a tab in a class marks
        it paused (the page runs on; lessons.classview.PAUSED_TEXT is shown); a tab in none is told in the Class box."""
        if self.state.get(CODE):
            self.state[PAUSED] = True
        else:
            self.state[ERROR] = store_error_text(e)

    def view(self, code: str) -> ClassView | None:
        """The class's view from the store; a class found again ends this tab's pause (it resumes). None: the class
        is gone (Tab.leave says why: lost while the store was away, when this tab saw it paused)."""
        view = self.store.get(code)
        if view is not None:
            self.state.pop(PAUSED, None)
        return view

    def leading(self) -> bool:
        s = self.state
        return bool(s.get(INSTRUCTOR) and s.get(LEAD_KEY) and s.get(CODE) and not s.get(DEMOTED))

    # -- joining and leaving ---------------------------------------------------------------------------------------
    def join(self, code: str, follow: bool) -> None:
        self.state[CODE] = code
        self.state[FOLLOW_KEY] = follow
        for key in (APPLIED, ON_OWN, GONE):
            self.state.pop(key, None)

    def leave(self, query: MutableMapping[str, Any], gone: str | None = None) -> None:
        """Out of the class (the "Leave the class" button, or `gone`: a class that is not on the server, whose notice
        the tab shows next), its code out of the URL."""
        if gone:
            self.state[GONE] = self.missing_text(gone)
        for key in (CODE, APPLIED, ON_OWN, PUBLISHED, ECHO, PAUSED):
            self.state.pop(key, None)
        self.state[FOLLOW_KEY] = False
        self.state[LEAD_KEY] = self.state[LEADS] = False
        if LINK_PARAM in query:
            del query[LINK_PARAM]

    def missing_text(self, code: str) -> str:
        """Why class `code` cannot be joined: it ended (the store remembers), it was this tab's class (the server
        restarted since), or there never was such a class on this server (a mistyped code or link). A class this tab
        saw paused (its store away) and that did not come back was lost with the store's memory (#42)."""
        if self.state.get(PAUSED) and self.state.get(CODE) == code:
            return lost_text(code)
        if self.store.ended(code):
            return f"Class {code} has ended. Your view stays as it is; ask for the new class code."
        if self.state.get(CODE) == code:
            return (f"Class {code} is no longer running (the server restarted, or the class ended or expired). "
                    "Your view stays as it is; ask for the new class code.")
        return (f"There is no class {code} on this server. Check the code: it is the {CODE_LEN} letters on the "
                "projector.")

    @_told
    def typed_code(self) -> None:
        """The student's "Class code" box: join the class, or say why not; the box is emptied."""
        code = parse_code(self.state.get(CODE_BOX, ""))
        if code is None:
            self.state[ERROR] = f"A class code is {CODE_LEN} letters, such as the one on the projector."
        elif self.store.get(code) is None:
            self.state[ERROR] = self.missing_text(code)
        else:
            self.join(code, follow=True)
        self.state[CODE_BOX] = ""

    @_told
    def check_key(self, address: str | None = None) -> None:
        """The "Instructor key" box: compared with KEY_ENV's in constant time, then cleared (the key stays nowhere).
        Tries are limited per tab and per `address` (key_limit: during a cool-down no key is compared, the right one
        is refused too). A browser that led a class still running takes it back at once (#39: a reload, another
        link): the same code, its followers still following."""
        typed = self.state.get(KEY_BOX) or ""
        self.state[KEY_BOX] = ""
        tries = key_limit.KEY_TRIES
        if wait := tries.wait_s(self.id, address):
            self.state[KEY_BAD] = key_limit.wait_text(wait)
            return
        if not key_matches(typed, os.environ.get(KEY_ENV)):
            wait = tries.failed(self.id, address)
            self.state[KEY_BAD] = key_limit.wait_text(wait) if wait else "That is not the instructor key."
            return
        tries.succeeded(self.id, address)
        self.state[INSTRUCTOR] = True
        browser = self.state.get(STUDENT)
        code = browser and self.store.led_by(browser)
        if code:
            self.join(code, follow=False)
            self.state[LEAD_KEY] = True
            self.lead_changed()

    def lead_changed(self) -> None:
        """"Lead the class": take over the class this tab is in (a new tab of the instructor, after the old one
        closed or the link was reopened), else start a new one; off: the class stays, led by nobody."""
        s, code = self.state, self.state.get(CODE)
        try:
            if s.get(LEAD_KEY):
                browser = s.get(STUDENT)  # this browser's anonymous id: its other tabs are not students
                if code is None or not self.store.lead(code, self.id, browser):
                    code = self.store.create(self.id, browser)
                s[CODE] = code
                s[FOLLOW_KEY] = False
                for key in (PUBLISHED, GONE, DEMOTED):
                    s.pop(key, None)
            elif code:
                self.store.stop_leading(code, self.id)
        except ClassError as e:
            s[LEAD_KEY] = False
            s[ERROR] = str(e)
        except sqlite3.Error as e:  # the store cannot be reached: not leading, and told so
            s[LEAD_KEY] = False
            self.unreachable(e)
            s[ERROR] = store_error_text(e)
        s[LEADS] = bool(s.get(LEAD_KEY))

    def keep_lead(self) -> None:
        """The start of a run: "Lead the class" stays on after a run that switched page before the sidebar drew the
        toggle (a lecture's Next, or a lecture opened from the sidebar, while leading): Streamlit drops the value of a
        widget a run did not draw, and the toggle came back off (#39: the lead was lost on the first Next)."""
        if self.state.get(LEADS) and not self.state.get(LEAD_KEY):
            self.state[LEAD_KEY] = True

    def catch_up(self) -> None:
        self.state[FOLLOW_KEY] = True
        for key in (APPLIED, ON_OWN, REDRAWS):
            self.state.pop(key, None)

    def follow_changed(self) -> None:
        if self.state.get(FOLLOW_KEY):
            self.catch_up()
        else:
            self.state[ON_OWN] = True

    def enter(self, query: MutableMapping[str, Any]) -> ClassView | None:
        """The start of a run: a demoted leader becomes a student; a class link joins its class (a gone class is left
        with a notice); the code stays in the URL (a reload, or a restarted server, finds the class). The class's view
        when this tab is a student in one, else None."""
        s = self.state
        if s.pop(DEMOTED, False):  # another tab took the class over: this one is a student now
            s[LEAD_KEY] = s[LEADS] = False
            s[FOLLOW_KEY] = False
        raw = query.get(LINK_PARAM)
        linked = parse_code(raw)
        if raw and linked is None:
            s[ERROR] = f"The link's class code {raw[:12]!r} is not a class code."
            del query[LINK_PARAM]
        elif linked and linked != s.get(CODE):
            if self.store.get(linked) is None:
                self.leave(query, gone=linked)
                return None
            self.join(linked, follow=True)
        code = s.get(CODE)
        view = self.view(code) if code else None
        if code and view is None:
            self.leave(query, gone=code)
        if view is None:
            return None
        if query.get(LINK_PARAM) != code:
            query[LINK_PARAM] = code
        return None if self.leading() else view

    # -- following -------------------------------------------------------------------------------------------------
    # Why following keeps books beyond a version number (#43, item 12). The browser sends every widget value it holds
    # with each rerun it asks for, the follow timer's included, and that value overwrites the tab's state. A value
    # this tab set from the leader's view reaches the browser a moment later; until then a rerun the browser asks
    # for carries the value it held before (an echo). Before, an echo read as "the student moved" (following
    # stopped, while the browser's toggle still showed it on), or a value marked applied was silently undone. Now
    # each setting keeps the values the browser may still echo (ECHO) until a follow tick shows the browser holding
    # the leader's value; the latest view is compared with what the tab holds on every tick, so a missed update is
    # taken again on the next tick, and a view that does not take after MAX_TRIES ticks is reported, with Catch up.
    def moved(self, applied: dict) -> bool:
        """The student changed the page or a followed setting since the leader's view was applied: a value the
        browser may still echo (a setting's value before this tab set it, a page before a switch) is not a move."""
        s, echo = self.state, self.state.get(ECHO, {})
        if applied["page"] != s.get(PAGE) and s.get(PAGE) not in echo.get(PAGE_ECHO, ()):
            return True
        return any(key in s and (held := jsonable(s[key])) != value and held not in echo.get(key, ())
                   for key, value in applied["values"].items())

    def behind(self, view: ClassView, target: str) -> list[str]:
        """What the tab holds that differs from the leader's latest view: its settings' keys, PAGE_ECHO for the
        page. The source of truth is the class store's view, not the version last applied."""
        s = self.state
        keys = [k for k, v in view.values.items() if k not in s or jsonable(s[k]) != v]
        return keys + ([PAGE_ECHO] if target != s.get(PAGE) else [])

    def apply(self, values: dict[str, Any]) -> list[str]:
        """Set the leader's values in the tab's state; the keys that changed (each remembers the value the browser
        held before, which it may still echo once)."""
        changed, echo = [], self.state.setdefault(ECHO, {})
        for key, value in values.items():
            if key in self.state and jsonable(self.state[key]) == value:
                continue
            current = self.state.get(key)
            if key in self.state:
                held = echo.setdefault(key, [])
                held.extend(v for v in (jsonable(current), value) if v not in held)
            # a list the tab never held is a tuple too: a range slider's (lo, hi) taken from a list is read as one
            # number (Streamlit 1.67), and a multiselect takes a tuple as it takes a list (60 followers' Cost page)
            fresh = key not in self.state
            self.state[key] = tuple(value) if isinstance(value, list) and (fresh or isinstance(current, tuple)) \
                else value
            changed.append(key)
        return changed

    def confirm(self, applied: dict) -> None:
        """A follow tick (a rerun the browser asked for: its values are in the state): a setting the browser holds
        at the leader's value can no longer be echoed."""
        echo = self.state.get(ECHO, {})
        for key, value in applied["values"].items():
            if key in self.state and jsonable(self.state[key]) == value:
                echo.pop(key, None)

    def seen(self, code: str, student: str, now: float) -> bool:
        """A student's heartbeat, written at most every SEEN_EVERY_S. False when the class is full (or gone). A tab
        with the instructor key is the instructor's, not a student: never counted."""
        if self.state.get(INSTRUCTOR) or now - self.state.get(SEEN_AT, 0.0) < SEEN_EVERY_S:
            return True
        self.state[SEEN_AT] = now
        return self.store.seen(code, student, bool(self.state.get(FOLLOW_KEY)))

    def started(self, page: str) -> None:
        """A full run starts drawing `page` (app.py's begin)."""
        self.state[PAGE] = page
        self.state[DRAWING] = page

    def drew(self) -> None:
        """The full run drew its page to the end (app.py's end, unless a rerun cut it short)."""
        self.state.pop(DRAWING, None)
        self.state.pop(REDRAWS, None)

    def follow_step(self, view: ClassView, pages: Collection[str], now: float, tick: bool = False,
                    query: MutableMapping[str, Any] | None = None) -> FollowStep:
        """One look at the leader's view: give up following if the student moved, else take what the tab does not
        hold of the leader's latest view (`pages`: the app's page paths; a page it does not have is the start page).
        `tick`: a follow tick, a rerun the browser asked for (its widget values are in the state), not a full run.
        `query`: the tab's URL query, which takes the leader's lecture place (a new place: the page opens afresh at
        it, on the same page too, as the leader's did)."""
        s = self.state
        if not s.get(FOLLOW_KEY):
            return FollowStep()
        applied = s.get(APPLIED)
        if applied is not None:
            if tick:
                self.confirm(applied)
            if s.get(PAGE) == applied["page"]:
                s.get(ECHO, {}).pop(PAGE_ECHO, None)  # a full run drew the leader's page: the switch took
            if self.moved(applied):
                s[FOLLOW_KEY], s[ON_OWN] = False, True
                s.pop(ECHO, None)
                return FollowStep(stopped=True)
        if tick and s.get(DRAWING) is not None:  # the last full run was cut short: its page may be blank
            s[REDRAWS] = s.get(REDRAWS, 0) + 1
            return FollowStep(redraw=True, failed=("page",) if s[REDRAWS] > MAX_TRIES else ())
        if view.page is None or not view.leader_active(now):
            return FollowStep()  # nothing published yet, or the leader's tab is gone: stay where you are
        target = view.page if view.page in pages else ""
        placed = query is not None and take_place(view.query, query)
        behind = self.behind(view, target)
        again = applied is not None and applied["version"] == view.version
        if again and not behind and not placed:
            applied["tries"] = 0
            return FollowStep()
        tries = applied.get("tries", 0) + 1 if again else 0
        if tries > MAX_TRIES:  # the view does not take: say so (Catch up tries again), do not loop
            return FollowStep(failed=tuple(behind))
        changed = self.apply(view.values)
        s[APPLIED] = {"page": target, "values": view.values, "version": view.version, "tries": tries}
        # The tab's first look at the class, in a full run, by a URL that holds other settings (a reload of an old
        # link, a replica lost behind the load balancer): on a tab's first run a URL-bound widget takes the URL's
        # value over the state's, so the old view showed and the next tick read it as the student's own move. The
        # page opens again at the leader's link, as a page switch does.
        relink = applied is None and not tick and query is not None and link_differs(view.query, view.values, query)
        if target != s.get(PAGE) or placed or relink:  # a new lecture step opens its page afresh, as the leader's did
            echo = s[ECHO].setdefault(PAGE_ECHO, [])
            if s.get(PAGE) not in echo:
                echo.append(s.get(PAGE))
            return FollowStep(page=target, place=placed)
        return FollowStep(changed=tuple(changed or behind), full=tries > 1)

    # -- leading ---------------------------------------------------------------------------------------------------
    def publish(self, values: dict[str, Any], query: Mapping[str, Any], now: float) -> None:
        """The leader's view (this page, its URL-bound `values`, the URL `query` they make), written when it changed
        or its heartbeat is due. Refused (another tab leads the class now, or it is gone): this tab is demoted, and
        its toggle is set off on the next run."""
        s, code, page = self.state, self.state[CODE], self.state.get(PAGE, "")
        query = {k: v for k, v in query.items() if k != LINK_PARAM and k not in NOT_FOLLOWED}
        text = json.dumps([page, values, query], sort_keys=True)
        if text == s.get(PUBLISHED) and now - s.get(BEAT_AT, 0) < REPUBLISH_S:
            return
        try:
            version = self.store.publish(code, self.id, page, values, query)
        except ClassError as e:
            s[ERROR] = str(e)
            return
        if version is None:  # another tab leads the class now; or the class is gone (a Redis restart): told next run
            s[DEMOTED] = True
            if self.view(code) is not None:
                s[LOST] = code
            return
        s[PUBLISHED], s[BEAT_AT] = text, now
