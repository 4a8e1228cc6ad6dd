"""Stage 3b -- create a task's Python environment and lock the exact versions in it.

Two modes:

- ``install`` (real builds): a fresh virtualenv per distinct requirement set, created with ``uv`` when
  it is on PATH, else ``python -m venv`` + pip; downloads go through a shared wheel cache
  (``$VERIFORGE_HOME/cache/wheels``). ``offline=True`` installs only from a local wheel directory
  (``--no-index --find-links DIR``). The lock is ``pip freeze`` of the new environment.
- ``reuse`` (tests, development, air-gapped machines that already have the packages): a virtualenv
  without pip whose ``site-packages`` holds a ``.pth`` file pointing at the *current* interpreter's
  site-packages. Nothing is installed and nothing touches the network; every import the program needs
  must already work, and the lock records the installed versions of the needed distributions and
  their dependencies.

Environments are keyed by (mode, interpreter, requirement specifiers, wheel dir), so tasks with the
same needs share one, across builds too; a file lock makes concurrent builders wait for each other.
Failures raise :class:`EnvironmentBuildError` -- always an *infrastructure* failure.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

from veriforge.core.hashing import content_hash
from veriforge.core.paths import cache_dir
from veriforge.discovery.errors import EnvironmentBuildError

__all__ = ["ENV_MODES", "TaskEnv", "build_environment", "env_python"]

ENV_MODES = ("install", "reuse")
INSTALL_TIMEOUT_S = 1800

_CLOSURE = r"""
import json, re, sys
from importlib.metadata import PackageNotFoundError, distribution
todo, seen = list(sys.argv[1:]), {}
while todo:
    name = todo.pop()
    key = re.sub(r"[-_.]+", "-", name).lower()
    if key in seen:
        continue
    try:
        d = distribution(name)
    except PackageNotFoundError:
        seen[key] = None
        continue
    seen[key] = [d.metadata["Name"], d.version]
    for req in d.requires or []:
        if "extra" in req.split(";", 1)[-1] and ";" in req:
            continue
        m = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", req)
        if m:
            todo.append(m.group(0))
print(json.dumps(seen))
"""

_IMPORT_CHECK = r"""
import importlib, json, sys
bad = {}
for mod in sys.argv[1:]:
    try:
        importlib.import_module(mod)
    except BaseException as exc:  # noqa: BLE001 - report every failure kind
        bad[mod] = f"{type(exc).__name__}: {exc}"
print(json.dumps(bad))
"""


@dataclass
class TaskEnv:
    """A ready environment."""

    python: str  # interpreter to run the task's programs with
    lock: list[str]  # "name==version" lines
    python_version: str
    mode: str
    env_dir: str
    installer: str
    cached: bool  # True when an existing environment was reused
    seconds: float

    def to_dict(self) -> dict[str, object]:
        return {
            k: getattr(self, k)
            for k in ("python", "python_version", "mode", "env_dir", "installer", "cached", "seconds")
        } | {"locked": len(self.lock)}


def env_python(env_dir: Path) -> Path:
    return env_dir / "bin" / "python"


def _run(cmd: list[str], timeout: float, what: str) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise EnvironmentBuildError(f"{what} timed out after {timeout:.0f}s") from exc
    except OSError as exc:
        raise EnvironmentBuildError(f"{what} could not start: {exc}") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
        raise EnvironmentBuildError(f"{what} failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout


def _parent_site_dirs() -> list[str]:
    dirs = list(
        dict.fromkeys(
            [*site.getsitepackages(), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
        )
    )
    return [d for d in dirs if os.path.isdir(d)]


def _create_venv(env_dir: Path, with_pip: bool, installer: str) -> None:
    if installer == "uv":
        _run(["uv", "venv", "--quiet", "--python", sys.executable, str(env_dir)], 600, "uv venv")
        return
    cmd = [sys.executable, "-m", "venv", str(env_dir)]
    if not with_pip:
        cmd.insert(3, "--without-pip")
    _run(cmd, 600, "python -m venv")


def _python_version(py: Path) -> str:
    return _run([str(py), "-c", "import platform; print(platform.python_version())"], 60, "python").strip()


def _check_imports(py: Path, imports: list[str]) -> dict[str, str]:
    if not imports:
        return {}
    out = _run([str(py), "-c", _IMPORT_CHECK, *imports], 300, "import check")
    return json.loads(out.strip().splitlines()[-1])


def _closure_lock(py: Path, dists: list[str]) -> list[str]:
    out = _run([str(py), "-c", _CLOSURE, *dists], 120, "dependency closure")
    seen = json.loads(out.strip().splitlines()[-1])
    missing = [d for d in dists if seen.get(d) is None]
    if missing:
        raise EnvironmentBuildError(f"not installed in the reused interpreter: {', '.join(missing)}")
    return sorted({f"{v[0]}=={v[1]}" for v in seen.values() if v}, key=str.lower)


def _pip(py: Path) -> list[str]:
    """pip driving the task environment: veriforge's own pip with ``--python`` (no ensurepip in every
    new venv, which is the slow part of creating one), else the environment's own pip."""
    import importlib.util

    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip", "--python", str(py), "--disable-pip-version-check"]
    return [str(py), "-m", "pip", "--disable-pip-version-check"]


