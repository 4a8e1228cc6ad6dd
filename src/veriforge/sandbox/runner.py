"""``run`` and ``run_python``: start a program under the supervisor and collect its result.

The process chain is::

    veriforge ──► unshare --pid --fork --kill-child [--net] ──► supervisor (PID 1) ──► program
                  (own session)                                 (root; reaps, kills)    (sandbox uid,
                                                                                         rlimits)

The supervisor enforces the wall-clock limit; this side keeps a backstop deadline a few seconds
later and kills the whole session if the supervisor itself hangs. Killing ``unshare`` takes
the namespace down with it (``--kill-child``), and with PID 1 gone the kernel kills every
process in the namespace.
"""

from __future__ import annotations

import marshal
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from veriforge.errors import SandboxError
from veriforge.sandbox._confine import mount_namespace_id
from veriforge.sandbox.capabilities import interpreter_blocker, probe
from veriforge.sandbox.capture import CappedBuffer, pump
from veriforge.sandbox.identity import SandboxUser, acquire_user, count_tasks
from veriforge.sandbox.limits import Limits
from veriforge.sandbox.policy import IsolationUnavailableError, Policy, program_paths
from veriforge.sandbox.result import SandboxResult, classify
from veriforge.sandbox.workdir import Workdir, build_env, default_path

__all__ = ["ExecutableNotFoundError", "SandboxProcess", "SandboxSetupError", "ToolTimeoutError", "planned_isolation",
           "run", "run_async", "run_python", "run_python_async", "run_tool", "spawn"]

SUPERVISOR = str(Path(__file__).with_name("_supervisor.py"))
BACKSTOP_GRACE_S = 10.0
PYTHON_MAIN = "__sandbox_main__.py"


