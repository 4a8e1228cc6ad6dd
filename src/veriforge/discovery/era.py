"""Stage 3a' -- resolve a task's dependencies *as of the repository's era*.

Research code is written against the libraries of its time; installing today's newest releases is
the main reason gold runs of older repositories fail (``np.float``, removed matplotlib/keras APIs,
pandas dtype strictness). So each environment is resolved with packages released *before* a cut-off
date derived from git (:func:`era_of`: the last commit touching the script, else the repository's
last commit), and only relaxed where that is impossible:

* :func:`select_release` picks, for one distribution, the newest release uploaded before the date
  that this interpreter can install (``Requires-Python`` satisfied *and* a compatible wheel, or an
  sdist-only release, which is how pure-Python packages of the era shipped). Old numpy has no wheels
  for Python 3.11, so "newest before the date" alone would ask pip to compile numpy 1.14 from source;
  when nothing before the date installs here, the *first* release after it that does is used and the
  relaxation is recorded with its reason.
* :func:`era_constraints` turns the selections into ``name<=version`` constraints (pip's ``-c``), so
  the repository's own specifiers still apply and pip may still go lower when a pin asks for it.

Upload times come from a :class:`PackageIndex`: :class:`PyPIIndex` (the PyPI JSON API, cached on
disk) for real builds, :class:`FindLinksIndex` (file modification times of a local wheel directory)
for offline builds and tests -- the same selection logic runs against both.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Protocol

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag, sys_tags
from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from veriforge.discovery.errors import EnvironmentBuildError

__all__ = [
    "Era",
    "EraPin",
    "FindLinksIndex",
    "PackageIndex",
    "PyPIIndex",
    "Release",
    "era_constraints",
    "era_of",
    "parse_era",
    "select_release",
]

PYPI_JSON = "https://pypi.org/pypi/{name}/json"
INDEX_CACHE_TTL_S = 24 * 3600


@dataclass(frozen=True)
class Era:
    """The cut-off date of a task's environment and where it came from (recorded in task.json)."""

    date: datetime
    source: str  # "git log -- <script>", "git HEAD", "configured", ...
    commit: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        return {"date": self.date.isoformat(), "source": self.source, "commit": self.commit}


def parse_era(text: str) -> datetime:
    """An ISO date or date-time as an aware UTC datetime (a bare date means the end of that day)."""
    try:
        if len(text) == 10:
            d = date.fromisoformat(text)
            return datetime(d.year, d.month, d.day, 23, 59, 59, tzinfo=UTC)
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise EnvironmentBuildError(f"not an ISO date: {text!r}") from exc
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _git(root: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def era_of(repo_root: str | Path, rel_path: str | None = None) -> Era | None:
    """The date of the last commit touching ``rel_path`` (else the repository's HEAD commit).

    ``None`` outside git: file modification times of a checkout are the checkout's, not the code's,
    so they say nothing about the era. In a *shallow* clone the history before the cut is missing
    and every file looks last touched by the oldest commit present; the HEAD date is then used and
    the source says so (an upper bound: the code is at most that new).
    """
    root = Path(repo_root)
    if _git(root, "rev-parse", "--is-inside-work-tree") != "true":
        return None
    shallow = _git(root, "rev-parse", "--is-shallow-repository") == "true"
    if rel_path and not shallow:
        out = _git(root, "log", "-1", "--format=%H %cI", "--", rel_path)
        if out:
            commit, stamp = out.split(" ", 1)
            return Era(parse_era(stamp), f"git log -- {rel_path}", commit)
    out = _git(root, "log", "-1", "--format=%H %cI")
    if not out:
        return None
    commit, stamp = out.split(" ", 1)
    return Era(parse_era(stamp), "git HEAD (shallow clone: upper bound)" if shallow else "git HEAD", commit)


@dataclass(frozen=True)
class Release:
    """One released version of a distribution, as far as the era selection needs to know it."""

    version: str
    uploaded: datetime  # earliest upload time of its files
    requires_python: str | None = None
    files: tuple[str, ...] = ()  # file names (wheels and sdists)
    yanked: bool = False


class PackageIndex(Protocol):
    """Where release dates come from."""

    def releases(self, name: str) -> list[Release]:
        """Every release of ``name`` (canonical name); empty when the index does not know it."""
        ...


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


class PyPIIndex:
    """Release dates from the PyPI JSON API (``/pypi/<name>/json``), cached per name on disk for a day."""

    def __init__(self, cache: Path | None = None, url: str = PYPI_JSON, timeout_s: float = 30.0) -> None:
        from veriforge.core.paths import cache_dir

        self.cache = cache or cache_dir("pypi-json")
        self.url, self.timeout_s = url, timeout_s
        self._mem: dict[str, list[Release]] = {}

    def releases(self, name: str) -> list[Release]:
        name = _canonical(name)
        if name in self._mem:
            return self._mem[name]
        path = self.cache / f"{name}.json"
        data: dict | None = None
        if path.is_file() and time.time() - path.stat().st_mtime < INDEX_CACHE_TTL_S:
            data = json.loads(path.read_text())
        if data is None:
            import httpx

            try:
                resp = httpx.get(self.url.format(name=name), timeout=self.timeout_s, follow_redirects=True)
            except httpx.HTTPError as exc:
                raise EnvironmentBuildError(f"package index unreachable for {name}: {exc}") from exc
            if resp.status_code == 404:
                self._mem[name] = []
                return []
            if resp.status_code != 200:
                raise EnvironmentBuildError(f"package index answered {resp.status_code} for {name}")
            data = {"releases": resp.json().get("releases", {})}
            self.cache.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data))
        out: list[Release] = []
        for version, files in data.get("releases", {}).items():
            if not files:
                continue
            stamps = [parse_era(f["upload_time_iso_8601"]) for f in files if f.get("upload_time_iso_8601")]
            if not stamps:
                continue
            out.append(
                Release(
                    version=version,
                    uploaded=min(stamps),
                    requires_python=next((f["requires_python"] for f in files if f.get("requires_python")), None),
                    files=tuple(f["filename"] for f in files),
                    yanked=all(f.get("yanked") for f in files),
                )
            )
        self._mem[name] = out
        return out


