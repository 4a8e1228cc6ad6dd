"""What isolation this machine allows, probed once per process.

The sandbox never pretends: each run records what was actually in force, and ``veriforge
doctor`` prints :func:`capabilities` so a user sees up front whether, say, network isolation is
available (it needs ``unshare`` and the right to create namespaces: root, or unprivileged user
namespaces).
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Probe", "capabilities", "interpreter_blocker", "probe"]

_UNSHARE_BASE = ("--pid", "--fork", "--kill-child")


@dataclass(frozen=True)
class Probe:
    """The namespace features that actually work here (result of trying them once)."""

    unshare: str | None
    pid_namespace: bool
    pid_reason: str
    network_namespace: bool
    network_reason: str
    is_root: bool
    mount_namespace: bool = False
    mount_reason: str = "not probed"

    def unshare_prefix(self, *, network: bool, mount: bool = False) -> list[str]:
        """Command prefix that starts the supervisor in new namespaces (empty if none work)."""
        extra = []
        if not network and self.network_namespace:
            extra.append("--net")
        if mount and self.mount_namespace:
            extra.append("--mount")
        if not self.unshare or not self.pid_namespace:
            return [self.unshare, *extra] if self.unshare and extra else []
        return [self.unshare, *_UNSHARE_BASE, *extra]

    def filesystem_reason(self) -> str:
        """Why no private filesystem view can be built here ('' when it can)."""
        if not self.is_root:
            return "not root: a private read-only filesystem view needs root (mount namespace and bind mounts)"
        if not self.unshare or not self.mount_namespace:
            return f"no mount namespace: {self.mount_reason if self.unshare else 'unshare is not available'}"
        return ""


def _try(cmd: list[str]) -> tuple[bool, str]:
    try:
        out = subprocess.run(cmd, capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"{type(exc).__name__}: {exc}"
    if out.returncode == 0:
        return True, "ok"
    msg = (out.stderr or out.stdout).decode("utf-8", "replace").strip().splitlines()
    return False, (msg[-1] if msg else f"exit code {out.returncode}")


@functools.cache
def probe() -> Probe:
    """Try each namespace once (a few milliseconds) and remember the answer for this process."""
    is_root = os.geteuid() == 0
    unshare = shutil.which("unshare", path=os.environ.get("PATH", "") + ":/usr/bin:/bin")
    if unshare is None:
        why = "the unshare command (util-linux) is not installed"
        return Probe(None, False, why, False, why, is_root)
    true = shutil.which("true", path="/usr/bin:/bin") or "true"
    pid_ok, pid_why = _try([unshare, *_UNSHARE_BASE, true])
    net_ok, net_why = _try([unshare, "--net", true])
    if not net_ok and not is_root:
        # Unprivileged: a user namespace grants the right to create the network namespace.
        net_ok, net_why = False, f"{net_why} (not root; unprivileged namespaces unavailable)"
    mnt_ok, mnt_why = (_try([unshare, "--mount", true]) if is_root
                       else (False, "not root"))
    return Probe(unshare, pid_ok, pid_why, net_ok, net_why, is_root, mnt_ok, mnt_why)


def _blocker(path: Path) -> Path | None:
    """The first part of ``path`` (itself or an ancestor) that "other" users may not enter."""
    for part in [path, *path.parents]:
        try:
            st = part.stat()
        except OSError:
            return part
        need = stat.S_IXOTH | (stat.S_IROTH if part is path else 0)
        if (st.st_mode & need) != need:
            return part
    return None


@functools.cache
def interpreter_blocker() -> str | None:
    """Why an unprivileged uid could not run *this* Python with its packages, or None if it can.

    Typical cause: pyenv or a venv under ``/root`` (mode 0700). The sandbox then keeps
    CAP_DAC_READ_SEARCH for the program (read-only access everywhere) rather than fail.
    """
    paths = [
        Path(os.path.realpath(sys.executable)),
        Path(os.path.dirname(os.__file__)),
        Path(sysconfig.get_paths()["purelib"]),
        Path(sys.executable),
    ]
    for path in paths:
        blocked = _blocker(path)
        if blocked is not None:
            return f"{blocked} (on the way to {path}) is not accessible to other users"
    return None


def _cgroup_pids_writable() -> str:
    """Where a pids controller could be written (reported only; the sandbox does not need it)."""
    for path, kind in ((Path("/sys/fs/cgroup/cgroup.subtree_control"), "v2"), (Path("/sys/fs/cgroup/pids"), "v1")):
        if path.exists() and os.access(path, os.W_OK):
            if kind == "v2" and "pids" not in Path("/sys/fs/cgroup/cgroup.controllers").read_text():
                continue
            return f"cgroup {kind} pids controller writable ({path})"
    return "no writable cgroup pids controller"


def capabilities() -> dict[str, Any]:
    """A flat, JSON-ready description of how the sandbox isolates and limits programs here."""
    p = probe()
    if p.is_root:
        procs = "RLIMIT_NPROC under a fresh unprivileged uid per run (root is exempt from NPROC)"
        user = "drops root to a per-run uid"
        blocked = interpreter_blocker()
        if blocked and p.filesystem_reason():
            user += f"; keeps CAP_DAC_READ_SEARCH (read-only access to all files) because {blocked}"
    else:
        procs = "RLIMIT_NPROC on top of the processes this user already runs"
        user = f"runs as uid {os.getuid()} (not root: no privilege change)"
    return {
        "network_isolation": p.network_namespace,
        "network_detail": "network namespace (unshare --net)" if p.network_namespace else p.network_reason,
        "pid_namespace": p.pid_namespace,
        "process_cleanup": (
            "PID namespace: supervisor is PID 1 and kills the namespace"
            if p.pid_namespace
            else "child subreaper + /proc walk (no PID namespace: " + p.pid_reason + ")"
        ),
        "process_limit": procs,
        "user": user,
        "filesystem": p.filesystem_reason() or (
            "private mount namespace: everything read-only except the work directory; /root, /home and "
            "veriforge's home hidden (only the Python installation exposed); private /tmp, /dev/shm, /proc"),
        "strict_possible": not p.filesystem_reason() and p.network_namespace and p.is_root,
        "rlimits": "CPU, AS, FSIZE, NPROC, NOFILE, CORE=0",
        "cgroups": _cgroup_pids_writable(),
    }
