"""A fork server ("zygote") that pays for ``import torch`` once, then forks a fresh child per evaluation.

Why: every PyTorch→CUDA evaluation must run in its own process (the candidate is an untrusted
Python module; a crash or a hang must cost one result, never the harness). Starting Python and
importing torch costs 1.5-5 s of CPU per evaluation, far more than the evaluation itself.
Forking a process that has already imported torch, numpy and veriforge's runners costs
milliseconds and keeps the isolation: the child gets its own address space, its own session
(a timeout kills its whole process group), and its own result file.

Fork safety: the server stays single-threaded. It starts with ``OMP_NUM_THREADS=1``,
``OPENBLAS_NUM_THREADS=1``, ``MKL_NUM_THREADS=1`` (unless the caller set them) and
``torch.set_num_threads(1)``, never runs a torch operation, and never starts a thread, so no lock
can be held by a thread that does not exist in the child. Evaluations are parallelised across
processes (one child each), not inside one.

Protocol (one JSON object per line): the client writes ``{"id", "req", "res", "cwd", "out", "err",
"env"}`` to the server's stdin; the server answers ``{"id", "pid"}`` once the child is forked and
``{"id", "code"}`` when it has been reaped (``code`` as :func:`os.waitstatus_to_exitcode`: negative
for a signal). The child replaces its environment with ``env`` (the caller's environment at request
time, so e.g. a per-test ``VERIFORGE_HOME`` is honoured), changes to ``cwd``, sends stdout/stderr
to the ``out``/``err`` files and runs :func:`veriforge.cuda.evaluate.isolation.serve_request`.

:class:`Zygote` (client side) starts the server on first use, restarts it when it has died,
multiplexes concurrent requests from many threads over the one pipe, and kills a child's process
group on timeout. A server that dies mid-request reports that request as lost (the harness turns
it into a ``crash``), and the next request starts a fresh server.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from veriforge.errors import SandboxError

__all__ = ["PRELOAD", "ChildOutcome", "Zygote", "ZygoteError", "get_zygote", "shutdown_zygote"]

PRELOAD = (
    "numpy",
    "torch",
    "veriforge.core.types",
    "veriforge.cuda.cpu",
    "veriforge.cuda.cpu.module",
    "veriforge.cuda.cpu.program",
    "veriforge.cuda.torchbind",
    "veriforge.cuda.torchbind.cpu_backend",
    "veriforge.cuda.tasks.reference",
    "veriforge.cuda.evaluate.backend",
    "veriforge.cuda.evaluate.cpu",
    "veriforge.cuda.evaluate.torchrun",
    "veriforge.cuda.evaluate.isolation",
    "veriforge.cuda.evaluate.torchsplit",
    "veriforge.sandbox.confine",
)
"""Modules the server imports before forking (missing optional ones, e.g. torch, are skipped)."""

_THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
_START_TIMEOUT_S = 300.0  # importing torch on a loaded machine can take a while; once per server
_KILL_WAIT_S = 30.0


class ZygoteError(SandboxError):
    """The fork server could not be started (the caller falls back to a plain subprocess)."""


@dataclass
class ChildOutcome:
    """How a forked evaluation ended: ``code`` (None when unknown), ``timed_out``, or ``lost``
    (the server died before reporting the child's end)."""

    code: int | None
    timed_out: bool = False
    lost: bool = False
    pid: int | None = None


@dataclass
class _Pending:
    id: int
    pid: int | None = None
    code: int | None = None
    lost: bool = False
    started: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)


