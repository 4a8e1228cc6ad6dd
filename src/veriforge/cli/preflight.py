"""Checks every long-running command makes *before* it starts working.

A search, a generation or a benchmark can run for minutes. Everything that would make its result
useless and that can be known up front is checked here first, in seconds, with one line that names
the endpoint or path and what to do:

* :func:`check_model` — a configured model answers one cheap request (otherwise every model call
  of the run fails quietly into the trace file and the run still "succeeds");
* :func:`check_out_dir` / :func:`check_out_file` — the output location can be written (otherwise a
  traceback after the whole search);
* :class:`OutputLock` — no other veriforge run is writing the same output (otherwise two runs
  silently overwrite each other's files).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from veriforge.errors import ConfigError

#: Name of the lock file an :class:`OutputLock` keeps in an output folder while a run writes there.
LOCK_NAME = ".veriforge.lock"


class OutputLocationError(ConfigError):
    """An output location (``--out``) cannot be used: it is a file, or cannot be created or written."""


class OutputLockedError(OutputLocationError):
    """Another running veriforge process holds the lock of this output location."""


def check_model(model: str | None, settings: Any | None = None, *, option: str = "--model") -> str | None:
    """Fail in seconds when ``model`` does not answer (:func:`veriforge.llm.factory.check_answers`).

    ``None`` (no model) passes: whether a model is required is the command's business. Returns the
    check's one-line description. Raises :class:`~veriforge.llm.errors.ModelUnavailableError` or
    :class:`~veriforge.llm.errors.LLMConfigError`.
    """
    if not model:
        return None
    import asyncio

    from veriforge.llm.factory import check_answers

    return asyncio.run(check_answers(model, settings))


def _nearest_existing(path: Path) -> Path:
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe


def check_out_dir(path: Path, *, option: str = "--out", create: bool = True) -> Path:
    """Make sure ``path`` is (or can become) a writable folder; create it when ``create``.

    Writing a probe file is the only check that holds for read-only mounts, ACLs and full disks,
    so an existing folder gets one (removed at once). Raises :class:`OutputLocationError`.
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputLocationError(f"{option} {path} is an existing file, not a folder; name a folder "
                                  "(it is created if missing)")
    if not path.exists():
        base = _nearest_existing(path.absolute())
        if not base.is_dir():
            raise OutputLocationError(f"{option} {path} cannot be created: {base} is a file, not a folder")
        if not create:
            if not os.access(base, os.W_OK | os.X_OK):
                raise OutputLocationError(f"{option} {path} cannot be created: {base} is not writable; "
                                          f"choose another {option}")
            return path
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputLocationError(f"{option} {path} cannot be created ({exc.strerror or exc}); "
                                      f"choose another {option}") from None
    try:
        with tempfile.NamedTemporaryFile(dir=path, prefix=".veriforge-write-check-"):
            pass
    except OSError as exc:
        raise OutputLocationError(f"{option} {path} is not writable ({exc.strerror or exc}); "
                                  f"choose another {option}") from None
    return path


def check_out_file(path: Path, *, option: str = "--out") -> Path:
    """Make sure file ``path`` can be written: not a folder, and its folder exists or can be created
    and is writable (the folder is created). Raises :class:`OutputLocationError`."""
    path = Path(path)
    if path.is_dir():
        raise OutputLocationError(f"{option} {path} is a folder; name a file")
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputLocationError(f"{option} {path} exists and is not writable; choose another {option}")
    check_out_dir(path.parent if str(path.parent) else Path("."), option=f"{option} {path}: its folder")
    return path


class OutputLock:
    """An exclusive ``fcntl`` lock on an output location, held while a run writes there.

    For a folder the lock file is ``FOLDER/.veriforge.lock``; for a single output file it is a
    hidden sibling ``.NAME.veriforge.lock``. The holder writes its pid, run id and command into the
    file, so a second run refuses with one line that names them. The lock is released (and the file
    removed) on exit, and by the kernel when the process dies — a crashed run never leaves a stale
    lock behind. Removing the file is safe: a process that locked a file someone else had already
    unlinked notices (the inode changed) and locks the new one instead.
    """

    def __init__(self, target: Path, *, command: str, run_id: str | None = None, option: str = "--out",
                 is_file: bool = False, created: bool = False) -> None:
        target = Path(target)
        self.target = target
        #: the folder was made for this run: removed on release if nothing was written into it, so
        #: a run that fails before producing anything leaves no empty folder behind
        self.created = created and not is_file
        self.path = target.parent / f".{target.name}{LOCK_NAME}" if is_file else target / LOCK_NAME
        self.command = command
        self.run_id = run_id
        self.option = option
        self._fd: int | None = None

    def acquire(self) -> OutputLock:
        """Take the lock or raise :class:`OutputLockedError` naming the holder."""
        for _ in range(20):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                raise OutputLockedError(f"{self.option} {self.target} is in use by another veriforge run "
                                        f"({holder}); wait for it to finish or choose another "
                                        f"{self.option}") from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self._fd = fd
                self._write_holder()
                return self
            os.close(fd)  # the previous holder removed the file between our open and lock: retry
        raise OutputLockedError(f"{self.option} {self.target}: could not take the lock {self.path}")

    def set_run_id(self, run_id: str) -> None:
        """Record the run id once it is known (the holder line a second run prints names it)."""
        self.run_id = run_id
        if self._fd is not None:
            self._write_holder()

    def _write_holder(self) -> None:
        assert self._fd is not None
        data = json.dumps({"pid": os.getpid(), "run_id": self.run_id, "command": self.command,
                           "since": time.strftime("%Y-%m-%d %H:%M:%S")}).encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)

    def release(self) -> None:
        """Remove the lock file and drop the lock (idempotent)."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os.close(self._fd)  # closing drops the flock
        self._fd = None
        if self.created:
            with contextlib.suppress(OSError):
                self.target.rmdir()  # only succeeds when empty

    def __enter__(self) -> OutputLock:
        return self if self._fd is not None else self.acquire()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    """"pid 123, run R, veriforge optimize, since ..." from a lock file (what is known of it)."""
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        info = {}
    if not isinstance(info, dict) or not info.get("pid"):
        return "holder not yet recorded"
    parts = [f"pid {info['pid']}"]
    if info.get("run_id"):
        parts.append(f"run {info['run_id']}")
    if info.get("command"):
        parts.append(str(info["command"]))
    if info.get("since"):
        parts.append(f"since {info['since']}")
    return ", ".join(parts)


def prepare_out(path: Path, *, command: str, run_id: str | None = None, option: str = "--out",
                is_file: bool = False) -> OutputLock:
    """Check an output location and lock it: the one call a command makes before its work starts.

    Returns the held :class:`OutputLock` (use it as a context manager around the work).
    """
    existed = Path(path).exists()
    if is_file:
        check_out_file(path, option=option)
    else:
        check_out_dir(path, option=option)
    return OutputLock(path, command=command, run_id=run_id, option=option, is_file=is_file,
                      created=not existed).acquire()


def check_models(names: set[str] | list[str], settings: Any | None = None) -> list[str]:
    """:func:`check_model` for every distinct model of a multi-agent run, in a stable order."""
    return [line for name in sorted({n for n in names if n}) if (line := check_model(name, settings))]
