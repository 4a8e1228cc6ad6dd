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

In ``install`` mode the requirement set is first *resolved* (``pip install --dry-run --report``
against this interpreter, :func:`resolve_pins`), under the repository's era when one is given
(:mod:`veriforge.discovery.era`: ``name<=version`` constraints of releases before the date, relaxed
per package where pip finds no way to honour them), then the exact pins are installed ``--no-deps``.
Environments are keyed by (mode, interpreter, *resolved pins*), so tasks whose requirements resolve
to the same lock share one venv, across builds too; a file lock makes concurrent builders wait for
each other. Each environment records its size on disk (``disk_bytes``) so a build can report the
disk cost per task. Failures raise :class:`EnvironmentBuildError` -- always an *infrastructure* failure.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from veriforge.core.hashing import content_hash
from veriforge.core.paths import cache_dir
from veriforge.discovery.errors import EnvironmentBuildError

if TYPE_CHECKING:
    from veriforge.discovery.era import Era, EraResolution, PackageIndex

__all__ = ["ENV_MODES", "Resolution", "TaskEnv", "build_environment", "dir_bytes", "env_python", "resolve_pins"]

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
    disk_bytes: int = 0  # size of the environment folder (shared by every task using it)
    era: dict[str, object] | None = None  # EraResolution.to_dict(): date, constraints, relaxed

    def to_dict(self) -> dict[str, object]:
        return {
            k: getattr(self, k)
            for k in (
                "python",
                "python_version",
                "mode",
                "env_dir",
                "installer",
                "cached",
                "seconds",
                "disk_bytes",
                "era",
            )
        } | {"locked": len(self.lock)}


