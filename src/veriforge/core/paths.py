"""Where veriforge keeps its files.

One root for caches (compiled artefacts, the CPU runtime's built objects) and the default run
store, so users can move or wipe everything in one place. ``VERIFORGE_HOME`` overrides it;
otherwise ``$XDG_CACHE_HOME/veriforge`` or ``~/.cache/veriforge``.
"""

from __future__ import annotations

import os
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


def cache_dir(name: str) -> Path:
    """A named cache folder under :func:`home` (e.g. ``cache_dir("nvcc")``), created on demand."""
    path = home() / "cache" / name
    path.mkdir(parents=True, exist_ok=True)
    return path
