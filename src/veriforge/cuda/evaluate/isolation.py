"""Running a back-end call in a fresh process with a time limit and a process-group kill.

Used for back-end calls that run candidate code outside the harness (GPU timing of PyTorch
candidates, back-ends that do not isolate C→CUDA candidates themselves). The child is confined
by :mod:`veriforge.sandbox`; the request goes in as a pickle the harness wrote, and the result
comes back through :func:`load_result`, an allow-listed unpickler (results, cases, measurements,
numpy arrays: nothing that can run code in the harness).
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
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .backend import BackendRun, describe_exit

__all__ = ["ZYGOTE_BACKENDS", "ConfinedRun", "candidate_env", "run_confined", "run_isolated", "serve_request",
           "uses_zygote"]

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
    """``get_backend(backend).<method>(request)`` in a confined child process; ``timeout_s`` is the limit.

    The child runs candidate code, so it is confined by :mod:`veriforge.sandbox` (per-run uid,
    private read-only filesystem, no network, whole tree killed) and what it sends back is read
    with :func:`load_result`, which only rebuilds result objects and arrays (a pickle from the
    child could otherwise run code in the harness).
    """
    from veriforge.cuda.evaluate.configured import as_env, tighten
    from veriforge.sandbox import Limits, Policy

    gpu = backend not in ZYGOTE_BACKENDS
    policy = Policy(limits=Limits(timeout_s=timeout_s + (_ZYGOTE_GRACE_S if uses_zygote(backend) else _GRACE_S),
                                  cpu_s=None, memory_mb=None if gpu else 65536, file_size_mb=2048,
                                  max_procs=256, max_output_bytes=1_000_000), max_open_files=4096)
    policy = tighten(policy, gpu=gpu)  # the user's sandbox.* settings, as upper bounds
    env = {**(env or {}), **as_env()}  # ... for the processes the child starts, too
    with tempfile.TemporaryDirectory(prefix="vf-iso-logs-") as logs, \
            tempfile.TemporaryDirectory(prefix="vf-iso-") as tmp:
        req_path, res_path = Path(tmp) / "request.pkl", Path(tmp) / "result.pkl"
        with open(req_path, "wb") as f:
            pickle.dump((backend, method, request), f, protocol=pickle.HIGHEST_PROTOCOL)
        child = run_confined(Path(tmp), policy, candidate_env(env), logdir=Path(logs),
                             timeout_s=timeout_s + _ZYGOTE_GRACE_S, use_zygote=uses_zygote(backend),
                             call=[__name__, "serve_request", [str(req_path), str(res_path)]])
        code, timed_out, lost, stdout, stderr = child.code, child.timed_out, child.lost, child.stdout, child.stderr
        if timed_out:
            return BackendRun(status="timeout", message=f"{what} did not finish within {timeout_s:g} s and was "
                                                        f"killed", log=_tail(stdout + stderr))
        result = load_result(res_path)
        if isinstance(result, BackendRun):
            if stdout or stderr:
                result.log = (result.log + "\n" + _tail(stdout + stderr)).strip()
            return result
        if lost or code is None:
            label, reason = "lost", "its fork server died"
        else:
            label, reason = describe_exit(code, stderr)
            reason = f"it {reason}"
        return BackendRun(status="crash", message=f"{what} crashed the evaluation process ({reason}):\n"
                                                  f"{_tail(stderr) or '(no output)'}", log=_tail(stdout + stderr),
                          features={"crash": label})


_PASS_ENV = ("VF_CPU_THREADS", "VF_FIBER_STACK_KB", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS",
             "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
             "VERIFORGE_EVAL_ZYGOTE")
"""The caller's variables a candidate process sees (threading and runtime knobs; never secrets)."""


def candidate_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a process that runs candidate code: :data:`_PASS_ENV` from ours (BLAS and
    OpenMP pools default to one thread: evaluations are parallel across processes) plus ``extra``."""
    env = {k: os.environ[k] for k in _PASS_ENV if k in os.environ}
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(name, "1")
    env.update(extra or {})
    return env


@dataclass
class ConfinedRun:
    """How a confined child ended: exit ``code`` (negative: signal; None: unknown), ``timed_out``,
    ``lost`` (its fork server died), its output, and the isolation that was in force."""

    code: int | None
    timed_out: bool
    lost: bool
    stdout: str
    stderr: str
    isolation: dict[str, Any]


def run_confined(work: Path, policy: Any, env: dict[str, str], *, call: list[Any], logdir: Path, timeout_s: float,
                 use_zygote: bool) -> ConfinedRun:
    """Run ``call`` = ``[module, function, args]`` (module.function(*args), which runs candidate
    code) confined by ``policy`` with ``work`` lent as its work directory.

    With the fork server: a forked child that confines itself (milliseconds; torch is imported
    already). Without one, or if it cannot start: ``python -m module function *args`` under
    :func:`veriforge.sandbox.run` (the module must dispatch its command line to ``function``).
    Output goes to files in ``logdir`` (harness-private) or is captured by the sandbox.
    """
    module, function, args = call
    if use_zygote:
        from veriforge.sandbox.confine import lend, prepare_child

        from .zygote import ZygoteError, get_zygote

        out, err = logdir / "stdout", logdir / "stderr"
        child = prepare_child(policy, cwd=work, env=env)
        try:
            lend(child)
            res = get_zygote().run(req="", res="", cwd=str(work), out=str(out), err=str(err), env={},
                                   timeout_s=timeout_s, call=call, confine=child.spec)
        except ZygoteError:
            pass
        else:
            return ConfinedRun(res.code, res.timed_out, res.lost, _read(out), _read(err), child.isolation)
        finally:
            child.close()  # kills whatever the uid still runs before anyone reads the child's files
    from veriforge.sandbox import run as sandbox_run

    res = sandbox_run([sys.executable, "-m", module, function, *map(str, args)], cwd=work, env=env, policy=policy)
    code = -res.signal if res.signal is not None else res.exit_code
    return ConfinedRun(code, res.status == "timeout", False, res.stdout_text, res.stderr_text, res.isolation)
_SAFE_GLOBALS = {
    ("veriforge.cuda.evaluate.backend", "BackendRun"), ("veriforge.cuda.evaluate.backend", "CaseOutput"),
    ("veriforge.core.types", "Measurement"), ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"), ("builtins", "complex"),
    ("collections", "OrderedDict"),
}
MAX_RESULT_BYTES = 1 << 30


class _ResultUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _SAFE_GLOBALS:
            raise pickle.UnpicklingError(f"the result refers to {module}.{name}, which a result may not contain")
        return super().find_class(module, name)


def load_result(path: Path) -> Any:
    """The result a confined child wrote, or None: read without following links, size-capped, and
    unpickled with an allow-list of classes (results, cases, measurements, numpy arrays)."""
    import io

    from .driver import read_untrusted

    try:
        data = read_untrusted(path, MAX_RESULT_BYTES)
        if len(data) > MAX_RESULT_BYTES:
            return None
        value = _ResultUnpickler(io.BytesIO(data)).load()
    except (OSError, ValueError, pickle.UnpicklingError, EOFError, AttributeError, TypeError, IndexError):
        return None
    return value if isinstance(value, BackendRun) else None


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


def _main(argv: list[str]) -> int:
    req_path, res_path = argv[-2:]  # ``serve_request REQ RES`` (run_confined) or ``REQ RES``
    code = serve_request(req_path, res_path)
    os._exit(code)  # do not run the candidate's atexit hooks or finalisers


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
