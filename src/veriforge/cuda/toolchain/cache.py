"""A content-addressed on-disk cache for compiled artefacts and their parsed resources.

Search loops compile the same candidate many times (and across processes), and each nvcc run
costs about a second, so the artefact, the resources and the log are kept under
``cache_dir("nvcc")`` keyed by everything that can change the output: source hash, included
user headers, flags, defines, architecture, output kind and compiler version.

Concurrency: every file is written to a temporary name in the same folder and renamed into
place (atomic on POSIX), the artefact before its metadata record. Artefacts are named by their
own hash, so the record (the single commit point) always names a complete file, whichever of
two racing processes renames last. The record also carries the artefact's hash, so a file
damaged by something else is a miss rather than a wrong answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from veriforge.core.paths import cache_dir

#: Bump when the metadata layout changes, so old entries stop matching.
SCHEMA = 1


def cache_key(parts: dict[str, Any]) -> str:
    """A stable hex digest of a JSON-able description of a compile request."""
    canonical = json.dumps({"schema": SCHEMA, **parts}, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class ArtifactCache:
    """Per key: a JSON record (the commit point) naming an immutable, content-addressed artefact file.

    Layout: ``<root>/<key[:2]>/<key>.json`` and ``<root>/<key[:2]>/<key>-<sha256[:16]><suffix>``.
    Because the artefact's name contains its own hash, racing writers never overwrite each
    other's artefact, and whichever record wins the final rename points at a complete file.
    """

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else cache_dir("nvcc")

    def _meta_path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> tuple[bytes, dict[str, Any], Path] | None:
        """The stored artefact, its metadata and its path; None on a miss (or a damaged entry)."""
        meta_path = self._meta_path(key)
        try:
            meta = json.loads(meta_path.read_text())
            blob = meta_path.parent / meta["artifact_file"]
            data = blob.read_bytes()
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if hashlib.sha256(data).hexdigest() != meta.get("artifact_sha256"):
            return None
        return data, meta, blob

    def put(self, key: str, artifact: bytes, meta: dict[str, Any], suffix: str = ".bin") -> Path:
        """Store atomically (artefact first, then the record); returns the artefact's path."""
        digest = hashlib.sha256(artifact).hexdigest()
        meta_path = self._meta_path(key)
        meta_path.parent.mkdir(parents=True, exist_ok=True)
        blob = meta_path.parent / f"{key}-{digest[:16]}{suffix}"
        if not blob.is_file() or blob.stat().st_size != len(artifact):
            _atomic_write(blob, artifact)
        record = {**meta, "artifact_file": blob.name, "artifact_sha256": digest, "artifact_size": len(artifact)}
        _atomic_write(meta_path, json.dumps(record, sort_keys=True).encode())
        return blob
