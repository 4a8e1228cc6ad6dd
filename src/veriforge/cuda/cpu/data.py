"""Inputs a sandboxed CUDA program may read outside its working directory.

A program runs in :mod:`veriforge.sandbox`: everything is read-only, and the hidden trees (``/home``,
``/root``, veriforge's home) and the temporary directories (``/tmp``, ``/var/tmp``, ``/dev/shm``)
are covered by empty file systems, so an input such as Rodinia's ``../../data/dwt2d/192.bmp`` next
to a checkout under ``/home`` or ``/tmp`` is invisible. Two ways to lend inputs, both read-only:

* **explicit** - ``run_program(..., data=[...])``, ``Project(data=[...])``, ``veriforge cuda run
  --data PATH``: files or folders (a relative path is taken from the program's working directory for
  ``run_program``/the CLI, from the project's ``root`` for a ``Project``); a path that does not
  exist, or lies inside veriforge's own home (store, caches, key), is a ``ValueError``;
* **automatic** - every program argument that names an existing file or folder (``in.txt``,
  ``-i=../data/x.bin``: the text after ``=`` counts too), relative to the working directory.

Paths inside the working directory are skipped (it is already visible, and writable: lending a file
there read-only would stop a program from overwriting its own output file). Paths outside the
covered trees are visible (read-only) anyway, and the sandbox never lends a covered root itself or a
folder that contains one (``/tmp``, ``/home``, a parent of veriforge's home), so neither way can
uncover veriforge's data or make anything writable. The program runs under a per-run uid: a lent
file must be readable by others (mode ``o+r``, folders ``o+rx``) to be read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["argument_paths", "exposed_inputs", "resolve_data"]


def _veriforge_home() -> str:
    from veriforge.sandbox.policy import _veriforge_home as home

    return os.path.realpath(home())


def _inside(path: str, folder: str) -> bool:
    folder = folder.rstrip("/") or "/"
    return path == folder or path.startswith(folder + "/")


def resolve_data(paths: Iterable[str | os.PathLike[str]], base: Path) -> list[str]:
    """Explicit data paths as absolute, normalised paths (``ValueError`` if one does not exist or
    lies inside veriforge's home)."""
    home = _veriforge_home()
    out: list[str] = []
    for p in paths:
        text = os.fspath(p)
        if not text:
            raise ValueError("an empty data path")
        full = os.path.normpath(os.path.join(base, text))
        if not os.path.exists(full):
            raise ValueError(f"data path {text!r} does not exist ({full})")
        if _inside(os.path.realpath(full), home) or _inside(full, home):
            raise ValueError(f"data path {text!r} lies inside veriforge's home ({home}); it is never lent to programs")
        out.append(full)
    return list(dict.fromkeys(out))


def argument_paths(argv: Sequence[str], base: Path | None) -> list[str]:
    """Program arguments that name existing files or folders (``x`` or ``--opt=x``; relative to
    ``base``, or only absolute ones when ``base`` is None), as absolute paths; arguments inside
    veriforge's home are ignored."""
    home = _veriforge_home()
    out: list[str] = []
    for arg in argv:
        arg = str(arg)
        candidates = [arg]
        if "=" in arg:
            candidates.append(arg.split("=", 1)[1])
        for text in candidates:
            if not text or text.startswith("-") or "\0" in text or len(text) > 4096:
                continue
            if base is None and not os.path.isabs(text):
                continue
            full = os.path.normpath(os.path.join(base or "/", text))
            try:
                exists = os.path.exists(full)
            except OSError:
                continue
            if exists and not _inside(os.path.realpath(full), home) and not _inside(full, home):
                out.append(full)
    return list(dict.fromkeys(out))


def exposed_inputs(data: Sequence[str], argv: Sequence[str], cwd: Path | None) -> tuple[str, ...]:
    """What the sandbox lends read-only for one run: ``data`` (already resolved) and the argument
    paths, minus anything inside the working directory ``cwd`` (None: a fresh private directory,
    then relative arguments name nothing outside it)."""
    found = [*data, *argument_paths(argv, cwd)]
    if cwd is not None:
        work = os.path.realpath(cwd)
        found = [p for p in found if not _inside(os.path.realpath(p), work) and not _inside(p, str(cwd))]
    return tuple(dict.fromkeys(found))
