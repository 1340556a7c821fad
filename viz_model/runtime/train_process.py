"""A training run in a child process, so the web server's GIL never slows a step and a step never slows a page.

The child owns the Trainer (model, optimiser, data) and streams the Run's event dicts down a pipe as fast as it
trains; it never waits for the server. The parent keeps a CPU copy of the weights (`ProcessRun.model`), refreshed
with every attention snapshot and exactly at pause, stop and finish, for the page's teacher forcing, the ablation
demo and checkpoints.

    events = ChildEvents(job, spec)   # inside the registry's worker thread: starts the child, sets job.result
    for ev in events: ...             # what JobRegistry pulls; events.pause() / events.close() steer the child

Children are forked from a forkserver that has already imported torch and viz_model (a start costs tens of ms,
not seconds), never from the threaded server itself. A child whose server dies sees its pipe close and exits.

Parent -> child commands: "pause", "resume", "stop".
Child -> parent messages: ("ready", n_params, weights, step), ("event", dict), ("weights", weights, step),
("paused", weights, step), ("end", weights, step), ("error", message).
"""

from __future__ import annotations

import collections
import functools
import logging
import multiprocessing
import os
import sys
import threading

import numpy as np
import torch

from viz_model.data import TaskData
from viz_model.lessons.train import Run, TrainSpec, build_model
from viz_model.runtime.jobs import worker_threads
from viz_model.tokenizer import load_tokenizer

log = logging.getLogger("attention_lab")

START_TIMEOUT_S = 120.0     # a cold forkserver imports torch first
REPLY_TIMEOUT_S = 60.0      # one step plus a weight transfer, on a loaded machine


def nice_increment() -> int:
    """How much lower than the server a training process runs (env ATTENTION_LAB_TRAIN_NICE, default 5).

    Only matters when cores are short: with two runs on a 2-core server, the students' page reruns then win the
    contested core (CFS weight 1024 vs 335) instead of sharing it evenly with a training step. 0 turns it off.
    """
    try:
        return max(0, min(19, int(os.environ.get("ATTENTION_LAB_TRAIN_NICE", "5"))))
    except ValueError:
        return 5


def use_processes() -> bool:
    """Train in child processes (env ATTENTION_LAB_TRAIN_PROCESS, default 1); 0 trains in server threads."""
    return os.environ.get("ATTENTION_LAB_TRAIN_PROCESS", "1").strip().lower() not in ("0", "false", "no", "off")


_ctx_lock = threading.Lock()
_ctx = None


def context():
    """forkserver (preloaded: see _forkserver_init) where the platform has it, else spawn."""
    global _ctx
    with _ctx_lock:
        if _ctx is None:
            if sys.platform != "win32" and "forkserver" in multiprocessing.get_all_start_methods():
                _ctx = multiprocessing.get_context("forkserver")
                _ctx.set_forkserver_preload(["viz_model.runtime._forkserver_init"])
            else:
                _ctx = multiprocessing.get_context("spawn")
        return _ctx


def warm_up() -> None:
    """Start the forkserver now (in the background), so the first run does not wait for torch to import."""
    def start():
        try:
            ctx = context()
            if ctx.get_start_method() == "forkserver":
                from multiprocessing import forkserver
                forkserver.ensure_running()
        except Exception:  # noqa: BLE001 - the first run will start it (or report why it cannot)
            log.exception("starting the training forkserver")
    threading.Thread(target=start, name="train-forkserver", daemon=True).start()


# -- the child ----------------------------------------------------------------------------------------
def _weights(model: torch.nn.Module) -> dict[str, np.ndarray]:
    """A CPU copy by value (numpy pickles by value: nothing is shared with the child's live tensors)."""
    return {k: v.detach().float().cpu().numpy().copy() for k, v in model.state_dict().items()}


def child_main(spec, conn, threads: int, nice: int = 0) -> None:
    """Entry point of the child: build the Run, then train, checking for commands between steps."""
    torch.set_num_threads(threads)
    if nice and hasattr(os, "nice"):
        os.nice(nice)
    try:
        try:
            run = Run(spec)
        except Exception as e:  # noqa: BLE001 - reported to the page as a sentence
            conn.send(("error", str(e) if isinstance(e, ValueError) else f"{type(e).__name__}: {e}"))
            return
        conn.send(("ready", run.n_params, _weights(run.model), run.step))
        events, paused = run.events(), False
        while True:
            while paused or conn.poll():
                cmd = conn.recv()
                if cmd == "pause" and not paused:
                    paused = True
                    conn.send(("paused", _weights(run.model), run.step))
                elif cmd == "resume":
                    paused = False
                elif cmd == "stop":
                    events.close()
                    conn.send(("end", _weights(run.model), run.step))
                    return
            ev = next(events, None)
            if ev is None:
                conn.send(("end", _weights(run.model), run.step))
                return
            conn.send(("event", ev))
            if ev["kind"] == "snapshot":
                conn.send(("weights", _weights(run.model), run.step))
    except (EOFError, BrokenPipeError, ConnectionResetError, KeyboardInterrupt):
        return  # the server went away: nothing to report to
    finally:
        conn.close()