def _bytecode_ready(path: str) -> bool:
    """Whether ``path`` has up-to-date bytecode in its ``__pycache__``, writing it if not (where the
    folder is writable and writing bytecode is allowed). A script run as ``python file.py`` is
    compiled from source every time (~2 ms for the supervisor), so the supervisor is imported as a
    module instead when this holds."""
    import importlib.util
    import py_compile

    cached = importlib.util.cache_from_source(path)
    try:
        st = os.stat(path)
        with open(cached, "rb") as fh:
            head = fh.read(16)
        if (head[:4] == importlib.util.MAGIC_NUMBER and head[4:8] == bytes(4)
                and int.from_bytes(head[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
                and int.from_bytes(head[12:16], "little") == st.st_size & 0xFFFFFFFF):
            return True
    except OSError:
        pass
    if sys.dont_write_bytecode:  # PYTHONDONTWRITEBYTECODE: the user asked for no .pyc files
        return False
    try:
        py_compile.compile(path, cfile=cached, doraise=True)
        return True
    except (OSError, py_compile.PyCompileError):
        return False


_boot_memo: dict[str, list[str]] = {}


def _supervisor_command() -> list[str]:
    """``python -I -S -B`` and what makes it run the supervisor: importing it (and ``_confine``)
    from bytecode where that can be had, else running the file as a script."""
    path = SUPERVISOR
    if path not in _boot_memo:
        folder, name = os.path.split(path)
        module = name[:-3] if name.endswith(".py") else ""
        helpers = [os.path.join(folder, "_confine.py")] if os.path.exists(os.path.join(folder, "_confine.py")) else []
        if module.isidentifier() and all([_bytecode_ready(f) for f in (path, *helpers)]):
            # The file's path stays on the command line (ps, the backstop's checks): argv[1] of -c.
            boot = ("import os, sys; p = sys.argv.pop(1); sys.path.insert(0, os.path.dirname(p)); "
                    f"import {module} as m; sys.exit(m.main())")
            _boot_memo[path] = ["-c", boot, path]
        else:
            _boot_memo[path] = [path]
    return [sys.executable, "-I", "-S", "-B", *_boot_memo[path]]


class SandboxSetupError(SandboxError):
    """The sandbox machinery failed (namespaces, supervisor); the program never ran or was lost."""


class ExecutableNotFoundError(SandboxError):
    """The command's executable does not exist or may not be executed (by the sandbox uid)."""


def run(
    cmd: Sequence[str] | str,
    *,
    files: dict[str, str | bytes] | None = None,
    cwd: Path | None = None,
    stdin: bytes = b"",
    env: dict[str, str] | None = None,
    limits: Limits | None = None,
    network: bool | None = None,
    keep_workdir: bool = False,
    policy: Policy | None = None,
    argv0: str | None = None,
) -> SandboxResult:
    """Run ``cmd`` (an argv list, or a string for ``/bin/sh -c``) inside the sandbox.

    ``policy`` says how the program is contained (default: :class:`Policy`, the candidate
    defaults); ``limits`` and ``network`` override the policy's. ``files`` are written into the
    work directory first (relative paths). ``env`` adds variables to a scrubbed environment;
    nothing else is inherited. The program failing in any way is reported in the result; only
    failures of the sandbox itself raise :class:`~veriforge.errors.SandboxError` (a strict policy
    on a machine that lacks a layer: :class:`IsolationUnavailableError`, before anything runs).
    ``argv0`` is the name the program sees as its ``argv[0]`` (default: ``cmd[0]``), so a program
    built into a cache reports and searches by the name its user knows (``./sample``).
    """
    argv = ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else [str(a) for a in cmd]
    if not argv or not argv[0]:
        raise SandboxError("empty command")
    policy = policy or Policy()
    if limits is not None:
        policy = policy.replace(limits=limits)
    if network is not None:
        policy = policy.replace(network=bool(network))
    caps = probe()
    planned = planned_isolation(policy)
    missing = policy.missing_layers(planned)
    if policy.strict and missing:
        raise IsolationUnavailableError("strict sandbox policy: refusing to run untrusted code without "
                                        "full isolation; missing " + "; ".join(missing))
    user: SandboxUser | None = acquire_user() if caps.is_root and policy.drop_user else None
    workdir: Workdir | None = None
    try:
        workdir = Workdir(cwd, uid=user.uid if user else None, keep=keep_workdir)
        workdir.write(files)
        workdir.lend()
        try:
            return _supervise(argv, workdir, stdin, env, policy, user, missing, argv0=argv0)
        finally:
            workdir.give_back()
    finally:
        if workdir is not None:
            workdir.cleanup()
        if user is not None:
            user.release()


async def run_async(cmd: Sequence[str] | str, **kwargs: Any) -> SandboxResult:
    """:func:`run` for asyncio code: runs in a worker thread so the event loop keeps going."""
    import asyncio

    return await asyncio.to_thread(run, cmd, **kwargs)


async def run_python_async(code: str, **kwargs: Any) -> SandboxResult:
    """:func:`run_python` for asyncio code (worker thread)."""
    import asyncio

    return await asyncio.to_thread(run_python, code, **kwargs)


def run_python(
    code: str,
    *,
    args: Sequence[str] = (),
    python: str | None = None,
    **kwargs: Any,
) -> SandboxResult:
    """Run Python source as a script (``python __sandbox_main__.py *args``) in the sandbox.

    Uses the interpreter veriforge runs under unless ``python`` names another. The script is
    written next to ``files`` so it can import them. Other keyword arguments as for :func:`run`.
    """
    files = dict(kwargs.pop("files", None) or {})
    if PYTHON_MAIN in files:
        raise SandboxError(f"{PYTHON_MAIN} is reserved for the program run by run_python")
    files[PYTHON_MAIN] = code
    return run([python or sys.executable, "-s", PYTHON_MAIN, *map(str, args)], files=files, **kwargs)


def planned_isolation(policy: Policy) -> dict[str, Any]:
    """What :func:`run` will put in force for ``policy`` on this machine (before running)."""
    caps = probe()
    drop = caps.is_root and policy.drop_user
    fs_why = caps.filesystem_reason() if policy.filesystem else "filesystem isolation turned off by the policy"
    prefix = caps.unshare_prefix(network=policy.network, mount=policy.filesystem and not fs_why)
    pidns = "--pid" in prefix
    net = "--net" in prefix
    read_all = drop and bool(fs_why) and interpreter_blocker() is not None
    info: dict[str, Any] = {
        "user": drop,
        "dropped_root": drop,
        "user_detail": ("per-run unprivileged uid" if drop else
                        ("not root: runs as the calling user" if not caps.is_root else "uid drop turned off")),
        "read_all_files": read_all,
        "filesystem": not fs_why,
        "filesystem_detail": fs_why or "private mount namespace, read-only except the work directory",
        "network": net,
        "network_detail": (
            "network namespace (loopback only, down)" if net
            else ("network=True requested" if policy.network else f"not isolated: {caps.network_reason}")),
        "pid_namespace": pidns,
        "process_cleanup": "pid-namespace" if pidns else ("uid-kill" if drop else "subreaper"),
    }
    if read_all:
        info["read_all_files_reason"] = f"CAP_DAC_READ_SEARCH kept: {interpreter_blocker()}"
        info["user_detail"] = "per-run uid, but it keeps CAP_DAC_READ_SEARCH (can read every file)"
    return info


class ToolTimeoutError(SandboxError, TimeoutError):
    """A tool run by :func:`run_tool` passed its wall-clock limit and was killed (whole tree)."""


def run_tool(cmd: Sequence[str], *, cwd: Path, timeout: float, expose: Sequence[str] = (),
             env: dict[str, str] | None = None, memory_mb: int | None = None, gpu: bool = False,
             max_procs: int = 128) -> tuple[int, str, SandboxResult]:
    """Run a trusted tool (nvcc, g++, a GPU driver program) on *untrusted input* in the sandbox.

    Compilers read whatever a candidate's ``#include`` names and echo it in their errors, and a
    driver program executes the candidate: so they get the candidate policy too. ``cwd`` (caller's
    folder, lent for the run) holds the input and receives the outputs; ``expose`` adds read-only
    paths the tool needs (a runtime's headers, a cached library). ``gpu`` keeps what the NVIDIA
    driver needs (no address-space limit). Returns (exit code or -signal, stdout+stderr, result);
    raises :class:`ToolTimeoutError` past ``timeout``.
    """
    limits = Limits(timeout_s=timeout, cpu_s=None, memory_mb=None if gpu else memory_mb, file_size_mb=4096,
                    max_procs=max_procs, max_output_bytes=4_000_000)
    tool_env = {"LC_ALL": "C"}
    bin_dirs = [os.path.dirname(os.path.realpath(cmd[0]))] if "/" in cmd[0] else []
    tool_env["PATH"] = ":".join([*bin_dirs, default_path()])
    for name in ("CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "NVIDIA_VISIBLE_DEVICES"):
        if name in os.environ:
            tool_env[name] = os.environ[name]
    tool_env.update(env or {})
    policy = Policy(limits=limits, expose=tuple(expose), max_open_files=4096)
    res = run(list(cmd), cwd=cwd, env=tool_env, policy=policy)
    if res.status == "timeout":
        raise ToolTimeoutError(f"{os.path.basename(cmd[0])} ran past {timeout:g} s and was killed")
    code = -res.signal if res.signal is not None else (res.exit_code if res.exit_code is not None else -9)
    return code, res.stdout_text + res.stderr_text, res


def _nproc_for(limits: Limits, user: SandboxUser | None) -> int | None:
    if not limits.max_procs:
        return None
    if user is not None:
        return int(limits.max_procs)
    # Not root: NPROC counts every task of our uid, so allow what already runs plus the budget.
    return count_tasks(os.getuid()) + int(limits.max_procs)


def _supervise(
    argv: list[str],
    workdir: Workdir,
    stdin: bytes,
    env: dict[str, str] | None,
    policy: Policy,
    user: SandboxUser | None,
    missing: list[str],
    *,
    argv0: str | None = None,
) -> SandboxResult:
    limits = policy.limits
    supervisor_argv, cfg_path, isolation, report_r, report_w = _prepare(argv, workdir, env, policy, user, missing,
                                                                        argv0=argv0)
    pass_fds = [report_w] + ([user.lock_fd] if user else [])
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            supervisor_argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=workdir.path,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            pass_fds=pass_fds,
            start_new_session=True,
        )
    except OSError as exc:
        os.close(report_r)
        os.close(report_w)
        _unlink(cfg_path)
        raise SandboxSetupError(f"cannot start the sandbox supervisor ({supervisor_argv[0]}): {exc}") from exc
    os.close(report_w)

    out, err = CappedBuffer(limits.max_output_bytes), CappedBuffer(limits.max_output_bytes)
    backstop_fired = False

    def on_deadline() -> float | None:
        nonlocal backstop_fired
        if backstop_fired:
            return None  # something outside the sandbox holds the pipes open; stop reading
        backstop_fired = True
        _kill_session(proc.pid)
        return time.monotonic() + 2.0

    deadline = start + (limits.timeout_s or 10**9) + BACKSTOP_GRACE_S
    try:
        pump(proc.stdin, stdin, {proc.stdout: out, proc.stderr: err}, deadline, on_deadline)
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0) + 5)
        except subprocess.TimeoutExpired:
            backstop_fired = True
            _kill_session(proc.pid)
            proc.wait()
    finally:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        with os.fdopen(report_r, "rb") as fh:
            raw_report = fh.read()
        _unlink(cfg_path)  # normally gone already
    wall = time.monotonic() - start

    report = _parse_report(raw_report, proc.returncode, err.data, backstop_fired)
    if report is None:  # backstop: the supervisor was killed before it could report
        status, reason = "timeout", "wall-clock timeout: supervisor unresponsive, sandbox session killed"
        exit_code = sig = None
        cpu = rss = 0.0
    else:
        if "fs_error" in report:
            raise SandboxSetupError(f"the sandbox could not build its filesystem view: {report['fs_error']}")
        if "exec_error" in report:
            _raise_exec_error(report["exec_error"], argv)
        if report.get("fs"):
            isolation["filesystem_view"] = report["fs"]
        raw = report["status"]
        exit_code = os.waitstatus_to_exitcode(raw) if raw is not None else None
        sig = -exit_code if exit_code is not None and exit_code < 0 else None
        exit_code = None if sig is not None else exit_code
        cpu = round(report["utime"] + report["stime"], 4)
        rss = round(report["maxrss_kb"] / 1024, 2)
        wall = report["wall_s"]
        status, reason = classify(
            exit_code=exit_code,
            signal=sig,
            timed_out=report["timed_out"],
            stderr=bytes(err.data),
            cpu_s=cpu,
            cpu_limit=limits.cpu_s,
        )
        isolation["process_cleanup"] = report["reaper"]
        isolation["leftovers_killed"] = report["leftovers_killed"]
    return SandboxResult(
        status=status,
        exit_code=exit_code,
        signal=sig,
        stdout=bytes(out.data),
        stderr=bytes(err.data),
        wall_s=round(wall, 4),
        cpu_s=cpu,
        peak_rss_mb=rss,
        reason=reason,
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        stdout_dropped_bytes=out.dropped,
        stderr_dropped_bytes=err.dropped,
        isolation=isolation,
        workdir=workdir.path if workdir.keep else None,
    )


