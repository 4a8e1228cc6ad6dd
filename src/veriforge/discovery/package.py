"""Stage 9 -- the task folder: ``task.json`` (ScienceAgentBench fields + ``veriforge``), Dockerfile.

The folder layout is fixed (docs/d3gym.md); this module only composes the metadata files. Other
stages write their own parts (datasets/, gold_program/, gold_results/, eval/, env/).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

__all__ = [
    "SCHEMA_VERSION",
    "copy_datasets",
    "copy_local_modules",
    "dockerfile",
    "lib_record",
    "subtask_categories",
    "task_json",
    "write_json",
]

SCHEMA_VERSION = 1

_CATEGORY_IMPORTS = {
    "sklearn": "Machine Learning",
    "torch": "Deep Learning",
    "tensorflow": "Deep Learning",
    "keras": "Deep Learning",
    "scipy": "Statistical Analysis",
    "statsmodels": "Statistical Analysis",
    "geopandas": "Map Visualization",
}


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")
    tmp.replace(path)


def copy_datasets(repo_root: Path, datasets: list[str], task_dir: Path, exclude: list[str] | None = None) -> None:
    """Copy each repository file/folder to ``task_dir/datasets/<same relative path>``.

    ``exclude``: repository files inside those folders that must not be copied (results the
    program itself writes there: shipping them as inputs would hand the solver the answer).
    """
    base = task_dir / "datasets"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    skip = {(repo_root / e).resolve() for e in exclude or []}
    for rel in datasets:
        src, dst = repo_root / rel, base / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(
                src,
                dst,
                dirs_exist_ok=True,
                ignore=lambda d, names: [n for n in names if (Path(d) / n).resolve() in skip],
            )
        else:
            shutil.copy2(src, dst)


def copy_local_modules(
    repo_root: Path, modules: list[dict[str, Any]], task_dir: Path, redirected: dict[str, str] | None = None
) -> None:
    """Vendor the program's repository-local modules into ``task_dir/lib/`` (replacing any old copy).

    A file whose content no longer matches the hash recorded at mining time is refused: the task
    would otherwise ship code that was never analysed. ``redirected``: ``lib/`` destinations whose
    fixed paths the standalone stage redirected, with their new text (written instead).
    """
    import hashlib

    from veriforge.discovery.errors import DiscoveryError
    from veriforge.discovery.localmods import LIB_DIR

    lib = task_dir / LIB_DIR
    shutil.rmtree(lib, ignore_errors=True)
    for mod in modules:
        raw = (repo_root / mod["path"]).read_bytes()
        if hashlib.sha256(raw).hexdigest() != mod["sha256"]:
            raise DiscoveryError(f"{mod['path']} changed since it was mined; mine the repository again")
        dst = lib / mod["dest"]
        dst.parent.mkdir(parents=True, exist_ok=True)
        if mod.get("python2"):  # the same deterministic conversion the miner analysed
            from veriforge.discovery.display import python2_to_3

            converted = python2_to_3(raw.decode("utf-8-sig"))
            if converted is None:
                raise DiscoveryError(f"{mod['path']}: the Python 2 conversion no longer succeeds")
            raw = converted.encode("utf-8")
        if redirected and mod["dest"] in redirected:
            raw = redirected[mod["dest"]].encode("utf-8")
        dst.write_bytes(raw)


def lib_record(modules: list[dict[str, Any]], redirected: list[str] | None = None) -> dict[str, Any] | None:
    """``task.json`` ``veriforge.lib``: where the vendored modules are and where each came from;
    ``redirected`` files differ from their source by the path rewrite (in ``replacements``)."""
    if not modules:
        return None
    from veriforge.discovery.localmods import LIB_DIR

    return {
        "dir": LIB_DIR,
        "pythonpath": True,
        "modules": sorted({m["name"] for m in modules}),
        "files": [
            {"dest": m["dest"], "source": m["path"], "sha256": m["sha256"]}
            | ({"redirected": True} if m["dest"] in (redirected or []) else {})
            for m in modules
        ],
    }


def subtask_categories(imports: list[str], outputs: list[str]) -> str:
    """ScienceAgentBench-style category list, from the program's imports and output types."""
    cats: list[str] = []
    for mod in imports:
        cat = _CATEGORY_IMPORTS.get(mod)
        if cat and cat not in cats:
            cats.append(cat)
    if any(o.lower().endswith((".png", ".jpg", ".jpeg", ".pdf", ".svg")) for o in outputs):
        cats.append("Data Visualization")
    if not cats:
        cats.append("Computational Analysis")
    return ", ".join(cats)


def task_json(
    *,
    instance_id: str,
    domain: str,
    categories: str,
    github_name: str,
    task_inst: str,
    domain_knowledge: str,
    folder_tree: str,
    preview: str,
    src_file: str,
    program_name: str,
    outputs: list[str],
    eval_script_name: str,
    timeout_s: float,
    python_version: str,
    venv_hint: str,
    eval_plan: dict[str, Any],
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "instance_id": instance_id,
        "domain": domain,
        "subtask_categories": categories,
        "github_name": github_name,
        "task_inst": task_inst,
        "domain_knowledge": domain_knowledge,
        "dataset_folder_tree": folder_tree,
        "dataset_preview": preview,
        "src_file_or_path": src_file,
        "gold_program_name": program_name,
        "output_fname": outputs[0] if outputs else "",
        "eval_script_name": eval_script_name,
        "veriforge": {
            "outputs": [o.removeprefix("pred_results/") for o in outputs],
            "timeout_s": timeout_s,
            "entry": f"python {program_name}",
            "env": {"lock": "env/requirements.lock", "python": python_version, "venv_hint": venv_hint},
            "eval_plan": eval_plan,
            "version": SCHEMA_VERSION,
            **(extra or {}),
        },
    }


def dockerfile(python_version: str, program_name: str, lib: bool = False) -> str:
    """A Dockerfile reproducing the task environment from the lock (optional artefact); ``lib``:
    the task vendors helper modules, which go on ``PYTHONPATH`` as in every veriforge run."""
    major_minor = ".".join(python_version.split(".")[:2]) or "3.11"
    return (
        f"FROM python:{major_minor}-slim\n"
        "WORKDIR /task\n"
        "COPY env/requirements.lock /task/env/requirements.lock\n"
        "RUN pip install --no-cache-dir -r /task/env/requirements.lock\n"
        "COPY datasets /task/datasets\n"
        + ("COPY lib /task/lib\nENV PYTHONPATH=/task/lib\n" if lib else "")
        + "RUN mkdir -p /task/pred_results\n"
        "ENV MPLBACKEND=Agg OMP_NUM_THREADS=1 PYTHONHASHSEED=0\n"
        f'CMD ["python", "{program_name}"]\n'
    )