class FindLinksIndex:
    """Releases of a local wheel/sdist directory; a file's modification time stands for its upload time."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def releases(self, name: str) -> list[Release]:
        name = _canonical(name)
        by_version: dict[str, list[Path]] = {}
        for path in self.folder.iterdir() if self.folder.is_dir() else []:
            try:
                if path.name.endswith(".whl"):
                    dist, ver, _b, _t = parse_wheel_filename(path.name)
                else:
                    dist, ver = parse_sdist_filename(path.name)
            except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
                continue
            if _canonical(str(dist)) == name:
                by_version.setdefault(str(ver), []).append(path)
        return [
            Release(
                version=v,
                uploaded=datetime.fromtimestamp(min(p.stat().st_mtime for p in ps), tz=UTC),
                files=tuple(p.name for p in ps),
            )
            for v, ps in by_version.items()
        ]


def _binary(releases: list[Release]) -> bool:
    """Does the package ship platform wheels (native code)? Then an sdist means compiling it."""
    return any(f.endswith(".whl") and not f.endswith("-none-any.whl") for r in releases for f in r.files)


def _installable(rel: Release, python: Version, tags: set[Tag], binary: bool = False) -> bool:
    """Can this interpreter install ``rel`` without compiling native code?

    A release with only an sdist counts for pure-Python packages (how they shipped in 2015) but not for
    a ``binary`` one: numpy 1.5 is sdist-only too, and "installable" must not mean "compile 2010's numpy".
    """
    if rel.requires_python:
        try:
            if python not in SpecifierSet(rel.requires_python):
                return False
        except InvalidSpecifier:
            pass  # malformed metadata of an old release: judge by its files
    wheels = [f for f in rel.files if f.endswith(".whl")]
    if not wheels:
        return not binary and any(f.endswith((".tar.gz", ".zip", ".tar.bz2")) for f in rel.files)
    for w in wheels:
        try:
            if tags & set(parse_wheel_filename(w)[3]):
                return True
        except (InvalidWheelFilename, InvalidVersion):
            continue
    return False


@dataclass
class EraPin:
    """The era selection for one distribution."""

    name: str
    version: str | None  # the cap (``name<=version``); None: no release fits at all
    relaxed: str | None = None  # why the era cut could not hold for this one
    binary: bool = False  # ships platform wheels: an sdist of it means compiling (pip --only-binary)
    uploaded: datetime | None = None  # upload date of the capping release
    cutoff: datetime | None = None  # the cut-off this pin was selected under (later than the era when moved)

    def to_dict(self) -> dict[str, str | bool | None]:
        return {"name": self.name, "version": self.version, "relaxed": self.relaxed, "binary": self.binary}


def select_release(
    name: str,
    releases: list[Release],
    cutoff: datetime,
    *,
    specifier: str = "",
    python: str | None = None,
    tags: set[Tag] | None = None,
) -> EraPin:
    """Newest release of ``name`` uploaded before ``cutoff`` that installs here (and meets ``specifier``).

    Falls back to the *earliest* installable release after the cut (the closest to the era), with the
    reason recorded; yanked releases and pre-releases are skipped unless nothing else exists.
    """
    py = Version(python or ".".join(map(str, sys.version_info[:3])))
    tags = tags if tags is not None else set(sys_tags())
    try:
        spec = SpecifierSet(specifier)
    except InvalidSpecifier:
        spec = SpecifierSet()
    usable: list[tuple[Version, Release]] = []
    for rel in releases:
        try:
            v = Version(rel.version)
        except InvalidVersion:
            continue
        if not rel.yanked and spec.contains(v, prereleases=True):
            usable.append((v, rel))
    binary = _binary(releases)
    if not usable:
        why = "no release on the index matches" + (f" {specifier}" if specifier else "")
        return EraPin(name, None, why, binary)
    finals = [(v, r) for v, r in usable if not v.is_prerelease] or usable
    installable = [(v, r) for v, r in finals if _installable(r, py, tags, binary)]
    before = [(v, r) for v, r in installable if r.uploaded <= cutoff]
    if before:
        v, rel = max(before, key=lambda vr: vr[0])
        return EraPin(name, str(v), binary=binary, uploaded=rel.uploaded, cutoff=cutoff)
    day = cutoff.date().isoformat()
    if not installable:
        return EraPin(name, None, f"no release installs on Python {py} (no compatible wheel)", binary)
    first, first_rel = min(installable, key=lambda vr: vr[1].uploaded)
    old = [v for v, r in finals if r.uploaded <= cutoff]
    why = (
        f"no release before {day} installs on Python {py} (newest then: {max(old)})"
        if old
        else f"first released after {day}"
    )
    return EraPin(name, str(first), why, binary, uploaded=first_rel.uploaded, cutoff=cutoff)


@dataclass
class EraResolution:
    """Constraints for one environment plus what was relaxed."""

    era: Era | None
    pins: dict[str, EraPin] = field(default_factory=dict)

    def constraints(self) -> list[str]:
        """``name<=version`` lines for pip's ``-c`` (a relaxed pin keeps the closest installable cap)."""
        return sorted(f"{p.name}<={p.version}" for p in self.pins.values() if p.version)

    def only_binary(self) -> list[str]:
        """Packages pip must not build from source: backtracking into 2019's pandas sdists while
        looking for a compatible set would compile (or fail to compile) each one for minutes."""
        return sorted(p.name for p in self.pins.values() if p.binary)

    def effective_cutoff(self) -> datetime | None:
        """The latest upload date this interpreter forced on the environment (numpy 1.23.2 for a 2019
        repository on Python 3.11): packages conflicting with the era caps move up to it, not to today."""
        forced = [p.uploaded for p in self.pins.values() if p.relaxed and p.uploaded and p.version]
        return max(forced) if forced and self.era and max(forced) > self.era.date else None

    def relax(self, name: str, why: str, index: PackageIndex | None = None) -> bool:
        """Loosen the cap of ``name`` (pip found no way to honour it); False when there was none.

        With ``index``, a cap below :meth:`effective_cutoff` is first moved up to the newest release
        before that date (the packages of the forced releases' time); only then is it dropped.
        """
        name = _canonical(name)
        pin = self.pins.get(name)
        if pin is None or pin.version is None:
            return False
        later = self.effective_cutoff()
        if index is not None and later is not None and (pin.cutoff is None or pin.cutoff < later):
            moved = select_release(name, index.releases(name), later)
            if moved.version and moved.version != pin.version:
                day = later.date().isoformat()
                moved.relaxed = f"{why}; moved to {day}, the newest release this Python forced"
                self.pins[name] = moved
                return True
        pin.version, pin.relaxed = None, why
        return True

    def relaxed(self) -> dict[str, str]:
        return {p.name: p.relaxed for p in self.pins.values() if p.relaxed}

    def to_dict(self) -> dict[str, object]:
        return {
            "era": self.era.to_dict() if self.era else None,
            "constraints": self.constraints(),
            "relaxed": self.relaxed(),
        }


def era_constraints(
    names: list[str],
    index: PackageIndex,
    era: Era,
    *,
    specifiers: dict[str, str] | None = None,
    known: EraResolution | None = None,
) -> EraResolution:
    """Era pins for ``names`` (canonical distribution names), added to ``known`` when given."""
    res = known or EraResolution(era)
    specifiers = specifiers or {}
    for name in names:
        name = _canonical(name)
        if name in res.pins:
            continue
        res.pins[name] = select_release(name, index.releases(name), era.date, specifier=specifiers.get(name, ""))
    return res
