"""One policy object for every untrusted program: what it may see, write, reach and use.

Every path that runs a candidate or a program a user or model wrote (C/CUDA programs on the CPU
runtime, the PyTorch candidate children of the fork server, ``veriforge cuda run``, compilers fed
candidate source, D3-Gym and MoA code scoring) describes its needs with a :class:`Policy` and
hands it to :func:`veriforge.sandbox.run` (exec'd programs) or
:func:`veriforge.sandbox.confine.confine_child` (forked children). The defaults are the
candidate defaults of docs/sandbox.md: per-run uid, private writable work directory, read-only
everything else, home directories and veriforge's own files hidden, scrubbed environment, no
network, rlimits, the whole process tree killed at the end.

Where the machine cannot provide a layer, the run says so (``result.isolation``); with
``strict=True`` (``sandbox.strict`` in the settings, ``VERIFORGE_SANDBOX__STRICT=1``) it refuses
to run instead (:class:`IsolationUnavailableError`).
"""

from __future__ import annotations

import dataclasses
import os
import site
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veriforge.errors import SandboxError
from veriforge.sandbox.limits import Limits

__all__ = ["DEFAULT_HIDDEN", "IsolationUnavailableError", "Policy", "interpreter_paths", "program_paths",
           "strict_default"]

DEFAULT_HIDDEN = ("/root", "/home")
"""Trees covered by an empty tmpfs (only exposed paths are bound back). Other root-only files
(``/etc/shadow``) are unreadable to the per-run uid anyway."""

LAYERS = ("user", "filesystem", "network", "process_cleanup", "limits")
"""The isolation layers a strict policy requires (see :meth:`Policy.missing_layers`)."""


class IsolationUnavailableError(SandboxError):
    """A strict policy asked for an isolation layer this machine cannot provide."""


def strict_default() -> bool:
    """``VERIFORGE_SANDBOX__STRICT`` (the settings' ``sandbox.strict``), read cheaply from the env;
    a ``veriforge.toml`` value is applied by :meth:`Policy.from_settings`."""
    return os.environ.get("VERIFORGE_SANDBOX__STRICT", "").strip().lower() in ("1", "true", "yes", "on")


def _veriforge_home() -> str:
    env = os.environ.get("VERIFORGE_HOME")
    if env:
        return str(Path(env).expanduser())
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return str(Path(base) / "veriforge")


_interpreter_paths_memo: dict[tuple, list[str]] = {}


def interpreter_paths() -> list[str]:
    """What a sandboxed Python needs to read: the interpreter, its stdlib, site-packages, and the
    import path (an editable install's source folder). Code only: no data, no caches.

    Remembered per import path and veriforge home (the only inputs that change while a process
    runs): working it out takes ~2 ms of realpath and sysconfig calls, paid by every sandboxed run."""
    memo_key = (tuple(sys.path), _veriforge_home())
    if memo_key not in _interpreter_paths_memo:
        if len(_interpreter_paths_memo) > 64:
            _interpreter_paths_memo.clear()
        _interpreter_paths_memo[memo_key] = _interpreter_paths()
    return list(_interpreter_paths_memo[memo_key])


def _interpreter_paths() -> list[str]:
    paths = {
        os.path.realpath(sys.executable),
        os.path.realpath(sys.base_prefix),
        os.path.realpath(sys.prefix),
        sys.prefix,
        os.path.realpath(sysconfig.get_paths()["stdlib"]),
        os.path.realpath(sysconfig.get_paths()["purelib"]),
        os.path.realpath(sysconfig.get_paths()["platlib"]),
    }
    try:
        paths.update(os.path.realpath(p) for p in site.getsitepackages())
    except AttributeError:  # pragma: no cover - virtualenvs of old versions
        pass
    for entry in sys.path:
        if entry and os.path.isdir(entry):
            paths.add(os.path.realpath(entry))
    pkg = Path(__file__).resolve().parents[1]  # .../veriforge
    paths.add(str(pkg.parent))
    home = os.path.realpath(_veriforge_home())
    # Never expose veriforge's own data (store, caches, secret key), even if it sits on sys.path.
    return sorted(p for p in paths if os.path.exists(p) and not p.startswith(home.rstrip("/") + "/") and p != home)