class _Server:
    """One running server process and the thread that reads its answers."""

    def __init__(self, env: dict[str, str], command: list[str]) -> None:
        self._err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(command,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err,
                                     env=env, start_new_session=True, close_fds=True)
        self.pending: dict[int, _Pending] = {}
        self.lock = threading.Lock()
        self.dead = False
        self.ready = threading.Event()
        self._reader = threading.Thread(target=self._read, name="vf-zygote-reader", daemon=True)
        self._reader.start()

    def wait_ready(self, timeout: float) -> None:
        if not self.ready.wait(timeout) or self.dead:
            self.kill()
            raise ZygoteError(f"the evaluation fork server did not start: {self.stderr_tail() or 'no output'}")

    def stderr_tail(self, limit: int = 2000) -> str:
        try:
            self._err.seek(0)
            text = self._err.read().decode(errors="replace").strip()
        except (OSError, ValueError):
            return ""
        return text[-limit:]

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                msg = json.loads(raw)
            except ValueError:
                continue
            if msg.get("ready"):
                self.ready.set()
                continue
            with self.lock:
                pending = self.pending.get(msg.get("id", -1))
                if pending is None:
                    continue
                if "pid" in msg:
                    pending.pid = int(msg["pid"])
                    pending.started.set()
                if "code" in msg:
                    pending.code = int(msg["code"])
                    self.pending.pop(pending.id, None)
                    pending.started.set()
                    pending.done.set()
        self._lost()

    def _lost(self) -> None:
        """The server's stdout closed: it is dead. Kill what it left running and fail its requests."""
        with self.lock:
            self.dead = True
            lost = list(self.pending.values())
            self.pending.clear()
        for p in lost:
            if p.pid is not None:
                _killpg(p.pid)
            p.lost = True
            p.started.set()
            p.done.set()
        self.ready.set()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()

    def submit(self, pending: _Pending, payload: dict[str, Any]) -> None:
        line = (json.dumps(payload) + "\n").encode()
        with self.lock:
            if self.dead:
                raise BrokenPipeError("the fork server is gone")
            self.pending[pending.id] = pending
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.write(line)
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                self.pending.pop(pending.id, None)
                raise BrokenPipeError("the fork server is gone") from None

    def close(self) -> None:
        """Closing the server's stdin makes it kill its children and exit."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        try:
            self.proc.kill()
        except OSError:
            pass


class Zygote:
    """Client of one fork server (started lazily, restarted after it died). Thread-safe."""

    def __init__(self, start_timeout: float = _START_TIMEOUT_S, command: list[str] | None = None) -> None:
        self.start_timeout = start_timeout
        self.command = command or [sys.executable, "-m", "veriforge.cuda.evaluate.zygote"]
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._ids = 0
        self.starts = 0
        """How many servers this client has started (1 unless one died or was closed)."""
        self.broken = ""
        """Why a server failed to start (then every request raises ZygoteError; callers fall back)."""

    @property
    def server_pid(self) -> int | None:
        server = self._server
        return None if server is None or server.dead else server.proc.pid

    def _server_locked(self) -> _Server:
        server = self._server
        if server is None or server.dead or server.proc.poll() is not None:
            env = dict(os.environ)
            for name in _THREAD_ENV:
                env.setdefault(name, "1")
            server = _Server(env, self.command)
            self._server = server
            self.starts += 1
        return server

    def prestart(self) -> None:
        """Start the server (if none is running) without waiting for its imports to finish."""
        with self._lock:
            self._server_locked()

    def _live_server(self) -> _Server:
        with self._lock:
            if self.broken:
                raise ZygoteError(self.broken)
            server = self._server_locked()
            try:
                server.wait_ready(self.start_timeout)
            except ZygoteError as exc:
                self.broken = str(exc)  # do not pay for a failing start on every request
                raise
            return server

    def run(self, *, req: str, res: str, cwd: str, out: str, err: str, env: dict[str, str],
            timeout_s: float, call: list[Any] | None = None, confine: dict[str, Any] | None = None) -> ChildOutcome:
        """Run one request in a forked child; waits at most ``timeout_s`` for it, then kills it.

        ``call`` = ``[module, function, args]`` runs ``module.function(*args)`` instead of a pickled
        back-end request; ``confine`` (from :func:`veriforge.sandbox.confine.prepare_child`) makes the
        child confine itself before anything else runs (then ``env`` and ``cwd`` come from it).
        """
        with self._lock:
            self._ids += 1
            pending = _Pending(self._ids)
        payload = {"id": pending.id, "req": req, "res": res, "cwd": cwd, "out": out, "err": err, "env": env,
                   "call": call, "confine": confine}
        for attempt in (0, 1):  # a server that died while idle is replaced once
            server = self._live_server()
            try:
                server.submit(pending, payload)
                break
            except BrokenPipeError:
                if attempt:
                    raise ZygoteError("the evaluation fork server died twice in a row: "
                                      f"{server.stderr_tail() or 'no output'}") from None
        deadline = time.monotonic() + timeout_s
        try:
            finished = pending.done.wait(timeout_s)
        except BaseException:  # e.g. KeyboardInterrupt or a test timeout: the child must not outlive us
            if pending.pid is not None:
                _killpg(pending.pid)
            raise
        if finished:
            if pending.pid is not None:
                _killpg(pending.pid)  # processes the candidate left behind die with its session
            return ChildOutcome(code=pending.code, lost=pending.lost, pid=pending.pid)
        # Past the limit: kill the child's whole session; the server reaps it and reports.
        pending.started.wait(max(0.0, deadline + _KILL_WAIT_S - time.monotonic()))
        if pending.pid is not None:
            _killpg(pending.pid)
        pending.done.wait(_KILL_WAIT_S)
        return ChildOutcome(code=pending.code, timed_out=True, lost=pending.lost, pid=pending.pid)

    def close(self) -> None:
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.close()


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


_zygote: Zygote | None = None
_zygote_lock = threading.Lock()


def get_zygote() -> Zygote:
    """The process-wide fork server client (one per process; a forked process gets its own)."""
    global _zygote
    with _zygote_lock:
        if _zygote is None:
            _zygote = Zygote()
        return _zygote


def shutdown_zygote() -> None:
    """Stop this process's fork server (it is started again on the next request)."""
    global _zygote
    with _zygote_lock:
        zygote, _zygote = _zygote, None
    if zygote is not None:
        zygote.close()