def _prepare(argv: list[str], workdir: Workdir, env: dict[str, str] | None, policy: Policy,
             user: SandboxUser | None, missing: list[str], keep_fds: Sequence[int] = (),
             argv0: str | None = None) -> tuple[list[str], str, dict[str, Any], int, int]:
    """The supervisor's command line and root-only config file for one run, the isolation record,
    and the report pipe (read end, write end)."""
    caps = probe()
    limits = policy.limits
    isolation = planned_isolation(policy)
    prefix = caps.unshare_prefix(network=policy.network, mount=isolation["filesystem"])
    use_fs = "--mount" in prefix
    isolation["filesystem"] = use_fs and isolation["filesystem"]
    pidns = "--pid" in prefix
    isolation.update(uid=user.uid if user else os.getuid(), dropped_root=user is not None,
                     limits=limits.to_dict(), full=not missing, missing=missing, strict=policy.strict)
    read_search = bool(isolation["read_all_files"]) and user is not None
    fs = None
    config_env = build_env(workdir.path, workdir.tmp, env)
    if use_fs:
        fs = {"workdir": str(workdir.path), "writable": [os.path.abspath(p) for p in policy.writable],
              "hide": policy.hidden_trees(),
              "expose": [*policy.exposed_paths(python=True), *program_paths(argv[0], config_env.get("PATH"))],
              "tmpfs_mb": policy.tmpfs_mb, "new_proc": pidns, "outer_ns": mount_namespace_id()}
    config = {
        "read_search": read_search,
        "cmd": argv,
        "argv0": argv0,
        "env": config_env,
        "rlimits": policy.rlimits(nproc=_nproc_for(limits, user)),
        "uid": user.uid if user else None,
        "gid": user.gid if user else None,
        "timeout": limits.timeout_s or None,
        "pidns": pidns,
        "fs": fs,
        "keep_fds": list(keep_fds),
    }
    # The config (with the caller's env, which may hold secrets) goes through a root-only file the
    # supervisor reads and deletes before the program starts, not through world-readable argv.
    # marshal, not JSON: the supervisor is the same interpreter and imports nothing it can avoid.
    cfg_fd, cfg_path = tempfile.mkstemp(prefix="veriforge-sbx-cfg-", suffix=".marshal")
    with os.fdopen(cfg_fd, "wb") as fh:
        marshal.dump(config, fh)
    report_r, report_w = os.pipe()
    supervisor_argv = [*prefix, *_supervisor_command(), str(report_w), cfg_path]
    return supervisor_argv, cfg_path, isolation, report_r, report_w


