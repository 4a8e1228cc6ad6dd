"""Get the repository to mine: a local folder, or a git URL cloned into the cache.

URLs are cloned with ``--filter=blob:none`` (every commit and tree, file contents only for the checkout):
about as cheap as ``--depth 1``, but ``git log -- <script>`` still works, which the environment's era
(:func:`veriforge.discovery.era.era_of`) needs -- a shallow clone makes every file look last touched by
the newest commit. Servers without partial-clone support get ``--depth 1`` (the era then falls back to
the HEAD date, recorded as an upper bound).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from veriforge.core.hashing import content_hash
from veriforge.core.paths import cache_dir
from veriforge.discovery.errors import RepoFetchError

__all__ = ["RepoSource", "is_git_url", "open_repository"]

_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|git@[^:]+:)", re.I)


@dataclass
class RepoSource:
    path: Path
    name: str  # "owner/name" for URLs, the folder name for local paths
    origin: str  # what the user gave
    commit: str | None


def is_git_url(text: str) -> bool:
    return bool(_URL.match(text))


def _name_from_url(url: str) -> str:
    tail = re.split(r"[:/]", url.rstrip("/").removesuffix(".git"))
    parts = [p for p in tail if p]
    return "/".join(parts[-2:]) if len(parts) >= 2 else parts[-1]


def _head(path: Path) -> str | None:
    try:
        proc = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def open_repository(source: str | Path, *, refresh: bool = False) -> RepoSource:
    """A local path as is, or a blob-less clone of a URL into ``$VERIFORGE_HOME/cache/d3gym-repos``."""
    text = str(source)
    if not is_git_url(text):
        path = Path(text).expanduser().resolve()
        if not path.is_dir():
            raise RepoFetchError(f"repository {text!r} is not a folder (and not a git URL)")
        return RepoSource(path, path.name, text, _head(path))
    dest = cache_dir("d3gym-repos") / content_hash(text)[:16]
    if refresh or not (dest / ".git").exists():
        shutil.rmtree(dest, ignore_errors=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        for how in (["--filter=blob:none"], ["--depth", "1"]):
            try:
                proc = subprocess.run(
                    ["git", "clone", *how, "--quiet", text, str(dest)],
                    capture_output=True,
                    text=True,
                    timeout=900,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise RepoFetchError(f"git clone {text} failed: {exc}") from exc
            if proc.returncode == 0:
                break
            shutil.rmtree(dest, ignore_errors=True)
        if proc.returncode != 0:
            shutil.rmtree(dest, ignore_errors=True)
            raise RepoFetchError(f"git clone {text} failed: {proc.stderr.strip()[-500:]}")
    return RepoSource(dest, _name_from_url(text), text, _head(dest))
