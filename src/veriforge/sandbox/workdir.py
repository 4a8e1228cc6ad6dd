"""The run's private directory and its scrubbed environment.

Every run gets a fresh directory (mode 0700, owned by the sandbox uid) so candidates cannot see
each other's files or leave things behind for the next one; it is removed afterwards unless the
caller asks to keep it. It lives in the system temp directory, not under VERIFORGE_HOME, because
the unprivileged sandbox uid must be able to reach it (home directories are often 0700).

When the caller supplies its own directory instead (``cwd=``), files are written into it and it
is never removed; under a dropped uid its entries are lent to the sandbox uid for the run and
handed back to their original owners afterwards.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from veriforge.errors import SandboxError

__all__ = ["BASE_PATH", "Workdir", "WorkdirError", "build_env", "default_path"]

BASE_PATH = "/usr/local/bin:/usr/bin:/bin"


class WorkdirError(SandboxError):
    """The work directory could not be created, filled, lent or removed."""


def _safe_target(root: Path, name: str) -> Path:
    rel = Path(name)
    if rel.is_absolute() or not rel.parts or ".." in rel.parts:
        raise WorkdirError(f"sandbox file name {name!r} must be a relative path inside the work directory")
    return root / rel


def _others_can_reach(path: Path) -> Path | None:
    """The first ancestor of ``path`` an unprivileged uid cannot traverse, or None."""
    for parent in [path, *path.parents]:
        try:
            mode = parent.stat().st_mode
        except OSError:
            return parent
        if not mode & stat.S_IXOTH:
            return parent
    return None


MAX_LEND_ENTRIES = 20_000
"""Most entries an adopted working folder may hold to be lent (see :meth:`Workdir._check_size`)."""

NOT_LENT = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__"})
"""Folders of an adopted cwd that are never lent (see :func:`_not_lent`)."""


def _not_lent(path: Path) -> bool:
    """Whether a sub-folder of an adopted cwd stays with its owner for the run.

    A project folder usually holds a version-control store and a virtual environment with tens of
    thousands of files that no program under test reads as data; lending them would be slow and
    would count against :data:`MAX_LEND_ENTRIES`, so ``cuda run`` from an ordinary project root
    would be refused. Keeping them is also the safer side: the sandbox uid gets fewer rights, never
    more (it can still read them where their modes let everyone read). Which folders were kept
    back is recorded when the folder is lent, so giving it back walks into every other folder,
    including one a program made under such a name during the run.
    """
    if path.name in NOT_LENT:
        return True
    if (path / "pyvenv.cfg").is_file() or (path / "conda-meta").is_dir():
        return True
    return os.path.realpath(path) == _home_realpath()  # veriforge's own store, caches and key


def _home_realpath() -> str:
    from veriforge.sandbox.policy import _veriforge_home

    return os.path.realpath(_veriforge_home())


def _entries(folder: Path, keep: Callable[[Path], bool] | None = None):
    """The folder and every entry below it, less the sub-folders ``keep`` holds back (with all
    they contain)."""
    yield folder
    for root, dirs, names in os.walk(folder):
        here = Path(root)
        if keep is not None:
            dirs[:] = [d for d in dirs if not keep(here / d)]
        for name in dirs + names:
            yield here / name


class Workdir:
    """Create (or adopt), fill, lend and clean up the directory a program runs in."""

    def __init__(self, cwd: Path | None, *, uid: int | None, keep: bool) -> None:
        self.uid = uid
        self.owned = cwd is None
        self.keep = keep or not self.owned
        self._token = f"{os.getpid()}-{id(self)}-{os.urandom(4).hex()}"  # this run, in a lend journal
        if cwd is None:
            try:
                self.path = Path(tempfile.mkdtemp(prefix="veriforge-sbx-"))
            except OSError as exc:
                raise WorkdirError(f"cannot create a sandbox work directory in {tempfile.gettempdir()}: {exc}") from exc
        else:
            self.path = Path(cwd).resolve()
            if not self.path.is_dir():
                raise WorkdirError(f"sandbox cwd {self.path} is not a directory")
        if uid is not None:
            blocked = _others_can_reach(self.path.parent)
            if blocked is not None:
                self.cleanup()
                raise WorkdirError(
                    f"the sandbox user cannot reach {self.path}: {blocked} is not searchable by other users; "
                    "use a directory under the system temp dir or make the parents o+x"
                )
        self.tmp = self.path / ".tmp"

    def write(self, files: dict[str, str | bytes] | None) -> None:
        """Write the caller's files (relative paths; parents created)."""
        try:
            self.tmp.mkdir(exist_ok=True)
            for name, content in (files or {}).items():
                target = _safe_target(self.path, name)
                target.parent.mkdir(parents=True, exist_ok=True)
                if isinstance(content, str):
                    content = content.encode("utf-8")
                target.write_bytes(content)
        except OSError as exc:
            raise WorkdirError(f"cannot write sandbox files into {self.path}: {exc}") from exc

    def lend(self) -> None:
        """Give the directory tree to the sandbox uid (recording owners of an adopted cwd).

        An adopted cwd's original owners go to a journal outside the tree (see :class:`_LendJournal`)
        shared by every run lending the same folder: a second run started while the first holds it
        must not take the sandbox uid for the owner, and a run killed before it gave the tree back
        must not leave it to the sandbox uid for good -- the next run restores it first.
        """
        if self.uid is None:
            return
        try:
            if self.owned:
                for path in self._walk():
                    os.lchown(path, self.uid, self.uid)
                self.path.chmod(0o700)
                return
            self._check_size()
            with _LendJournal(self.path) as journal:
                journal.recover()
                # Owners and held-back folders are recorded by the first lend only: while another
                # run holds the folder, an entry not in the journal was made by its program (owned
                # by its uid), and goes to the folder's owner when the folder is given back.
                first = not journal.live_holders()

                def keep(path: Path) -> bool:
                    if str(path) in journal.kept:
                        return True
                    if first and _not_lent(path):
                        journal.kept.add(str(path))
                        return True
                    return False

                for path in _entries(self.path, keep):
                    if first:
                        st = path.lstat()
                        journal.owners.setdefault(str(path), (st.st_uid, st.st_gid))
                    os.lchown(path, self.uid, self.uid)
                journal.holders[self._token] = os.getpid()
        except OSError as exc:
            raise WorkdirError(f"cannot hand {self.path} to the sandbox uid {self.uid}: {exc}") from exc

    def give_back(self) -> None:
        """Return an adopted cwd's entries to their owners once no other run holds it; new entries
        go to the cwd's owner."""
        if self.uid is None or self.owned:
            return
        with _LendJournal(self.path) as journal:
            journal.holders.pop(self._token, None)
            if not journal.live_holders():
                journal.restore()

    def _check_size(self) -> None:
        """Refuse, before anything changes owner, to lend a folder of more than
        :data:`MAX_LEND_ENTRIES` entries: ``cuda run`` started from ``$HOME`` would otherwise hand
        the whole home tree to the sandbox uid (slowly) for the length of the run. A folder inside
        veriforge's home (its store, caches and key) is never lent."""
        home = _home_realpath()
        if os.path.realpath(self.path) == home or os.path.realpath(self.path).startswith(home.rstrip("/") + "/"):
            raise WorkdirError(f"{self.path} is inside veriforge's own folder ({home}: run store, caches, key), which "
                               "is never lent to the sandbox user; run the program from another folder")
        for n, _path in enumerate(_entries(self.path, _not_lent)):
            if n >= MAX_LEND_ENTRIES:
                raise WorkdirError(
                    f"{self.path} holds more than {MAX_LEND_ENTRIES} files and folders; the program's working "
                    "folder is lent to the sandbox user, so run it from the folder with its own files "
                    "(pass data elsewhere with --data)"
                )

    def _walk(self):
        """Every entry of a folder we created (ours, walked whole)."""
        return _entries(self.path)

    def cleanup(self) -> None:
        """Remove the directory we created (never an adopted cwd, never one asked to be kept)."""
        if self.owned and not self.keep:
            shutil.rmtree(self.path, ignore_errors=True)