def _freeze(py: Path, installer: str) -> list[str]:
    if installer == "uv":
        out = _run(["uv", "pip", "freeze", "--python", str(py)], 120, "uv pip freeze")
    else:
        out = _run([*_pip(py), "freeze", "--all"], 120, "pip freeze")
    return sorted(
        (ln.strip() for ln in out.splitlines() if "==" in ln and not ln.startswith("#")), key=str.lower
    )


def _install(py: Path, specs: list[str], installer: str, wheel_dir: str | None, offline: bool) -> None:
    if not specs:
        return
    wheels = str(cache_dir("wheels"))
    source = (
        ["--no-index", "--find-links", str(wheel_dir)]
        if offline
        else (["--find-links", str(wheel_dir)] if wheel_dir else [])
    )
    if installer == "uv":
        cmd = ["uv", "pip", "install", "--python", str(py), "--cache-dir", wheels, *source, *specs]
        if offline:
            cmd.insert(3, "--offline")
    else:
        cmd = [
            *_pip(py),
            "install",
            "--no-input",
            "--cache-dir",
            wheels,
            *source,
            *specs,
        ]
    _run(cmd, INSTALL_TIMEOUT_S, "dependency install")


def build_environment(
    specs: list[str],
    dists: list[str],
    imports: list[str],
    *,
    mode: str = "install",
    wheel_dir: str | Path | None = None,
    offline: bool = False,
    root: Path | None = None,
) -> TaskEnv:
    """Create (or reuse) the environment for ``specs`` and lock it.

    ``dists`` are the canonical distribution names (for the reuse-mode lock); ``imports`` are checked
    to import in the finished environment, so a missing or broken dependency is caught here, as an
    infrastructure failure, rather than in the gold run.
    """
    if mode not in ENV_MODES:
        raise EnvironmentBuildError(f"unknown environment mode {mode!r} (choose from {', '.join(ENV_MODES)})")
    if offline and not wheel_dir and mode == "install":
        raise EnvironmentBuildError("offline installs need a local wheel directory (--wheel-dir)")
    installer = "uv" if mode == "install" and shutil.which("uv") else "pip"
    key = content_hash(
        json.dumps(
            {
                "mode": mode,
                "python": sys.version,
                "exe": sys.executable,
                "specs": sorted(specs),
                "wheel_dir": str(wheel_dir or ""),
                "offline": offline,
                "installer": installer,
            },
            sort_keys=True,
        )
    )[:16]
    root = root or cache_dir("d3gym-envs")
    root.mkdir(parents=True, exist_ok=True)
    env_dir = root / f"{mode}-{key}"
    ready = env_dir / "veriforge-env.json"
    t0 = time.perf_counter()
    with open(root / f"{mode}-{key}.lock", "w") as lockfile:
        fcntl.flock(lockfile, fcntl.LOCK_EX)
        if ready.is_file():
            data = json.loads(ready.read_text())
            return TaskEnv(
                python=str(env_python(env_dir)),
                lock=data["lock"],
                python_version=data["python_version"],
                mode=mode,
                env_dir=str(env_dir),
                installer=installer,
                cached=True,
                seconds=time.perf_counter() - t0,
            )
        shutil.rmtree(env_dir, ignore_errors=True)  # a half-built environment from a killed build
        try:
            import importlib.util

            own_pip = importlib.util.find_spec("pip") is None
            _create_venv(
                env_dir, with_pip=mode == "install" and installer == "pip" and own_pip, installer=installer
            )
            py = env_python(env_dir)
            if mode == "reuse":
                purelib = _run(
                    [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], 60, "python"
                ).strip()
                Path(purelib).mkdir(parents=True, exist_ok=True)
                (Path(purelib) / "_veriforge_parent_site.pth").write_text(
                    "\n".join(_parent_site_dirs()) + "\n"
                )
            else:
                _install(py, specs, installer, str(wheel_dir) if wheel_dir else None, offline)
            bad = _check_imports(py, imports)
            if bad:
                detail = "; ".join(f"{m}: {e}" for m, e in sorted(bad.items()))
                raise EnvironmentBuildError(f"dependencies do not import in the task environment: {detail}")
            lock = _closure_lock(py, dists) if mode == "reuse" else _freeze(py, installer)
            version = _python_version(py)
        except BaseException:
            shutil.rmtree(env_dir, ignore_errors=True)
            raise
        ready.write_text(json.dumps({"lock": lock, "python_version": version, "specs": specs}, indent=1))
        return TaskEnv(
            python=str(py),
            lock=lock,
            python_version=version,
            mode=mode,
            env_dir=str(env_dir),
            installer=installer,
            cached=False,
            seconds=time.perf_counter() - t0,
        )
