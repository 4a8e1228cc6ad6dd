"""The in-sandbox supervisor: the first process inside the sandbox, parent of the user's program.

Run as ``python -I -S _supervisor.py REPORT_FD CONFIG_PATH``, or imported from its cached bytecode by
``python -I -S -B -c`` (runner._supervisor_command) with the same arguments (stdlib only, no veriforge import,
so it starts in a few milliseconds: every sandboxed run pays its start-up, so it imports only C
modules -- ``_signal`` rather than ``signal``, ``marshal`` rather than ``json``, whose imports of
``enum`` and ``re`` were 15-18 ms of a ~60 ms run). Inside a fresh PID namespace it is PID 1; it forks the
user's program with the resource limits applied and (when we run as root) an unprivileged uid,
and then:

* enforces the wall-clock timeout itself, so a sandbox outlives neither its deadline nor a
  parent that died without cleaning up;
* reaps every orphan (PID 1, or a child subreaper when no PID namespace is available), adding
  their CPU time to the report;
* once the program has exited or timed out, kills *everything* left in the sandbox —
  background grandchildren, processes that called ``setsid`` — with ``kill(-1, SIGKILL)``
  inside the namespace, or by walking ``/proc`` for descendants without one;
* writes one JSON report (raw wait status, rusage, timeout flag) to REPORT_FD, because as PID 1
  it cannot re-raise the program's fatal signal on itself for the parent to see.

The program being PID 1 itself would be wrong: the kernel drops signals that PID 1 has no
handler for, so SIGXCPU / SIGXFSZ / SIGSEGV-by-kill would silently not apply to it.
"""

from __future__ import annotations

import _signal as signal  # the C module: `signal` imports enum
import marshal  # the config and the report: the same interpreter writes and reads them
import os
import sys
import time
import warnings  # noqa: F401  (os.execvpe imports it lazily, after the uid drop may hide the stdlib)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _confine

PR_SET_CHILD_SUBREAPER = 36
PR_SET_KEEPCAPS = 8
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_RAISE = 2
CAP_DAC_READ_SEARCH = 2
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


class _Deadline(Exception):
    """Raised from the SIGALRM handler to break out of a blocking wait."""


class _Cancelled(Exception):
    """Raised from the SIGTERM/SIGINT handler: the parent asked us to stop early."""


def _on_alarm(signum, frame):
    raise _Deadline


def _on_term(signum, frame):
    raise _Cancelled


def _set_subreaper() -> bool:
    """Make orphans of our descendants re-parent to us (the fallback without a PID namespace)."""
    try:
        _, libc = _libc()
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except Exception:
        return False


def _libc():
    import ctypes

    return ctypes, ctypes.CDLL(None, use_errno=True)


def _keep_read_search(ctypes, libc) -> None:
    """After the uid drop, keep only CAP_DAC_READ_SEARCH, as an ambient capability so the exec'd
    program has it too: read/traverse any file (e.g. an interpreter under a 0700 /root), but
    write only where the sandbox uid may. Needs PR_SET_KEEPCAPS set before the drop."""

    class Header(ctypes.Structure):
        _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))

    class Data(ctypes.Structure):
        _fields_ = (("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32))

    bit = 1 << CAP_DAC_READ_SEARCH
    data = (Data * 2)(Data(bit, bit, bit), Data(0, 0, 0))
    if libc.capset(ctypes.byref(Header(_LINUX_CAPABILITY_VERSION_3, 0)), data) != 0:
        raise OSError(ctypes.get_errno(), "capset(CAP_DAC_READ_SEARCH) failed")
    if libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_DAC_READ_SEARCH, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "raising the ambient CAP_DAC_READ_SEARCH failed")


def _exec_child(cfg: dict, err_w: int) -> None:
    """In the forked child: apply limits, drop privileges, exec the program. Never returns."""
    try:
        for name in ("SIGPIPE", "SIGXFSZ", "SIGXFZ", "SIGALRM", "SIGTERM", "SIGINT"):
            sig = getattr(signal, name, None)
            if sig is not None:
                signal.signal(sig, signal.SIG_DFL)
        if not cfg["pidns"]:
            # Own process group so a stray Ctrl-C in the caller's terminal is not our business.
            os.setpgid(0, 0)
        _confine.apply_rlimits(cfg["rlimits"])
        uid, gid = cfg.get("uid"), cfg.get("gid")
        read_search = cfg.get("read_search") and uid is not None
        if read_search:
            ctypes, libc = _libc()
            libc.prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0)
        if uid is not None:
            _confine.drop_privileges(uid, gid)
        if read_search:
            _keep_read_search(ctypes, libc)
        cmd = cfg["cmd"]
        os.execvpe(cmd[0], [cfg.get("argv0") or cmd[0], *cmd[1:]], cfg["env"])
    except BaseException as exc:  # report why the exec failed, then die without cleanup handlers
        errno = getattr(exc, "errno", None) or 0
        msg = f"{type(exc).__name__}\x00{errno}\x00{exc}"
        try:
            os.write(err_w, msg.encode("utf-8", "replace"))
        finally:
            os._exit(127)


