"""Confining the current process: filesystem view, network, limits, identity (stdlib only).

One implementation of "become a sandboxed process", used by both ways a sandboxed program starts:

* the supervisor (``_supervisor.py``), PID 1 of fresh PID/mount/network namespaces made by
  ``unshare``, which calls :func:`setup_filesystem` once and then confines each program it execs;
* a forked child of the evaluation fork server (``veriforge.cuda.evaluate.zygote``), which calls
  :func:`unshare` for its own mount and network namespaces and then the same functions.

Nothing here imports veriforge (the supervisor runs with ``python -I -S``), so keep it stdlib-only.

The filesystem view, built as root inside a private mount namespace:

1. every existing mount is remounted read-only (nothing outside the work directory is writable,
   whatever its permissions: the run store, caches, ``$HOME``, the project checkout);
2. each *hidden* tree (by default ``/root`` and ``/home``, plus veriforge's home) is covered by an
   empty tmpfs (read-only once filled), and ``/tmp``, ``/var/tmp`` and ``/dev/shm`` by fresh private
   size-capped tmpfs mounts, so nothing the harness keeps there is visible and nothing written
   there survives;
3. only the *exposed* paths inside those (the Python installation, the program's executable,
   inputs the caller lends) are bound back read-only at their original paths, and the work
   directory (and any extra *writable* path) read-write;
4. in a new PID namespace, a fresh ``/proc`` shows only the sandbox's own processes.
"""

from __future__ import annotations

import _signal as signal  # the C module (`signal` imports enum; the supervisor starts for every run)
import os
import resource
import time

__all__ = [
    "CLONE_NEWNET",
    "CLONE_NEWNS",
    "apply_rlimits",
    "drop_privileges",
    "kill_uid",
    "mount_namespace_id",
    "mount_proc_hidepid",
    "setup_filesystem",
    "uid_processes",
    "unshare",
]

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
_KEEP_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC}

_RLIMITS = {
    "cpu": resource.RLIMIT_CPU,
    "as": resource.RLIMIT_AS,
    "fsize": resource.RLIMIT_FSIZE,
    "nproc": resource.RLIMIT_NPROC,
    "core": resource.RLIMIT_CORE,
    "nofile": resource.RLIMIT_NOFILE,
}

_libc_cache: list = []


def _libc():
    if not _libc_cache:
        import ctypes

        _libc_cache.append((ctypes, ctypes.CDLL(None, use_errno=True)))
    return _libc_cache[0]


def _check(ret: int, what: str) -> None:
    if ret != 0:
        ctypes, _ = _libc()
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags: int) -> None:
    """``unshare(2)`` for the calling process (Python 3.11 has no ``os.unshare``)."""
    _, libc = _libc()
    _check(libc.unshare(flags), f"unshare({flags:#x})")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    ctypes, libc = _libc()
    def enc(text: str | None) -> bytes | None:
        return None if text is None else text.encode()

    _check(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {source or fstype} on {target}")


def _mountpoints() -> list[tuple[str, int]]:
    """(mount point, flags to keep) for every mount, parents before children."""
    out = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")
            keep = 0
            for opt in fields[5].split(","):
                keep |= _KEEP_FLAGS.get(opt, 0)
            out.append((point, keep))
    return out


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _make_path(path: str, is_dir: bool) -> None:
    """Create ``path`` (a mount point) with world-traversable parents, in a fresh tmpfs."""
    parent = os.path.dirname(path)
    if parent and not os.path.isdir(parent):
        os.makedirs(parent, mode=0o755, exist_ok=True)
    if is_dir:
        os.makedirs(path, mode=0o755, exist_ok=True)
    elif not os.path.exists(path):
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))


def _bind(fd: int, target: str, *, readonly: bool) -> None:
    _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC)
    # A bind mount copies the source mount's flags (read-only by now): set them explicitly.
    _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | (MS_RDONLY if readonly else 0))


def mount_namespace_id() -> int:
    """The inode of this process's mount namespace (equal for processes that share it)."""
    return os.stat("/proc/self/ns/mnt").st_ino