class SandboxProcess:
    """A long-lived sandboxed program started by :func:`spawn` (``subprocess.Popen``-like).

    ``pid`` is the sandbox session's leader (kill its process group to end everything);
    ``returncode`` is the *program's* (negative for a signal), known once it has ended.
    """

    def __init__(self, proc: subprocess.Popen, report_r: int, isolation: dict[str, Any], cleanup: Any) -> None:
        self._proc = proc
        self._report_r = report_r
        self.isolation = isolation
        self._cleanup = cleanup
        self.returncode: int | None = None
        self.report: dict[str, Any] = {}

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _finish(self) -> int:
        if self._report_r >= 0:
            with os.fdopen(self._report_r, "rb") as fh:
                raw = fh.read()
            self._report_r = -1
            self.report = _load_report(raw) or {}
            status = self.report.get("status")
            self.returncode = os.waitstatus_to_exitcode(status) if status is not None else -signal.SIGKILL
            if "exec_error" in self.report:
                self.returncode = 127
            self._cleanup()
        return self.returncode if self.returncode is not None else -signal.SIGKILL

    def poll(self) -> int | None:
        if self._proc.poll() is None:
            return None
        return self._finish()

    def wait(self, timeout: float | None = None) -> int:
        self._proc.wait(timeout=timeout)  # raises subprocess.TimeoutExpired like Popen.wait
        return self._finish()

    def kill(self) -> None:
        _kill_session(self._proc.pid)
        self.wait()


