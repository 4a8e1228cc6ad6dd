"""Running a back-end call in a fresh process with a time limit and a process-group kill.

Used for every back-end that does not isolate candidates itself (all PyTorch→CUDA candidates,
which are Python modules the harness must never import, and GPU back-ends, where a CUDA error
can poison the context of the process). The request and the result cross the boundary as
pickle files; the child runs in its own session so a timeout kills every process it started.
A crash (segfault, abort, ``os._exit``) or a hang comes back as a :class:`BackendRun` with
status ``crash`` / ``timeout`` - never as an exception in the harness.

Two ways to get the fresh process, same isolation: for the CPU back-end a child forked from the
fork server of :mod:`.zygote` (torch is imported once per harness process, not once per
evaluation: milliseconds instead of seconds); otherwise (GPU back-ends, where CUDA must be
initialised in a clean process, or ``VERIFORGE_EVAL_ZYGOTE=0``) a new interpreter
(``python -m veriforge.cuda.evaluate.isolation``). If the fork server cannot start, the new
interpreter is used.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .backend import BackendRun

__all__ = ["ZYGOTE_BACKENDS", "run_isolated", "serve_request", "uses_zygote"]

_GRACE_S = 30.0  # interpreter start and imports of a fresh process, on top of the candidate's limit
_ZYGOTE_GRACE_S = 5.0  # a forked child has everything imported already
ZYGOTE_BACKENDS = frozenset({"cpu"})
"""Back-ends whose isolated calls run in children of the fork server (GPU ones get a new interpreter)."""


def uses_zygote(backend: str) -> bool:
    """True when calls for ``backend`` go through the fork server on this machine."""
    if os.environ.get("VERIFORGE_EVAL_ZYGOTE", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    return backend in ZYGOTE_BACKENDS and hasattr(os, "fork") and sys.platform != "win32"


def run_isolated(backend: str, method: str, request: Any, timeout_s: float, *, env: dict[str, str] | None = None,
                 what: str = "the candidate") -> BackendRun:
    """``get_backend(backend).<method>(request)`` in a child process; ``timeout_s`` is the limit."""
    with tempfile.TemporaryDirectory(prefix="vf-iso-") as tmp:
        req_path, res_path = Path(tmp) / "request.pkl", Path(tmp) / "result.pkl"
        out_path, err_path = Path(tmp) / "stdout", Path(tmp) / "stderr"
        with open(req_path, "wb") as f:
            pickle.dump((backend, method, request), f, protocol=pickle.HIGHEST_PROTOCOL)
        child_env = {**os.environ, **(env or {})}
        lost = False
        if uses_zygote(backend):
            from .zygote import ZygoteError, get_zygote

            try:
                outcome = get_zygote().run(req=str(req_path), res=str(res_path), cwd=tmp, out=str(out_path),
                                           err=str(err_path), env=child_env, timeout_s=timeout_s + _ZYGOTE_GRACE_S)
            except ZygoteError:
                code, timed_out = _run_subprocess(req_path, res_path, out_path, err_path, tmp, child_env, timeout_s)
            else:
                code, timed_out, lost = outcome.code, outcome.timed_out, outcome.lost
        else:
            code, timed_out = _run_subprocess(req_path, res_path, out_path, err_path, tmp, child_env, timeout_s)
        stderr = _read(err_path)
        stdout = _read(out_path)
        if timed_out:
            return BackendRun(status="timeout", message=f"{what} did not finish within {timeout_s:g} s and was "
                                                        f"killed", log=_tail(stdout + stderr))
        if res_path.exists():
            with open(res_path, "rb") as f:
                result = pickle.load(f)
            if isinstance(result, BackendRun):
                if stdout or stderr:
                    result.log = (result.log + "\n" + _tail(stdout + stderr)).strip()
                return result
        if lost or code is None:
            reason = "its fork server died"
        else:
            reason = f"signal {-code}" if code < 0 else f"exit status {code}"
        return BackendRun(status="crash", message=f"{what} crashed the evaluation process ({reason}):\n"
                                                  f"{_tail(stderr) or '(no output)'}", log=_tail(stdout + stderr))


def _run_subprocess(req_path: Path, res_path: Path, out_path: Path, err_path: Path, cwd: str, env: dict[str, str],
                    timeout_s: float) -> tuple[int, bool]:
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "veriforge.cuda.evaluate.isolation", str(req_path),
                                 str(res_path)], stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd,
                                env=env, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout_s + _GRACE_S)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            _killpg(proc.pid)
            code = proc.wait()
        else:
            _killpg(proc.pid)  # children the candidate left behind die with the group
    return code, timed_out


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode(errors="replace")
    except OSError:
        return ""


def _tail(text: str, limit: int = 4000) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def serve_request(req_path: str, res_path: str) -> int:
    """In the isolated process: run the pickled call, write the pickled result; returns the exit code.

    The caller must leave with ``os._exit`` so the candidate's atexit hooks and finalisers never run.
    """
    import traceback

    from .backend import get_backend

    with open(req_path, "rb") as f:
        backend, method, request = pickle.load(f)
    try:
        result = getattr(get_backend(backend), method)(request)
    except BaseException as exc:
        result = BackendRun(status="error", message=f"{type(exc).__name__}: {exc}", log=traceback.format_exc())
    tmp = res_path + ".tmp"
    with open(tmp, "wb") as f:
        pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, res_path)
    sys.stdout.flush()
    sys.stderr.flush()
    return 0


def _main(req_path: str, res_path: str) -> int:
    code = serve_request(req_path, res_path)
    os._exit(code)  # do not run the candidate's atexit hooks or finalisers


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1], sys.argv[2]))