def program_paths(argv0: str, path_env: str | None) -> list[str]:
    """What running ``argv0`` needs to read: the executable and, for anything inside a ``bin/``
    folder (a virtualenv, a toolchain), that installation's prefix and a virtualenv's base
    interpreter (``pyvenv.cfg`` ``home``). Directories on the program's ``PATH`` count too, so
    ``python`` from a task environment works however it is named. Only folders that look like an
    installation (a ``pyvenv.cfg`` or a ``lib/`` next to ``bin/``) are exposed whole."""
    import shutil

    found: list[str] = []
    candidates = [shutil.which(argv0, path=path_env) if "/" not in argv0 else argv0]
    candidates += [os.path.join(d, "python") for d in (path_env or "").split(":") if d]
    for exe in candidates:
        if not exe or not os.path.exists(exe):
            continue
        for p in (os.path.abspath(exe), os.path.realpath(exe)):
            found.append(p)
            parent = os.path.dirname(p)
            prefix = os.path.dirname(parent)
            cfg = os.path.join(prefix, "pyvenv.cfg")
            installed = os.path.isfile(cfg) or os.path.isdir(os.path.join(prefix, "lib"))
            if os.path.basename(parent) == "bin" and installed:
                found.append(prefix)
                if os.path.isfile(cfg):
                    with open(cfg, encoding="utf-8", errors="replace") as fh:
                        lines = fh.read().splitlines()
                    for line in lines:
                        key, _, value = line.partition("=")
                        if key.strip() == "home" and value.strip():
                            home_bin = os.path.realpath(value.strip())
                            found.append(os.path.dirname(home_bin) if home_bin.endswith("/bin") else home_bin)
    return list(dict.fromkeys(found))


@dataclass(frozen=True)
class Policy:
    """How one untrusted program is contained.

    - ``limits``: time, CPU, memory, file size, processes, output (:class:`Limits`).
    - ``network``: keep the network (default: own network namespace, loopback down).
    - ``filesystem``: private, read-only view with hidden trees and private temp dirs (needs root
      and a mount namespace); ``False`` only for trusted tools that must write elsewhere.
    - ``hide``: trees covered by an empty tmpfs; ``None`` = :data:`DEFAULT_HIDDEN` + veriforge's
      home (store, caches, secret key).
    - ``expose``: paths bound back read-only inside hidden trees (the Python installation is
      always added for Python programs; callers add the executable and inputs they lend).
    - ``writable``: paths besides the work directory the program may write (rarely needed).
    - ``tmpfs_mb``: size of each private temp dir (``/tmp``, ``/var/tmp``, ``/dev/shm``).
    - ``max_open_files``: ``RLIMIT_NOFILE``.
    - ``strict``: refuse to run unless every layer in :data:`LAYERS` is in force.
    - ``drop_user``: run under a fresh unprivileged uid when we are root (always, for candidates).
    """

    limits: Limits = field(default_factory=Limits)
    network: bool = False
    filesystem: bool = True
    hide: tuple[str, ...] | None = None
    expose: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()
    tmpfs_mb: int = 256
    max_open_files: int | None = 256
    strict: bool = field(default_factory=strict_default)
    drop_user: bool = True

    @classmethod
    def from_settings(cls, settings: Any, **overrides: Any) -> Policy:
        """The configured candidate policy (``settings.sandbox``), with ``overrides`` applied."""
        section = getattr(settings, "sandbox", settings)
        values: dict[str, Any] = {"limits": Limits.from_settings(section)}
        for name in ("network", "strict", "max_open_files"):
            if hasattr(section, name):
                values[name] = getattr(section, name)
        values["strict"] = values.get("strict", False) or strict_default()
        values.update(overrides)
        return cls(**values)

    def replace(self, **changes: Any) -> Policy:
        return dataclasses.replace(self, **changes)

    def hidden_trees(self) -> list[str]:
        base = list(DEFAULT_HIDDEN if self.hide is None else self.hide)
        if self.hide is None:
            home = _veriforge_home()
            base += [home, os.path.realpath(home)]
        out: list[str] = []
        for p in base:
            p = os.path.abspath(p)
            if p not in out and p != "/":
                out.append(p)
        return out

    def exposed_paths(self, *, python: bool) -> list[str]:
        paths = [os.path.abspath(p) for p in self.expose]
        if python:
            paths += interpreter_paths()
        out: list[str] = []
        for p in paths:
            if p not in out:
                out.append(p)
        return out

    def rlimits(self, nproc: int | None) -> dict[str, tuple[int, int]]:
        out = self.limits.rlimits(nproc=nproc)
        if self.max_open_files:
            out["nofile"] = (int(self.max_open_files), int(self.max_open_files))
        return out

    def missing_layers(self, isolation: dict[str, Any]) -> list[str]:
        """The layers of :data:`LAYERS` that ``isolation`` (a run's record) lacks, with reasons."""
        missing = []
        if not isolation.get("dropped_root") or isolation.get("read_all_files"):
            missing.append("user: " + (isolation.get("user_detail") or "not running under an unprivileged uid"))
        if not isolation.get("filesystem"):
            missing.append("filesystem: " + (isolation.get("filesystem_detail") or "no private filesystem view"))
        if not self.network and not isolation.get("network"):
            missing.append("network: " + (isolation.get("network_detail") or "not isolated"))
        if isolation.get("process_cleanup") in (None, "none"):
            missing.append("process_cleanup: no PID namespace, per-uid kill or subreaper")
        return missing

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["limits"] = self.limits.to_dict()
        return data