def _descendants(root: int) -> list[int]:
    """PIDs whose parent chain leads to ``root`` (from /proc; used without a PID namespace)."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # Field 4 (ppid) follows the parenthesised command name, which may contain spaces.
        rest = stat[stat.rfind(b")") + 2 :].split()
        parent[int(entry)] = int(rest[1])
    found: list[int] = []
    frontier = {root}
    while frontier:
        nxt = {pid for pid, ppid in parent.items() if ppid in frontier and pid not in found}
        found.extend(nxt)
        frontier = nxt
    return found


def _kill_everything(pidns: bool, uid: int | None = None) -> None:
    """SIGKILL every process left in the sandbox.

    ``kill(-1)`` from PID 1 of a PID namespace reaches exactly the processes of that namespace.
    Called outside one it would signal every process on the machine, hence the PID check.
    Without a namespace: every process of the per-run uid (whatever re-parented where), then
    our descendants by ``/proc``.
    """
    if pidns and os.getpid() == 1:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return
    if uid is not None and os.geteuid() == 0:
        _confine.kill_uid(uid)
    for pid in _descendants(os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _add_rusage(acc: dict, ru) -> None:
    acc["utime"] += ru.ru_utime
    acc["stime"] += ru.ru_stime
    acc["maxrss_kb"] = max(acc["maxrss_kb"], ru.ru_maxrss)


def main() -> int:
    report_fd = int(sys.argv[1])
    # Nothing but stdin/stdout/stderr reaches the program: not our report pipe (it could forge
    # the report) nor the uid lock (it could release the claim).
    for entry in os.listdir("/proc/self/fd"):
        if int(entry) > 2:
            try:
                os.set_inheritable(int(entry), False)
            except OSError:
                pass
    with open(sys.argv[2], "rb") as fh:
        cfg = marshal.load(fh)
    os.unlink(sys.argv[2])
    for fd in cfg.get("keep_fds") or ():  # descriptors the caller lends the program (spawn)
        os.set_inheritable(int(fd), True)
    pidns = bool(cfg["pidns"]) and os.getpid() == 1
    cfg["pidns"] = pidns
    reaper = "pid-namespace" if pidns else ("subreaper" if _set_subreaper() else "none")
    if not pidns and cfg.get("uid") is not None and os.geteuid() == 0:
        reaper = "uid-kill+" + reaper
    report: dict = {"reaper": reaper, "pidns": pidns}
    if cfg.get("fs"):
        try:
            report["fs"] = _confine.setup_filesystem(**cfg["fs"])
            os.chdir(cfg["fs"]["workdir"])  # the old cwd still points into the read-only mount
        except Exception as exc:
            report["fs_error"] = f"{type(exc).__name__}: {exc}"
            os.write(report_fd, marshal.dumps(report))
            return 0

    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGINT, _on_term)
    signal.signal(signal.SIGALRM, _on_alarm)

    err_r, err_w = os.pipe()  # close-on-exec: EOF without data means the exec succeeded
    start = time.monotonic()
    child = os.fork()
    if child == 0:
        os.close(err_r)
        _exec_child(cfg, err_w)
    os.close(err_w)
    chunks = []
    while chunk := os.read(err_r, 4096):
        chunks.append(chunk)
    os.close(err_r)
    if chunks:
        kind, errno, msg = b"".join(chunks).decode("utf-8", "replace").split("\x00", 2)
        os.waitpid(child, 0)
        report.update(exec_error={"type": kind, "errno": int(errno), "message": msg})
        os.write(report_fd, marshal.dumps(report))
        return 0

    usage = {"utime": 0.0, "stime": 0.0, "maxrss_kb": 0}
    status = None
    timed_out = cancelled = False
    timeout = cfg.get("timeout")
    if timeout:
        signal.setitimer(signal.ITIMER_REAL, max(timeout - (time.monotonic() - start), 0.001))
    try:
        while status is None:
            pid, st, ru = os.wait4(-1, 0)
            _add_rusage(usage, ru)
            if pid == child:
                status = st
    except _Deadline:
        timed_out = True
    except _Cancelled:
        cancelled = True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    wall = time.monotonic() - start
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    # Kill and reap whatever is left; repeat because a process may fork while we look.
    leftovers = 0
    while True:
        _kill_everything(pidns, cfg.get("uid"))
        try:
            pid, st, ru = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.002)
            continue
        _add_rusage(usage, ru)
        if pid == child:
            status = st
        else:
            leftovers += 1

    report.update(
        status=status,
        timed_out=timed_out,
        cancelled=cancelled,
        wall_s=wall,
        leftovers_killed=leftovers,
        **usage,
    )
    os.write(report_fd, marshal.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
