"""Running a back-end call in a fresh subprocess with a time limit and a process-group kill.

Used for every back-end that does not isolate candidates itself (all PyTorch→CUDA candidates,
which are Python modules the harness must never import, and GPU back-ends, where a CUDA error
can poison the context of the process). The request and the result cross the boundary as
pickle files; the child runs in its own session so a timeout kills every process it started.
A crash (segfault, abort, ``os._exit``) or a hang comes back as a :class:`BackendRun` with
status ``crash`` / ``timeout`` - never as an exception in the harness.
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

__all__ = ["run_isolated"]

_GRACE_S = 30.0


def run_isolated(backend: str, method: str, request: Any, timeout_s: float, *, env: dict[str, str] | None = None,
                 what: str = "the candidate") -> BackendRun:
    """``get_backend(backend).<method>(request)`` in a child process; ``timeout_s`` is the limit."""
    with tempfile.TemporaryDirectory(prefix="vf-iso-") as tmp:
        req_path, res_path = Path(tmp) / "request.pkl", Path(tmp) / "result.pkl"
        with open(req_path, "wb") as f:
            pickle.dump((backend, method, request), f, protocol=pickle.HIGHEST_PROTOCOL)
        with open(Path(tmp) / "stdout", "wb") as out, open(Path(tmp) / "stderr", "wb") as err:
            proc = subprocess.Popen([sys.executable, "-m", "veriforge.cuda.evaluate.isolation", str(req_path),
                                     str(res_path)], stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=tmp,
                                    env={**os.environ, **(env or {})}, start_new_session=True)
            try:
                code = proc.wait(timeout=timeout_s + _GRACE_S)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                code = proc.wait()
            else:
                # Children the candidate left behind die with the group.
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        stderr = (Path(tmp) / "stderr").read_bytes().decode(errors="replace")
        stdout = (Path(tmp) / "stdout").read_bytes().decode(errors="replace")
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
        reason = f"signal {-code}" if code < 0 else f"exit status {code}"
        return BackendRun(status="crash", message=f"{what} crashed the evaluation process ({reason}):\n"
                                                  f"{_tail(stderr) or '(no output)'}", log=_tail(stdout + stderr))


def _tail(text: str, limit: int = 4000) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def _main(req_path: str, res_path: str) -> int:
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
    os._exit(0)  # do not run the candidate's atexit hooks or finalisers


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1], sys.argv[2]))