def dir_bytes(path: str | Path) -> int:
    """Bytes used by the files under ``path`` (symlinks not followed; hard links counted once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            total += st.st_blocks * 512 if hasattr(st, "st_blocks") else st.st_size
    return total


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


def _sources(wheel_dir: str | None, offline: bool) -> list[str]:
    if offline:
        return ["--no-index", "--find-links", str(wheel_dir)]
    return ["--find-links", str(wheel_dir)] if wheel_dir else []


def _install(py: Path, pins: list[str], installer: str, wheel_dir: str | None, offline: bool) -> None:
    """Install the exact resolved ``pins`` (``--no-deps``: the resolution already chose every one)."""
    if not pins:
        return
    wheels = str(cache_dir("wheels"))
    source = _sources(wheel_dir, offline)
    if installer == "uv":
        cmd = ["uv", "pip", "install", "--python", str(py), "--no-deps", "--cache-dir", wheels, *source, *pins]
        if offline:
            cmd.insert(3, "--offline")
    else:
        cmd = [*_pip(py), "install", "--no-input", "--no-deps", "--cache-dir", wheels, *source, *pins]
    _run(cmd, INSTALL_TIMEOUT_S, "dependency install")


@dataclass
class Resolution:
    """What ``resolve_pins`` chose: exact pins plus the era record."""

    pins: list[str]  # "name==version", sorted
    era: EraResolution | None
    rounds: int


_NO_MATCH = re.compile(r"No matching distribution found for ([A-Za-z0-9][A-Za-z0-9._-]*)")
_USER_REQ = re.compile(r"The user requested \(constraint\) ([A-Za-z0-9][A-Za-z0-9._-]*)")
_COLLECTING = re.compile(r"^Collecting ([A-Za-z0-9][A-Za-z0-9._-]*)", re.M)
_USER_PIN = re.compile(r"The user requested ([A-Za-z0-9][A-Za-z0-9._-]*)[=<>!~]")
MAX_RESOLVE_ROUNDS = 12
RESOLVE_TIMEOUT_S = 600  # one pip resolution


def _dry_run(
    specs: list[str], constraints: list[str], wheel_dir: str | None, offline: bool, only_binary: list[str] | None = None
) -> tuple[list[str] | None, str]:
    """``(pins, "")`` from ``pip install --dry-run --report`` for this interpreter, or ``(None, stderr)``."""
    import importlib.util

    if importlib.util.find_spec("pip") is None:
        raise EnvironmentBuildError("install mode resolves with pip: install pip into veriforge's interpreter")
    with tempfile.TemporaryDirectory(prefix="veriforge-resolve-") as tmp:
        cfile, report = Path(tmp) / "constraints.txt", Path(tmp) / "report.json"
        cfile.write_text("\n".join(constraints) + "\n")
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "--disable-pip-version-check",
            "install",
            "--no-input",
            "--dry-run",
            "--ignore-installed",
            "--prefer-binary",
            *(["--only-binary", ",".join(only_binary)] if only_binary else []),
            "--report",
            str(report),
            "--cache-dir",
            str(cache_dir("wheels")),
            "-c",
            str(cfile),
            *_sources(wheel_dir, offline),
            *specs,
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise EnvironmentBuildError(f"dependency resolution could not run: {exc}") from exc
        if proc.returncode != 0 or not report.is_file():
            return None, f"{proc.stdout}\n{proc.stderr}"  # "Collecting X" lines are on stdout
        data = json.loads(report.read_text())
    pins = {
        f"{item['metadata']['name']}=={item['metadata']['version']}" for item in data.get("install", [])
    }
    return sorted(pins, key=str.lower), ""


def _blame(stderr: str, era_res: EraResolution, direct: set[str]) -> list[tuple[str, str]]:
    """Which capped distributions a failed resolution points at, each with the reason to relax it."""
    from veriforge.discovery.deps import canonical

    capped = {n for n, p in era_res.pins.items() if p.version}
    hits = [(canonical(n), "no matching distribution under the era cap") for n in _NO_MATCH.findall(stderr)]
    hits += [(canonical(n), "conflicts with another requirement under the era cap") for n in _USER_REQ.findall(stderr)]
    if not hits and ("metadata-generation-failed" in stderr or "subprocess-exited-with-error" in stderr):
        last = _COLLECTING.findall(stderr)
        if last:
            hits.append((canonical(last[-1]), "the era release does not build on this interpreter"))
    hits = [(n, why) for n, why in hits if n in capped]
    if hits:
        return hits
    transitive = sorted(capped - direct)  # a conflict pip did not name: loosen dependencies first
    why = "resolution failed under the era cut"
    return [(n, why) for n in transitive] or [(n, why) for n in sorted(capped)]


def _spec_name(spec: str) -> str:
    from veriforge.discovery.deps import canonical

    m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
    return canonical(m.group(1)) if m else ""


def resolve_pins(
    specs: list[str],
    dists: list[str],
    *,
    era: Era | None = None,
    index: PackageIndex | None = None,
    wheel_dir: str | None = None,
    offline: bool = False,
) -> Resolution:
    """Resolve ``specs`` to exact pins for this interpreter, under ``era`` when given.

    Every distribution of the resolution (the dependencies too, not just ``dists``) gets an era cap;
    caps are added until the resolution is closed under them, and relaxed one reason at a time when
    pip cannot honour them (recorded in :attr:`Resolution.era`).
    """
    from veriforge.discovery.deps import canonical
    from veriforge.discovery.era import era_constraints

    era_res: EraResolution | None = None
    specs = list(specs)
    specifiers: dict[str, str] = {}
    for spec in specs:
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(.*)$", spec)
        if m:
            specifiers[canonical(m.group(1))] = m.group(2)
    if era is not None:
        if index is None:
            from veriforge.discovery.era import FindLinksIndex, PyPIIndex

            index = FindLinksIndex(wheel_dir) if offline and wheel_dir else PyPIIndex()
        era_res = era_constraints(dists, index, era, specifiers=specifiers)
        for name, pin in list(era_res.pins.items()):
            if pin.version is None and specifiers.get(name):
                # the repository's own pin cannot install on this interpreter (numpy==1.14 on 3.11):
                # drop the pin and take the era's closest release instead
                why = f"repository pin {name}{specifiers[name]} does not install here ({pin.relaxed})"
                specs = [name if _spec_name(sp) == name else sp for sp in specs]
                specifiers[name] = ""
                del era_res.pins[name]
                era_constraints([name], index, era, known=era_res)
                later = era_res.pins[name].relaxed
                era_res.pins[name].relaxed = why + (f"; {later}" if later else "")
    direct = {canonical(d) for d in dists}
    last_err = ""
    for rounds in range(1, MAX_RESOLVE_ROUNDS + 1):
        pins, err = _dry_run(
            specs,
            era_res.constraints() if era_res else [],
            wheel_dir,
            offline,
            era_res.only_binary() if era_res else None,
        )
        if pins is None:
            last_err = err
            if era_res is None or index is None:
                break
            named = {canonical(n) for n in _NO_MATCH.findall(err) + _COLLECTING.findall(err)[-1:]}
            uncapped = sorted(named - set(era_res.pins))
            if uncapped:  # pip wandered into a dependency the era does not cover yet: cap it, retry
                era_constraints(uncapped, index, era_res.era, specifiers=specifiers, known=era_res)  # type: ignore[arg-type]
                if any(era_res.pins[n].version for n in uncapped):
                    continue
            blamed = _blame(err, era_res, direct)
            if any(era_res.relax(n, why, index) for n, why in blamed):
                continue
            # the era caps are exhausted: the repository's own pins conflict on this interpreter
            pinned = [n for n in _USER_PIN.findall(err) if specifiers.get(canonical(n))] or [
                n for n, sp in specifiers.items() if sp
            ]
            if not pinned:
                break
            for n in map(canonical, pinned):
                why = f"repository pin {n}{specifiers[n]} conflicts with the other requirements on this interpreter"
                specs = [n if _spec_name(sp) == n else sp for sp in specs]
                specifiers[n] = ""
                era_res.pins.pop(n, None)  # re-select without the pin: newest of the era that installs
                era_constraints([n], index, era_res.era, known=era_res)  # type: ignore[arg-type]
                later = era_res.pins[n].relaxed
                era_res.pins[n].relaxed = why + (f"; {later}" if later else "")
            continue
        if era_res is None or index is None:
            return Resolution(pins, None, rounds)
        names = [canonical(p.split("==", 1)[0]) for p in pins]
        new = [n for n in names if n not in era_res.pins]
        if not new:
            return Resolution(pins, era_res, rounds)
        era_constraints(new, index, era_res.era, specifiers=specifiers, known=era_res)  # type: ignore[arg-type]
        from packaging.version import Version

        chosen = {canonical(a): Version(b) for a, b in (p.split("==", 1) for p in pins)}
        lower = [n for n in new if era_res.pins[n].version and Version(str(era_res.pins[n].version)) < chosen[n]]
        if not lower:
            return Resolution(pins, era_res, rounds)
    tail = "\n".join(last_err.strip().splitlines()[-15:])
    raise EnvironmentBuildError(f"dependency resolution failed:\n{tail}")


def build_environment(
    specs: list[str],
    dists: list[str],
    imports: list[str],
    *,
    mode: str = "install",
    wheel_dir: str | Path | None = None,
    offline: bool = False,
    root: Path | None = None,
    era: Era | None = None,
    index: PackageIndex | None = None,
) -> TaskEnv:
    """Create (or reuse) the environment for ``specs`` and lock it.

    ``dists`` are the canonical distribution names (for the reuse-mode lock and the era caps);
    ``imports`` are checked to import in the finished environment, so a missing or broken dependency
    is caught here, as an infrastructure failure, rather than in the gold run. ``era`` (install mode)
    resolves with releases from before that date; ``index`` says where release dates come from
    (default: PyPI, or the wheel directory when offline).
    """
    if mode not in ENV_MODES:
        raise EnvironmentBuildError(f"unknown environment mode {mode!r} (choose from {', '.join(ENV_MODES)})")
    if offline and not wheel_dir and mode == "install":
        raise EnvironmentBuildError("offline installs need a local wheel directory (--wheel-dir)")
    installer = "uv" if mode == "install" and shutil.which("uv") else "pip"
    t0 = time.perf_counter()
    resolution: Resolution | None = None
    if mode == "install":
        resolution = resolve_pins(
            specs, dists, era=era, index=index, wheel_dir=str(wheel_dir) if wheel_dir else None, offline=offline
        )
    era_record = resolution.era.to_dict() if resolution and resolution.era else None
    key = content_hash(
        json.dumps(
            {
                "mode": mode,
                "python": sys.version,
                "exe": sys.executable,
                # install: the resolved lock (tasks with different specifiers but the same resolution
                # share one venv); reuse: the specifiers (nothing is resolved)
                "pins": resolution.pins if resolution else sorted(specs),
                "installer": installer,
            },
            sort_keys=True,
        )
    )[:16]
    root = root or cache_dir("d3gym-envs")
    root.mkdir(parents=True, exist_ok=True)
    env_dir = root / f"{mode}-{key}"
    ready = env_dir / "veriforge-env.json"
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
                disk_bytes=int(data.get("disk_bytes", 0)),
                era=era_record,
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
                assert resolution is not None
                _install(py, resolution.pins, installer, str(wheel_dir) if wheel_dir else None, offline)
            bad = _check_imports(py, imports)
            if bad:
                detail = "; ".join(f"{m}: {e}" for m, e in sorted(bad.items()))
                raise EnvironmentBuildError(f"dependencies do not import in the task environment: {detail}")
            lock = _closure_lock(py, dists) if mode == "reuse" else _freeze(py, installer)
            version = _python_version(py)
        except BaseException:
            shutil.rmtree(env_dir, ignore_errors=True)
            raise
        size = dir_bytes(env_dir)
        ready.write_text(
            json.dumps(
                {"lock": lock, "python_version": version, "specs": specs, "disk_bytes": size, "era": era_record},
                indent=1,
            )
        )
        return TaskEnv(
            python=str(py),
            lock=lock,
            python_version=version,
            mode=mode,
            env_dir=str(env_dir),
            installer=installer,
            cached=False,
            seconds=time.perf_counter() - t0,
            disk_bytes=size,
            era=era_record,
        )