class _LendJournal:
    """Original owners of an adopted folder lent to the sandbox uid, and the runs holding it.

    Kept in ``<tmp>/veriforge-lent/<digest>.json`` (root-only), read and written under an exclusive
    ``fcntl`` lock, so concurrent runs in one folder and runs killed mid-way (SIGKILL, a test
    timeout) cannot leave the user's files owned by the sandbox uid.
    """

    def __init__(self, folder: Path) -> None:
        import hashlib

        base = Path(tempfile.gettempdir()) / "veriforge-lent"
        base.mkdir(mode=0o700, exist_ok=True)
        st = base.lstat()
        # the journal decides whom the user's files are given back to: a folder someone else made
        # (a program that could write to the shared temp dir) must never be trusted
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise WorkdirError(f"{base} is not a private folder of this user (owner uid {st.st_uid}, "
                               f"mode {stat.S_IMODE(st.st_mode):o}); remove it and run again")
        digest = hashlib.sha256(str(folder).encode()).hexdigest()[:24]
        self.folder, self.file, self.lock_path = folder, base / f"{digest}.json", base / f"{digest}.lock"
        self.owners: dict[str, tuple[int, int]] = {}
        self.holders: dict[str, int] = {}  # token of each lending run -> its pid
        self.kept: set[str] = set()  # sub-folders held back when the folder was lent (_not_lent)

    def __enter__(self) -> _LendJournal:
        import fcntl
        import json

        self._lock = open(self.lock_path, "a+")  # held until __exit__
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        if self.file.is_file():
            try:
                data = json.loads(self.file.read_text())
                self.owners = {k: (int(v[0]), int(v[1])) for k, v in data.get("owners", {}).items()}
                self.holders = {str(k): int(v) for k, v in data.get("holders", {}).items()}
                self.kept = {str(k) for k in data.get("kept", [])}
            except (OSError, ValueError, TypeError, IndexError, AttributeError):
                self.owners, self.holders, self.kept = {}, {}, set()
        return self

    def __exit__(self, *exc: object) -> None:
        import fcntl
        import json

        try:
            if self.holders:
                self.file.write_text(json.dumps({"path": str(self.folder), "owners": self.owners,
                                                 "holders": self.holders, "kept": sorted(self.kept)}))
            else:
                self.file.unlink(missing_ok=True)
        finally:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()

    def live_holders(self) -> dict[str, int]:
        """The holders whose process still exists (a dead one gave nothing back)."""
        alive = {}
        for token, pid in self.holders.items():
            try:
                os.kill(pid, 0)
                alive[token] = pid
            except ProcessLookupError:
                pass
            except PermissionError:
                alive[token] = pid
        self.holders = alive
        return alive

    def recover(self) -> None:
        """A journal whose runs are all gone: give the tree back before lending it again."""
        if self.owners and not self.live_holders():
            self.restore()

    def restore(self) -> None:
        """Every entry back to its recorded owner (new ones to the folder's owner), except inside
        the sub-folders that were never lent."""
        default = self.owners.get(str(self.folder), (os.getuid(), os.getgid()))
        for path in _entries(self.folder, lambda p: str(p) in self.kept):
            uid, gid = self.owners.get(str(path), default)
            try:
                os.lchown(path, uid, gid)
            except OSError:
                pass
        self.owners, self.kept = {}, set()


def default_path() -> str:
    """The sandbox's ``PATH``: the running Python's folder first, then the system's."""
    py_bin = str(Path(sys.executable).parent)
    return f"{py_bin}:{BASE_PATH}" if py_bin not in BASE_PATH.split(":") else BASE_PATH


def build_env(workdir: Path, tmp: Path, extra: dict[str, str] | None) -> dict[str, str]:
    """A minimal environment: nothing from the parent except what the caller passes in.

    PATH also holds the directory of the running Python so ``python`` means the interpreter
    veriforge runs under (with its packages), not whatever the system has.
    """
    env = {
        "PATH": default_path(),
        "HOME": str(workdir),
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }
    for key, value in (extra or {}).items():
        if not isinstance(key, str) or not isinstance(value, str) or "=" in key or "\0" in key + value:
            raise SandboxError(f"invalid environment variable {key!r}={value!r}")
        env[key] = value
    return env
