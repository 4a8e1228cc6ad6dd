"""Where veriforge keeps its files.

One root for caches (compiled artefacts, the CPU runtime's built objects), the default run
store and the installation's secret key (``secret.key``, see :mod:`veriforge.core.integrity`), so
users can move or wipe everything in one place. ``VERIFORGE_HOME`` overrides it; otherwise
``$XDG_CACHE_HOME/veriforge`` or ``~/.cache/veriforge``.

:func:`cache_dir` with ``private=True`` (the build and reference caches) creates the folder 0700
and tightens an existing folder of ours to 0700: what is cached there is run or trusted by the
harness, so other uids (the sandboxed candidates) must neither write nor read it. Other folders
keep the umask's mode: sandboxed programs may need to reach them (e.g. a task's environment).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def home() -> Path:
    """The veriforge data root (created on demand)."""
    env = os.environ.get("VERIFORGE_HOME")
    if env:
        root = Path(env).expanduser()
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = Path(base) / "veriforge"
    root.mkdir(parents=True, exist_ok=True)
    return root


def cache_dir(name: str, *, private: bool = False) -> Path:
    """A named cache folder under :func:`home` (e.g. ``cache_dir("nvcc")``), created on demand.

    ``private=True``: created mode 0700, and an existing folder of ours that other uids may read or
    write is tightened to 0700.
    """
    path = home() / "cache" / name
    if not private:
        path.mkdir(parents=True, exist_ok=True)
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.mkdir(mode=0o700, exist_ok=True)
    make_private(path)
    return path


def make_private(path: str | os.PathLike[str]) -> None:
    """Tighten the folder ``path`` (following a link to it) to 0700 if it is ours and more open."""
    try:
        st = os.stat(path)
        if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & 0o077:
            os.chmod(path, stat.S_IMODE(st.st_mode) & 0o700)
    except OSError:
        pass  # not ours to change; the signatures on its entries still decide what is trusted