def spawn(cmd: Sequence[str], *, policy: Policy | None = None, pass_fds: Sequence[int] = (),
          stdin: Any = subprocess.DEVNULL, stdout: Any = None, stderr: Any = None,
          env: dict[str, str] | None = None) -> SandboxProcess:
    """Start a long-lived untrusted program (e.g. the CPU runtime's kernel server) in the sandbox
    and return at once. ``pass_fds`` are lent to the program at the same numbers (pipes, a memfd);
    ``stdout``/``stderr`` are files or fds as for ``subprocess.Popen``. The policy's timeout, if
    any, still applies; the caller ends the program with :meth:`SandboxProcess.kill`.
    """
    argv = [str(a) for a in cmd]
    policy = policy or Policy()
    missing = policy.missing_layers(planned_isolation(policy))
    if policy.strict and missing:
        raise IsolationUnavailableError("strict sandbox policy: refusing to run untrusted code without "
                                        "full isolation; missing " + "; ".join(missing))
    caps = probe()
    user: SandboxUser | None = acquire_user() if caps.is_root and policy.drop_user else None
    workdir = Workdir(None, uid=user.uid if user else None, keep=False)
    try:
        workdir.write(None)
        workdir.lend()
        supervisor_argv, cfg_path, isolation, report_r, report_w = _prepare(argv, workdir, env, policy, user,
                                                                            missing, keep_fds=pass_fds)
        try:
            proc = subprocess.Popen(supervisor_argv, stdin=stdin, stdout=stdout, stderr=stderr, cwd=workdir.path,
                                    env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
                                    pass_fds=[report_w, *pass_fds, *([user.lock_fd] if user else [])],
                                    start_new_session=True)
        except OSError as exc:
            os.close(report_r)
            _unlink(cfg_path)
            raise SandboxSetupError(f"cannot start the sandbox supervisor: {exc}") from exc
        finally:
            os.close(report_w)
    except BaseException:
        workdir.cleanup()
        if user is not None:
            user.release()
        raise

    def cleanup() -> None:
        _unlink(cfg_path)
        workdir.cleanup()
        if user is not None:
            user.release()

    return SandboxProcess(proc, report_r, isolation, cleanup)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _kill_session(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _load_report(raw: bytes) -> dict | None:
    """The supervisor's report (a marshalled dict; its pipe never reaches the program), or None."""
    try:
        report = marshal.loads(raw) if raw else None
    except (ValueError, EOFError, TypeError):
        return None
    return report if isinstance(report, dict) else None


def _parse_report(raw: bytes, returncode: int | None, stderr: bytes, backstop: bool) -> dict | None:
    if raw:
        report = _load_report(raw)
        if report is None:
            raise SandboxSetupError(f"the sandbox supervisor sent a malformed report: {raw[:200]!r}")
        return report
    if backstop:
        return None
    detail = bytes(stderr[-2000:]).decode("utf-8", "replace").strip()
    raise SandboxSetupError(f"the sandbox supervisor failed (exit status {returncode}): {detail or 'no output'}")


def _raise_exec_error(info: dict, argv: list[str]) -> None:
    import errno as errno_mod

    if info["errno"] in (errno_mod.ENOENT, errno_mod.EACCES, errno_mod.ENOEXEC, errno_mod.ENOTDIR):
        raise ExecutableNotFoundError(f"cannot execute {argv[0]!r} in the sandbox: {info['message']}")
    raise SandboxSetupError(f"cannot start {argv[0]!r} in the sandbox: {info['type']}: {info['message']}")
