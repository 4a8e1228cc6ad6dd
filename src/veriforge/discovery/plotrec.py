"""Install the matplotlib plot-data recorder into a program run (gold run and agent runs alike).

The recorder itself is :mod:`veriforge.discovery.plotrec_site` (stdlib-only, copied into the run
folder as ``sitecustomize.py``); this module is the veriforge side: where the recording goes,
how a run is set up to make one, and how a planner reads it back. Both the gold program and the
agent's program must run with it, or the agent's figure could not be judged by its data.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from veriforge.discovery.plotrec_site import MANIFEST, PLOTDATA_DIR, ROOT_ENV

__all__ = [
    "MANIFEST",
    "PLOTDATA_DIR",
    "is_plotdata",
    "load_plotdata",
    "plotdata_path",
    "recorder_env",
    "recorder_manifest",
    "series_count",
]

_SITE = Path(__file__).with_name("plotrec_site.py")
_HOOK_DIR = ".veriforge_plotrec"


def recorder_env(work: Path, results: str = "pred_results") -> dict[str, str]:
    """Copy the recorder into ``work`` and return the environment variables that activate it.

    ``PYTHONPATH`` points at a folder holding only ``sitecustomize.py`` (so nothing else of the
    program's import resolution changes); ``VERIFORGE_PLOTDATA_ROOT`` is the results folder the
    sidecars go under. The folder is made world-readable: the sandbox may run as another user.
    """
    hook = Path(work) / _HOOK_DIR
    hook.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_SITE, hook / "sitecustomize.py")
    hook.chmod(0o755)
    (hook / "sitecustomize.py").chmod(0o644)
    return {"PYTHONPATH": str(hook), ROOT_ENV: str(Path(work) / results)}


def plotdata_path(results_dir: Path | str, rel: str) -> Path:
    """Where the recording of the figure ``rel`` (relative to the results folder) lives."""
    return Path(results_dir) / PLOTDATA_DIR / f"{rel}.json"


def is_plotdata(rel: str) -> bool:
    """Whether a path relative to the results folder is recorder output (never a task output)."""
    return rel.replace("\\", "/").split("/", 1)[0] == PLOTDATA_DIR


def load_plotdata(results_dir: Path | str, rel: str) -> dict[str, Any] | None:
    """The recorded plot data of figure ``rel``, or ``None`` when none was recorded."""
    p = plotdata_path(results_dir, rel)
    if not p.is_file():
        return None
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def recorder_manifest(results_dir: Path | str) -> dict[str, Any] | None:
    """The recorder's list of ``savefig`` calls, or ``None`` when matplotlib never saved a figure."""
    p = Path(results_dir) / PLOTDATA_DIR / MANIFEST
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def series_count(data: dict[str, Any] | None) -> int:
    """Data-bearing series recorded over all axes (0: the figure's data cannot be judged)."""
    if not data:
        return 0
    return sum(len(ax.get("series") or []) for ax in data.get("axes") or [])