# -- the parent ---------------------------------------------------------------------------------------
class ProcessRun:
    """The parent's view of a child's run: what the page reads (same attributes as lessons.train.Run, minus trainer)."""

    def __init__(self, spec, n_params: int):
        self.spec = spec
        self.tok = load_tokenizer("word")
        self.config = spec.model_config(self.tok.get_vocab_size())  # the child has validated the spec
        self.n_params = n_params
        with torch.random.fork_rng(devices=[]):  # the copy's random init must not move the server's RNG
            self.model = build_model(spec, self.config).eval()
        self.step = 0            # the step the weights in self.model belong to

    @functools.cached_property
    def data(self):
        """The run's task data (held-out batches for the ablation demo), built on first use."""
        return TaskData(self.spec.task, self.tok, seed=self.spec.seed, batch_size=self.spec.batch_size)

    def load(self, weights: dict[str, np.ndarray], step: int) -> None:
        self.model.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()})
        self.step = int(step)


class ChildEvents:
    """Iterator of a child's events for JobRegistry, with pause() and close() that steer the child."""

    def __init__(self, job, spec):
        self.job = job
        self._pending: collections.deque[dict] = collections.deque()
        self._paused = False
        self._ended = False
        ctx = context()
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=child_main, args=(spec, child, worker_threads(), nice_increment()),
                                name=f"train-{job.id}", daemon=True)
        self.proc.start()
        child.close()
        msg = self._recv(START_TIMEOUT_S)
        if msg[0] == "error":
            self._reap()
            raise ValueError(msg[1])
        _, n_params, weights, step = msg
        self.run = ProcessRun(spec, n_params)
        self.run.load(weights, step)
        job.result = self.run

    def __iter__(self):
        return self

    def __next__(self) -> dict:
        if self._pending:
            return self._pending.popleft()
        if self._ended:
            raise StopIteration
        if self._paused:
            self.conn.send("resume")
            self._paused = False
        while True:
            msg = self._recv(REPLY_TIMEOUT_S)
            if msg[0] == "event":
                return msg[1]
            self._handle(msg, locked=True)  # JobRegistry holds job.model_lock around next()
            if self._ended:
                raise StopIteration

    def pause(self) -> None:
        """Ask the child to pause and wait until it has. The steps it finished meanwhile are recorded, so the job's
        step is the child's; a divergence among them waits for the registry, which ends the run on it."""
        if self._ended or self._paused:
            return
        self.conn.send("pause")
        while not (self._paused or self._ended):
            msg = self._recv(REPLY_TIMEOUT_S)
            if msg[0] != "event":
                self._handle(msg)
            elif self._pending or msg[1].get("kind") == "diverged":
                self._pending.append(msg[1])
            else:
                self.job.record(msg[1])

    def close(self) -> None:
        """Stop the child (it finishes its step), take its final weights, and reap the process."""
        try:
            if not self._ended and self.proc.is_alive():
                self.conn.send("stop")
                while not self._ended:
                    msg = self._recv(REPLY_TIMEOUT_S)
                    if msg[0] == "event":  # steps done before the child saw "stop": keep the record whole
                        self.job.record(msg[1])
                    else:
                        self._handle(msg)
        except (RuntimeError, OSError):
            log.warning("training child of %s did not stop cleanly", self.job.id)
        finally:
            self._ended = True
            self._reap()

    # -- internals -----------------------------------------------------------------------------------
    def _handle(self, msg: tuple, locked: bool = False) -> None:
        kind = msg[0]
        if kind in ("weights", "paused", "end"):
            if locked:
                self.run.load(msg[1], msg[2])
            else:
                with self.job.model_lock:  # pages read the copy under this lock
                    self.run.load(msg[1], msg[2])
            if kind == "paused":
                self._paused = True
            elif kind == "end":
                self._ended = True
                self._reap()
        elif kind == "error":
            self._ended = True
            raise RuntimeError(msg[1])

    def _recv(self, timeout: float) -> tuple:
        try:
            if not self.conn.poll(timeout):
                raise RuntimeError(f"the training process did not answer within {timeout:.0f} s")
            return self.conn.recv()
        except (EOFError, ConnectionResetError, BrokenPipeError) as e:
            self._ended = True
            code = self.proc.exitcode
            raise RuntimeError(f"the training process ended unexpectedly (exit code {code})") from e

    def _reap(self) -> None:
        self.proc.join(timeout=10)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(timeout=5)
        self.conn.close()


def make_events(spec: TrainSpec, process: bool | None = None):
    """Factory for JobRegistry.submit, called in the registry's worker thread (never on the page).

    process=True (the default, see train_process.use_processes): the Run lives in a child process, out of the
    server's GIL; job.result is a ProcessRun whose model copy follows the child's. False: the Run trains in the
    worker thread itself and job.result is the Run.
    """
    in_child = use_processes() if process is None else process

    def start(job):
        if in_child:
            return ChildEvents(job, spec)
        run = Run(spec)
        job.result = run
        return run.events()
    return start
