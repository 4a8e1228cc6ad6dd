"""Install the plot-data recorder into a program run (gold run and agent runs alike).

The recorder itself is :mod:`veriforge.discovery.plotrec_site` (stdlib-only, copied into the run
folder as ``sitecustomize.py``; matplotlib's ``savefig`` and plotly's ``write_*`` writers, the
latter mapped by :mod:`veriforge.discovery.plotrec_plotly`, copied next to it); this module is
the veriforge side: where the recording goes,
how a run is set up to make one, and how a planner reads it back. Both the gold program and the
agent's program must run with it, or the agent's figure could not be judged by its data.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from veriforge.discovery.plotrec_site import MANIFEST, PLOTDATA_DIR, PLOTLY_COMPANION, ROOT_ENV

__all__ = [
    "MANIFEST",
    "PLOTDATA_DIR",
    "is_plotdata",
    "is_plotly",
    "load_plotdata",
    "plotdata_path",
    "recorder_env",
    "recorder_manifest",
    "series_count",
]

_SITE = Path(__file__).with_name("plotrec_site.py")
_PLOTLY = Path(__file__).with_name("plotrec_plotly.py")
_HOOK_DIR = ".veriforge_plotrec"


def recorder_env(work: Path, results: str = "pred_results") -> dict[str, str]:
    """Copy the recorder into ``work`` and return the environment variables that activate it.

    ``PYTHONPATH`` points at a folder holding only ``sitecustomize.py`` and the plotly half of the
    recorder under a name no program uses (``_veriforge_plotrec_plotly.py``), so nothing else of
    the program's import resolution changes; ``VERIFORGE_PLOTDATA_ROOT`` is the results folder the
    sidecars go under. The folder is made world-readable: the sandbox may run as another user.
    """
    hook = Path(work) / _HOOK_DIR
    hook.mkdir(parents=True, exist_ok=True)
    hook.chmod(0o755)
    for src, name in ((_SITE, "sitecustomize.py"), (_PLOTLY, f"{PLOTLY_COMPANION}.py")):
        shutil.copyfile(src, hook / name)
        (hook / name).chmod(0o644)
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


def is_plotly(data: dict[str, Any] | None) -> bool:
    """Whether a recording describes a plotly figure (read from the figure object, not drawn)."""
    return bool(data) and (data or {}).get("library") == "plotly"


def series_count(data: dict[str, Any] | None) -> int:
    """Data-bearing series recorded over all axes (0: the figure's data cannot be judged)."""
    if not data:
        return 0
    return sum(len(ax.get("series") or []) for ax in data.get("axes") or [])


def _same(a: Any, b: Any, rtol: float = 1e-9) -> bool:
    """Recorded values equal up to float noise far below any evaluator tolerance."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], rtol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y, rtol) for x, y in zip(a, b, strict=True))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(a - b) <= rtol * max(1.0, abs(a), abs(b))
    return a == b


def mark_unstable(gold_dir: Path | str, rerun_dir: Path | str) -> dict[str, Any]:
    """Compare each recorded gold figure with a second run's; flag what changed between runs.

    Bootstrapped confidence intervals (seaborn's default ``errorbar=("ci", 95)``), jittered strip
    plots and unseeded sampling draw differently on every run, so a correct agent could never
    reproduce them. A series whose values differ between two gold runs gets ``"unstable": true``
    in the gold recording: the evaluator still requires it (count, kind, label) but does not
    compare its values, and validation builds no control on it. A figure whose structure differs
    between runs (other axes or series) gets ``"unstable": true`` as a whole (the planner refuses
    it). Returns ``{figure: number of unstable series | "figure"}`` for the figures that changed.
    """
    gold_dir, rerun_dir = Path(gold_dir), Path(rerun_dir)
    changed: dict[str, Any] = {}
    root = gold_dir / PLOTDATA_DIR
    if not root.is_dir():
        return changed
    for side in sorted(root.rglob("*.json")):
        rel = side.relative_to(root).as_posix()
        if rel == MANIFEST:
            continue
        gold = json.loads(side.read_text(encoding="utf-8"))
        other_path = rerun_dir / PLOTDATA_DIR / rel
        other = json.loads(other_path.read_text(encoding="utf-8")) if other_path.is_file() else None
        g_axes = gold.get("axes") or []
        o_axes = (other or {}).get("axes") or []
        shapes_differ = other is None or len(g_axes) != len(o_axes) or any(
            [s.get("kind") for s in ga.get("series") or []] != [s.get("kind") for s in oa.get("series") or []]
            for ga, oa in zip(g_axes, o_axes, strict=True)
        )
        if shapes_differ:
            gold["unstable"] = True
            changed[rel.removesuffix(".json")] = "figure"
        else:
            n = 0
            for ga, oa in zip(g_axes, o_axes, strict=True):
                for gs, os_ in zip(ga.get("series") or [], oa.get("series") or [], strict=True):
                    if not _same(gs, os_):
                        gs["unstable"] = True
                        n += 1
            if not n:
                continue
            changed[rel.removesuffix(".json")] = n
        side.write_text(json.dumps(gold), encoding="utf-8")
    return changed


def rerun_and_mark(
    task_dir: Path,
    program_name: str,
    python: str,
    *,
    timeout_s: float = 600,
    memory_mb: int | None = None,
) -> dict[str, Any]:
    """Run the gold program a second time (as the gold run does) and :func:`mark_unstable`.

    Only needed when the gold run recorded figures. A failing rerun marks nothing and says so
    (the first run already succeeded; the comparison is a refinement, not a gate).
    """
    import tempfile

    from veriforge.discovery.goldrun import prepare_runtime, program_env
    from veriforge.sandbox import Limits, run

    gold = task_dir / "gold_results"
    if not (gold / PLOTDATA_DIR).is_dir():
        return {}
    with tempfile.TemporaryDirectory(prefix="veriforge-figrerun-") as tmp:
        work = Path(tmp) / "run"
        prepare_runtime(task_dir, program_name, work)
        Path(tmp).chmod(0o755)
        limits = Limits(timeout_s=timeout_s, cpu_s=timeout_s * 2, memory_mb=memory_mb, max_procs=256)
        res = run(["python", program_name], cwd=work, env=program_env(python, work), limits=limits, network=False)
        if not res.ok:
            return {"rerun_failed": f"{res.status}, exit {res.exit_code}"}
        return mark_unstable(gold, work / "pred_results")
