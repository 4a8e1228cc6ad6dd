"""Which uid a sandboxed program runs as.

Root is exempt from ``RLIMIT_NPROC`` (the kernel skips the check for CAP_SYS_RESOURCE /
CAP_SYS_ADMIN), so as root a fork bomb would be limited by nothing. We therefore run each
program under a fresh, unprivileged uid that no account uses: NPROC then counts exactly this
run's processes, the program cannot write anything outside its work directory, and cannot
signal or ptrace anything else on the machine.

The uid must be unique among runs happening *right now* (on the whole machine, across
processes), otherwise two runs would share one process budget. Each uid is claimed with an
``flock`` on a lock file; the lock fd is also inherited by the in-sandbox supervisor, so the uid
stays claimed until the last sandboxed process is gone even if our process dies first.
"""

from __future__ import annotations

import fcntl
import os
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path

from veriforge.errors import SandboxError

__all__ = ["UID_BASE", "UID_SPAN", "SandboxUser", "acquire_user", "count_tasks"]

UID_BASE = 2_000_000_000
"""Far above any real account (and above the usual subuid ranges for containers)."""
UID_SPAN = 1 << 20


def _lock_dir() -> Path:
    path = Path(tempfile.gettempdir()) / "veriforge-sandbox-uids"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


@dataclass
class SandboxUser:
    """A claimed uid (gid is the same number); ``lock_fd`` holds the claim."""

    uid: int
    gid: int
    lock_fd: int
    lock_path: Path | None = None

    def release(self) -> None:
        """Give the claim back. The lock file is unlinked *before* unlocking, so anyone who
        opened it meanwhile notices (inode check in :func:`acquire_user`) and picks again."""
        if self.lock_fd >= 0:
            if self.lock_path is not None:
                try:
                    self.lock_path.unlink()
                except FileNotFoundError:
                    pass
            os.close(self.lock_fd)
            self.lock_fd = -1


def acquire_user(attempts: int = 64) -> SandboxUser:
    """Claim a free uid in ``[UID_BASE, UID_BASE + UID_SPAN)``."""
    lock_dir = _lock_dir()
    rng = random.SystemRandom()
    for _ in range(attempts):
        uid = UID_BASE + rng.randrange(UID_SPAN)
        fd = os.open(lock_dir / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            same = os.fstat(fd).st_ino == os.stat(lock_dir / f"{uid}.lock").st_ino
        except FileNotFoundError:
            same = False
        if not same or count_tasks(uid):
            # The file was unlinked by its previous holder (it is not the claim any more), or the
            # uid still owns processes from a run whose parent died: try another uid.
            os.close(fd)
            continue
        return SandboxUser(uid, uid, fd, lock_dir / f"{uid}.lock")
    raise SandboxError(f"could not claim a free sandbox uid after {attempts} attempts (lock dir {lock_dir})")


def count_tasks(uid: int) -> int:
    """Tasks (threads included, as RLIMIT_NPROC counts them) currently owned by ``uid``."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as fh:
                real_uid = threads = None
                for line in fh:
                    if line.startswith("Uid:"):
                        real_uid = int(line.split()[1])
                    elif line.startswith("Threads:"):
                        threads = int(line.split()[1])
                        break
        except (OSError, ValueError):
            continue
        if real_uid == uid:
            total += threads or 1
    return total