def _forget_after_fork() -> None:
    # A forked copy of the harness must not share the parent's pipe to the server.
    global _zygote, _zygote_lock
    _zygote = None
    _zygote_lock = threading.Lock()


atexit.register(shutdown_zygote)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


# ---- the server ----------------------------------------------------------------------------------

def _send(msg: dict[str, Any]) -> None:
    # os.write, not print: nothing may sit in a userspace buffer that a forked child would inherit.
    data = (json.dumps(msg) + "\n").encode()
    while data:
        data = data[os.write(1, data):]


def _preload() -> None:
    import importlib

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)
        try:
            from .torchsplit import warm_up

            warm_up()  # lazy torch imports happen once here, not in every child
        except Exception:
            pass


def _child(msg: dict[str, Any], fds: list[int]) -> int:
    """In the forked child: become an isolated evaluation process and serve one request."""
    os.setsid()
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for fd in fds:
        os.close(fd)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    for target, path in ((1, msg["out"]), (2, msg["err"])):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, target)
        os.close(fd)
    if msg.get("confine"):
        # Fail closed: if any layer cannot be applied the candidate never runs.
        from veriforge.sandbox.confine import confine_child

        confine_child(msg["confine"])
    else:
        os.environ.clear()
        os.environ.update(msg["env"])
        os.chdir(msg["cwd"])
    if msg.get("call"):
        import importlib

        module, function, args = msg["call"]
        return int(getattr(importlib.import_module(module), function)(*args) or 0)
    from .isolation import serve_request

    return serve_request(msg["req"], msg["res"])


def _serve() -> int:
    """The server's loop: fork a child per request line, report pids and exit codes."""
    import selectors

    _preload()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    sel = selectors.DefaultSelector()
    sel.register(0, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)
    children: dict[int, int] = {}
    buffer = b""
    _send({"ready": True, "pid": os.getpid()})
    closing = False
    try:
        while not closing:
            for key, _ in sel.select():
                if key.fd == wake_r:
                    try:
                        while os.read(wake_r, 4096):
                            pass
                    except BlockingIOError:
                        pass
                    continue
                data = os.read(0, 1 << 16)
                if not data:
                    closing = True
                    break
                buffer += data
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if not line.strip():
                        continue
                    msg = json.loads(line)
                    pid = os.fork()
                    if pid == 0:
                        code = 70
                        try:
                            code = _child(msg, [wake_r, wake_w, sel.fileno()])
                        except BaseException:
                            import traceback

                            traceback.print_exc()
                        finally:
                            os._exit(code)
                    children[pid] = int(msg["id"])
                    _send({"id": msg["id"], "pid": pid})
            while children:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                ident = children.pop(pid, None)
                if ident is not None:
                    _send({"id": ident, "code": os.waitstatus_to_exitcode(status)})
    finally:
        for pid in children:
            _killpg(pid)
    return 0


if __name__ == "__main__":
    sys.exit(_serve())

