"""Confining a *forked* child with the same :class:`Policy` as :func:`veriforge.sandbox.run`.

The evaluation fork server (``veriforge.cuda.evaluate.zygote``) pays for ``import torch`` once and
forks a child per PyTorch candidate; exec'ing a fresh supervisor would throw that saving away.
So the parent (the harness) prepares a JSON-ready :class:`ChildSandbox` here — claims the per-run
uid, creates and lends the work directory, computes the filesystem view — and the forked child
calls :func:`confine_child` before it touches the candidate:

1. ``unshare`` a new mount namespace and (unless the policy keeps it) a new network namespace;
2. the same read-only, secrets-hidden filesystem view as exec'd programs, plus a ``/proc`` that
   hides other users' processes (``hidepid=invisible``);
3. rlimits, then the per-run uid (no way back), a scrubbed environment, the work directory.

There is no PID namespace for a forked child (the child itself cannot become PID 1 of one), so
the whole tree is killed by uid instead (:func:`veriforge.sandbox._confine.kill_uid`), which a
``setsid`` or a double fork cannot escape either. The fork server does that after reaping the child.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veriforge.sandbox import _confine
from veriforge.sandbox.capabilities import probe
from veriforge.sandbox.identity import SandboxUser, acquire_user
from veriforge.sandbox.policy import IsolationUnavailableError, Policy
from veriforge.sandbox.workdir import Workdir, build_env

__all__ = ["ChildSandbox", "confine_child", "lend", "prepare_child"]


@dataclass
class ChildSandbox:
    """Everything a forked child needs to confine itself (``spec``, JSON-ready), and what the
    parent must release afterwards (:meth:`close`)."""

    spec: dict[str, Any]
    isolation: dict[str, Any]
    workdir: Workdir
    user: SandboxUser | None = None
    _closed: bool = field(default=False, repr=False)

    @property
    def path(self) -> Path:
        return self.workdir.path

    @property
    def uid(self) -> int | None:
        return self.user.uid if self.user else None

    def close(self) -> None:
        """Kill whatever the uid still runs, give the directory back, release the uid."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.user is not None:
                _kill_uid_async_safe(self.user.uid)
            self.workdir.give_back()
        finally:
            self.workdir.cleanup()
            if self.user is not None:
                self.user.release()


def _kill_uid_async_safe(uid: int) -> None:
    """kill_uid from a (possibly multi-threaded) parent: nothing to do if /proc shows no process of
    the uid (the usual case); otherwise a short-lived helper process kills them."""
    import subprocess
    import sys

    if not _confine.uid_processes(uid):
        return
    code = f"import sys; sys.path.insert(0, {os.path.dirname(_confine.__file__)!r}); import _confine; " \
           f"_confine.kill_uid({int(uid)})"
    subprocess.run([sys.executable, "-I", "-S", "-c", code], check=False, timeout=30,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def prepare_child(policy: Policy, *, files: dict[str, str | bytes] | None = None,
                  env: dict[str, str] | None = None, cwd: Path | None = None) -> ChildSandbox:
    """Claim a uid and a work directory (``cwd``, adopted, or a fresh one) for one forked child;
    raises IsolationUnavailableError under a strict policy when a layer is missing here."""
    caps = probe()
    root = caps.is_root and policy.drop_user
    fs_why = caps.filesystem_reason() if policy.filesystem else "filesystem isolation turned off by the policy"
    net = not policy.network and caps.network_namespace and caps.is_root
    isolation: dict[str, Any] = {
        "user": root, "dropped_root": root,
        "user_detail": "per-run unprivileged uid" if root else "not root: runs as the calling user",
        "read_all_files": False,
        "filesystem": root and not fs_why,
        "filesystem_detail": fs_why or "private mount namespace, read-only except the work directory",
        "network": net,
        "network_detail": ("network namespace (loopback only, down)" if net else
                           ("network=True requested" if policy.network else
                            f"not isolated: {caps.network_reason if caps.is_root else 'not root'}")),
        "pid_namespace": False,
        "process_cleanup": "uid-kill" if root else "process-group",
        "limits": policy.limits.to_dict(),
        "strict": policy.strict,
    }
    missing = policy.missing_layers(isolation)
    isolation.update(full=not missing, missing=missing)
    if policy.strict and missing:
        raise IsolationUnavailableError("strict sandbox policy: refusing to run untrusted code without full "
                                        "isolation; missing " + "; ".join(missing))
    user = acquire_user() if root else None
    isolation["uid"] = user.uid if user else os.getuid()
    try:
        workdir = Workdir(cwd, uid=user.uid if user else None, keep=False)
        workdir.write(files)
    except BaseException:
        if user is not None:
            user.release()
        raise
    nproc = policy.limits.max_procs
    spec: dict[str, Any] = {
        "uid": user.uid if user else None,
        "gid": user.gid if user else None,
        "rlimits": policy.rlimits(nproc=int(nproc) if (nproc and user) else None),
        "network": bool(net),
        "env": build_env(workdir.path, workdir.tmp, env),
        "workdir": str(workdir.path),
        "fs": None,
    }
    if isolation["filesystem"]:
        spec["fs"] = {"workdir": str(workdir.path), "writable": [os.path.abspath(p) for p in policy.writable],
                      "hide": policy.hidden_trees(), "expose": policy.exposed_paths(python=True),
                      "tmpfs_mb": policy.tmpfs_mb, "new_proc": False,
                      "outer_ns": _confine.mount_namespace_id()}
    return ChildSandbox(spec=spec, isolation=isolation, workdir=workdir, user=user)


def lend(child: ChildSandbox) -> None:
    """Hand the filled work directory to the child's uid (after the parent wrote its inputs)."""
    child.workdir.lend()


def confine_child(spec: dict[str, Any]) -> dict[str, Any]:
    """In the forked child, as root: apply ``spec`` (from :func:`prepare_child`). Never returns
    unconfined: any failure raises, and the caller must then exit without running the candidate."""
    flags = 0
    if spec.get("fs"):
        flags |= _confine.CLONE_NEWNS
    if spec.get("network"):
        flags |= _confine.CLONE_NEWNET
    if flags:
        _confine.unshare(flags)
    view: dict[str, Any] = {}
    if spec.get("fs"):
        view = _confine.setup_filesystem(**spec["fs"])
        _confine.mount_proc_hidepid()
        view["private_proc"] = "hidepid=invisible"
    os.chdir(spec["workdir"])
    _confine.apply_rlimits({k: tuple(v) for k, v in spec["rlimits"].items()})
    if spec.get("uid") is not None:
        _confine.drop_privileges(int(spec["uid"]), int(spec["gid"]))
    os.environ.clear()
    os.environ.update(spec["env"])
    return view