def setup_filesystem(*, workdir: str, writable: list[str], hide: list[str], expose: list[str],
                     tmpfs_mb: int, new_proc: bool, outer_ns: int) -> dict:
    """Build the sandbox's view of the filesystem (see the module docstring). Must run as root
    inside a private mount namespace. Returns a JSON-ready description of what was done.

    ``outer_ns`` is the caller's :func:`mount_namespace_id`: if we are still in that namespace
    every mount below would change the host's filesystem, so nothing is done and OSError raised.
    """
    if mount_namespace_id() == int(outer_ns):
        raise OSError("refusing to build the sandbox filesystem: still in the caller's mount namespace")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    size = f"size={max(int(tmpfs_mb), 1)}m"
    tmp_roots = [t for t in ("/tmp", "/var/tmp", "/dev/shm") if os.path.isdir(t) and not os.path.islink(t)]
    hidden = [h for h in hide if os.path.isdir(h) and not os.path.islink(h)]
    roots: list[tuple[str, bool]] = []  # (path, is private tmp), outermost first, none inside another
    for root, is_tmp in sorted([(t, True) for t in tmp_roots] + [(h, False) for h in hidden], key=lambda r: len(r[0])):
        if not any(_under(root, r) for r, _ in roots):
            roots.append((root, is_tmp))
    covered = [r for r, _ in roots]
    # Hold every path we bind back by descriptor before anything covers it.
    keep_rw = [p for p in dict.fromkeys([workdir, *writable]) if os.path.exists(p)]
    # Exposed: paths strictly inside a covered root (exposing a root, or a parent of one, would
    # undo the cover, e.g. a script in /tmp puts /tmp on sys.path).
    ro = [p for p in dict.fromkeys(expose) if os.path.exists(p)
          and any(_under(p, c) and p != c for c in covered) and not any(_under(c, p) for c in covered)]
    # A hidden tree inside another cover (veriforge's home under /tmp) is hidden by that cover, until
    # a path bound back contains it (a script folder on sys.path that holds the home): then it is
    # covered again, after that bind, and what is exposed inside it is bound after that.
    nested = [h for h in hidden if h not in covered and any(_under(h, b) and h != b for b in [*ro, *keep_rw])]
    ro = [p for p in ro if p not in nested]  # as for a root: the cover wins
    ro = [p for p in ro if not any(q != p and _under(p, q) and os.path.isdir(q)
                                   and not any(_under(h, q) and _under(p, h) for h in nested) for q in ro)]
    binds = sorted([(p, True) for p in ro] + [(p, False) for p in keep_rw], key=lambda b: len(b[0]))
    fds = {p: os.open(p, os.O_PATH | os.O_CLOEXEC) for p, _ in binds}
    covered_again: list[str] = []
    try:
        # 1. everything read-only (device nodes stay usable: a read-only mount only stops writes
        #    to regular files, directories and links).
        readonly = 0
        for point, keep in _mountpoints():
            if _under(point, "/proc") or _under(point, "/sys"):
                continue
            try:
                _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | keep)
                readonly += 1
            except OSError:
                pass  # e.g. a mount shadowed by another; what matters is checked by the tests
        # 2. hidden trees (empty tmpfs, read-only at the end) and private temp dirs (fresh tmpfs).
        for root, is_tmp in roots:
            if is_tmp:
                _mount("veriforge-tmp", root, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,{size}")
            else:
                _mount("veriforge-hidden", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
        # 3. bind back what the program may read (exposed) or write (work directory), in place;
        #    a hidden tree that a bind brought back is covered again, outermost first.
        steps = sorted([(p, "bind") for p, _ in binds] + [(h, "cover") for h in nested], key=lambda s: len(s[0]))
        readonly_of = dict(binds)
        for path, step in steps:
            if step == "cover":
                if os.path.isdir(path):  # else it sits in an earlier cover, and nothing brought it back
                    _mount("veriforge-hidden", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
                    covered_again.append(path)
                continue
            _make_path(path, os.path.isdir(f"/proc/self/fd/{fds[path]}"))
            _bind(fds[path], path, readonly=readonly_of[path])
        for root in [*(r for r, is_tmp in roots if not is_tmp), *covered_again]:
            _mount(None, root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        # 4. a /proc that shows only this namespace's processes.
        proc = False
        if new_proc:
            _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
            proc = True
    finally:
        for fd in fds.values():
            os.close(fd)
    return {"readonly_mounts": readonly, "hidden": [*(r for r, t in roots if not t), *covered_again],
            "private_tmp": [r for r, t in roots if t], "exposed": ro, "writable": keep_rw, "private_proc": proc}


def mount_proc_hidepid() -> None:
    """A new ``/proc`` instance on which other users' processes are invisible (for confined
    children without a PID namespace; per-instance options need Linux >= 5.8)."""
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible")


def apply_rlimits(rlimits: dict) -> None:
    """Set the limits, never above what this process already has: a sandbox started from inside
    another (a compiler run by a confined candidate) keeps the tighter of the two."""
    inf = resource.RLIM_INFINITY
    for name, (soft, hard) in rlimits.items():
        which = _RLIMITS[name]
        _, cur_hard = resource.getrlimit(which)
        if os.geteuid() != 0 and cur_hard != inf:
            hard = cur_hard if hard == inf else min(hard, cur_hard)
            soft = hard if soft == inf else min(soft, hard)
        resource.setrlimit(which, (soft, hard))


def drop_privileges(uid: int, gid: int) -> None:
    """Become ``uid``/``gid`` for good (no supplementary groups, no way back)."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)


def uid_processes(uid: int) -> list[int]:
    """Live (non-zombie) processes whose real, effective or saved uid is ``uid`` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", "rb") as fh:
                status = fh.read()
        except OSError:
            continue
        uids = state = None
        for line in status.split(b"\n"):
            if line.startswith(b"State:"):
                state = line.split()[1:2]
            elif line.startswith(b"Uid:"):
                uids = [int(x) for x in line.split()[1:4]]
                break
        if uids and uid in uids and state != [b"Z"]:
            found.append(int(entry))
    return found


def kill_uid(uid: int, rounds: int = 50) -> int:
    """SIGKILL every process owned by ``uid``, however it was started (``setsid``, double fork).

    While any is left, a helper drops to ``uid`` and calls ``kill(-1, SIGKILL)``, which reaches
    exactly the processes that uid may signal: its own (``kill(-1)`` reports success whenever any
    other process exists, so /proc is what says whether something is left). Returns how many
    rounds were needed. Must be called as root.
    """
    for done in range(rounds):
        if not uid_processes(uid):
            return done
        pid = os.fork()
        if pid == 0:
            try:
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
                os.kill(-1, signal.SIGKILL)  # the helper itself is spared by kill(-1)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        time.sleep(0.002)
    return rounds
