"""Process-wide registry of background training jobs: a FIFO queue, a slot limit, per-tab leases, a reaper.

The worker thread owns the model; pages only look (through copies taken under the job's lock). A job is a
generator of event dicts; the worker pulls events and checks pause/stop between them. Pausing frees the
training slot and keeps the suspended generator, so resuming continues exactly where it stopped (same
weights, same batches) while another user's queued run can use the slot meanwhile.
No Streamlit here: viz_model.ui.jobs holds the server's one registry and the per-tab leases.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("attention_lab")

QUEUED, RUNNING, PAUSED = "queued", "running", "paused"
DONE, STOPPED, DIVERGED, FAILED, RECLAIMED = "done", "stopped", "diverged", "failed", "reclaimed"
ACTIVE = (QUEUED, RUNNING, PAUSED)
FINISHED = (DONE, STOPPED, DIVERGED, FAILED, RECLAIMED)


def max_training() -> int:
    """Simultaneous training runs on this server (env ATTENTION_LAB_MAX_TRAINING, default 2)."""
    try:
        return max(1, min(16, int(os.environ.get("ATTENTION_LAB_MAX_TRAINING", "2"))))
    except ValueError:
        return 2


def worker_threads() -> int:
    """torch CPU threads per training worker (env ATTENTION_LAB_TRAIN_THREADS, default 1).

    Measured on the 2-core server under load: a tiny model trains ~15x faster on 1 thread than on 2, because
    two intra-op threads per run oversubscribe cores that other runs and pages already use. The setting is
    per OS thread (OpenMP), so pages keep their own.
    """
    try:
        return max(1, min(16, int(os.environ.get("ATTENTION_LAB_TRAIN_THREADS", "1"))))
    except ValueError:
        return 1


@dataclass
class Job:
    id: str
    owner: str
    title: str
    total: int                                   # steps planned
    make_events: Callable[[Job], Iterator[dict]]
    meta: dict[str, Any] = field(default_factory=dict)
    status: str = QUEUED
    message: str = ""
    step: int = 0
    created: float = field(default_factory=time.time)
    run_seconds: float = 0.0                     # time spent in RUNNING (excludes queue and pause)
    events: list[dict] = field(default_factory=list)
    version: int = 0                             # bumps with every event: pages redraw only on change
    result: Any = None                           # whatever the event source exposes (e.g. the trainer)
    lock: threading.Lock = field(default_factory=threading.Lock)
    model_lock: threading.Lock = field(default_factory=threading.Lock)  # held by the worker during a step
    _pause: threading.Event = field(default_factory=threading.Event)
    _stop: threading.Event = field(default_factory=threading.Event)
    _gen: Iterator[dict] | None = None
    _thread: threading.Thread | None = None
    _slice_start: float = 0.0
    _last_step_t: float | None = None            # wall time of the previous step in this running slice
    _timed_steps: int = 0
    _timed_seconds: float = 0.0

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    def record(self, event: dict) -> None:
        with self.lock:
            self.events.append(event)
            if "step" in event:
                self.step = int(event["step"])
            if event.get("kind") == "step":
                now = time.perf_counter()
                if self._last_step_t is not None:  # step-to-step wall time (evals included, set-up excluded)
                    self._timed_steps += 1
                    self._timed_seconds += now - self._last_step_t
                self._last_step_t = now
            self.version += 1

    def events_since(self, start: int = 0) -> list[dict]:
        with self.lock:
            return list(self.events[start:])

    def runtime(self) -> float:
        extra = time.time() - self._slice_start if self.status == RUNNING and self._slice_start else 0.0
        return self.run_seconds + extra

    def steps_per_second(self) -> float:
        """Training speed while running: wall time between steps (model set-up and pauses excluded)."""
        return self._timed_steps / self._timed_seconds if self._timed_seconds > 0 else 0.0

    def eta_seconds(self) -> float | None:
        rate = self.steps_per_second()
        return (self.total - self.step) / rate if rate > 0 else None


class JobRegistry:
    """Jobs by id + a lock + a BoundedSemaphore of training slots + a FIFO queue + leases + a reaper."""

    def __init__(self, slots: int | None = None, grace_s: float = 120.0, max_runtime_s: float = 1800.0,
                 keep_finished_s: float = 3600.0, max_jobs_per_owner: int = 8, reap_every_s: float = 5.0):
        self.slots = slots or max_training()
        self._sem = threading.BoundedSemaphore(self.slots)
        self.lock = threading.RLock()
        self.jobs: dict[str, Job] = {}
        self.queue: deque[str] = deque()
        self.leases: dict[str, int] = {}           # owner -> open tabs
        self.released_at: dict[str, float] = {}    # owner -> when its last tab went away
        self.grace_s, self.max_runtime_s, self.keep_finished_s = grace_s, max_runtime_s, keep_finished_s
        self.max_jobs_per_owner = max_jobs_per_owner
        self._ids = itertools.count(1)
        self._closed = threading.Event()
        self._reaper = threading.Thread(target=self._reap_loop, args=(reap_every_s,), name="job-reaper",
                                        daemon=True)
        self._reaper.start()

    # -- submitting and controlling -----------------------------------------------------------------
    def submit(self, owner: str, title: str, total: int, make_events: Callable[[Job], Iterator[dict]],
               meta: dict | None = None) -> Job:
        with self.lock:
            mine = [j for j in self.jobs.values() if j.owner == owner and j.active]
            if len(mine) >= self.max_jobs_per_owner:
                raise ValueError(f"you already have {len(mine)} runs queued or running; stop one first.")
            job = Job(f"job{next(self._ids)}", owner, title, int(total), make_events, dict(meta or {}))
            self.jobs[job.id] = job
            self.queue.append(job.id)
            self._dispatch()
            return job

    def get(self, job_id: str | None) -> Job | None:
        with self.lock:
            return self.jobs.get(job_id) if job_id else None

    def queue_position(self, job_id: str) -> int | None:
        """1 = next to start; None when not waiting."""
        with self.lock:
            return self.queue.index(job_id) + 1 if job_id in self.queue else None

    def running(self) -> list[Job]:
        with self.lock:
            return [j for j in self.jobs.values() if j.status == RUNNING]

    def pause(self, job_id: str) -> None:
        job = self.get(job_id)
        if job and job.status in (RUNNING, QUEUED):
            with self.lock:
                if job.status == QUEUED and job._gen is None:
                    return  # not started yet: nothing to pause
                job._pause.set()

    def resume(self, job_id: str) -> None:
        with self.lock:
            job = self.jobs.get(job_id)
            if job is None:
                return
            job._pause.clear()
            if job.status == PAUSED:
                job.status, job.message = QUEUED, ""
                self.queue.append(job.id)
                self._dispatch()

    def stop(self, job_id: str, status: str = STOPPED, message: str = "stopped by you") -> None:
        with self.lock:
            job = self.jobs.get(job_id)
            if job is None or not job.active:
                return
            job._stop.set()
            if job.status == RUNNING:
                job.message = message  # the worker finishes the step, then sets the status
                job.meta["stop_status"] = status
                return
            if job.id in self.queue:
                self.queue.remove(job.id)
            self._finish(job, status, message)

    def remove(self, job_id: str) -> None:
        """Forget a job (stopping it first); its results are gone."""
        self.stop(job_id)
        job = self.get(job_id)
        if job is not None and job._thread is not None:
            job._thread.join(timeout=30)
        with self.lock:
            self.jobs.pop(job_id, None)

    def wait(self, job_id: str, timeout: float = 60.0, until: tuple[str, ...] = FINISHED + (PAUSED,)) -> Job:
        """Block until the job reaches one of `until` (tests, CLI and the bench)."""
        deadline = time.time() + timeout
        job = self.get(job_id)
        while job is not None and job.status not in until:
            if time.time() > deadline:
                raise TimeoutError(f"{job_id} still {job.status} after {timeout} s")
            time.sleep(0.01)
        return job

    # -- the scheduler ------------------------------------------------------------------------------
    def _dispatch(self) -> None:
        """Start queued jobs while slots are free (FIFO). Called with the lock held."""
        while self.queue and self._sem.acquire(blocking=False):
            job = self.jobs[self.queue.popleft()]
            job.status, job._slice_start, job._last_step_t = RUNNING, time.time(), None
            job._thread = threading.Thread(target=self._work, args=(job,), name=f"train-{job.id}", daemon=True)
            job._thread.start()

    def _work(self, job: Job) -> None:
        end_status, message = None, ""
        try:
            import torch

            torch.set_num_threads(worker_threads())  # this OS thread only
            if job._gen is None:
                job._gen = job.make_events(job)
            while True:
                if job._stop.is_set():
                    end_status, message = job.meta.get("stop_status", STOPPED), job.message or "stopped"
                    break
                if job._pause.is_set():
                    if hasattr(job._gen, "pause"):  # a source that runs ahead (a child process) must be told
                        job._gen.pause()
                    break
                with job.model_lock:
                    event = next(job._gen, None)
                if event is None:
                    end_status, message = DONE, "finished"
                    break
                job.record(event)
                if event.get("kind") == "diverged":
                    end_status, message = DIVERGED, event.get("message", "training diverged")
                    break
        except Exception as e:  # noqa: BLE001 - a broken run must not take the server down
            log.exception("training job %s failed", job.id)
            end_status, message = FAILED, f"training failed: {e}"
        finally:
            if end_status not in (None, DONE):
                self._close_source(job)  # outside the registry lock: a child process may take a step to stop
            with self.lock:
                job.run_seconds += time.time() - job._slice_start
                job._slice_start = 0.0
                if end_status is None:
                    job.status, job.message = PAUSED, "paused"
                else:
                    self._finish(job, end_status, message)
                self._sem.release()
                self._dispatch()

    def _finish(self, job: Job, status: str, message: str) -> None:
        job.status, job.message = status, message
        job.meta["finished_at"] = time.time()
        if status != DONE:
            self._close_source(job)
        job._gen = None

    @staticmethod
    def _close_source(job: Job) -> None:
        """Close the event source once: runs a generator's finally: (e.g. restores last good weights), or stops a
        child process and takes its final weights."""
        gen = job._gen
        if gen is not None and hasattr(gen, "close") and not job.meta.get("source_closed"):
            job.meta["source_closed"] = True
            try:
                gen.close()
            except Exception:  # noqa: BLE001
                log.exception("closing job %s", job.id)

    # -- leases and the reaper ----------------------------------------------------------------------
    def acquire_lease(self, owner: str) -> None:
        with self.lock:
            self.leases[owner] = self.leases.get(owner, 0) + 1
            self.released_at.pop(owner, None)

    def release_lease(self, owner: str) -> None:
        """Runs on Streamlit's event loop when a tab disconnects: only bookkeeping, never join()."""
        with self.lock:
            n = self.leases.get(owner, 0) - 1
            if n <= 0:
                self.leases.pop(owner, None)
                self.released_at[owner] = time.time()
            else:
                self.leases[owner] = n

    def reap(self, now: float | None = None) -> list[str]:
        """Stop runs whose tab is gone past the grace period or that ran too long; forget old results."""
        now = time.time() if now is None else now
        reaped = []
        with self.lock:
            for job in list(self.jobs.values()):
                gone = job.owner in self.released_at and now - self.released_at[job.owner] > self.grace_s
                if job.active and gone:
                    self.stop(job.id, RECLAIMED, "stopped: the browser tab that started it was closed")
                    reaped.append(job.id)
                elif job.active and job.runtime() > self.max_runtime_s:
                    self.stop(job.id, RECLAIMED, f"stopped after the {self.max_runtime_s / 60:.0f}-minute limit")
                    reaped.append(job.id)
                elif not job.active and (gone or now - job.meta.get("finished_at", now) > self.keep_finished_s):
                    self.jobs.pop(job.id, None)
                    reaped.append(job.id)
            for owner, t in list(self.released_at.items()):
                if now - t > self.grace_s and not any(j.owner == owner for j in self.jobs.values()):
                    del self.released_at[owner]
        return reaped

    def _reap_loop(self, every: float) -> None:
        while not self._closed.wait(every):
            try:
                self.reap()
            except Exception:  # noqa: BLE001
                log.exception("job reaper")

    def shutdown(self) -> None:
        """Stop every job and the reaper (cache clear / tests)."""
        self._closed.set()
        for job_id in list(self.jobs):
            self.stop(job_id)
        for job in list(self.jobs.values()):
            if job._thread is not None:
                job._thread.join(timeout=30)
