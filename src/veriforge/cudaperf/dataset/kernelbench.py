"""KernelBench compatibility: import problem folders, export torch2cuda tasks as problem/solution files.

KernelBench's layout is ``level<k>/<n>_<Name>.py``: a module with size constants, ``class Model``,
``get_inputs()`` and ``get_init_inputs()`` — exactly our ``reference.py``. So:

* **import** (:func:`import_kernelbench_tree`): a KernelBench root (``level1/``, ``level2/``, …) or
  one level folder → ``DEST/torch2cuda/<id>/`` via :func:`veriforge.cuda.tasks.importers.import_kernelbench`
  (the file kept as is, two seeds of its own sizes), tagged ``kernelbench`` and ``level<k>``. An
  imported task has no implementations; add some and validate before building a dataset from it.
  A ``solutions/level<k>/<n>_<Name>/`` folder next to the levels (what :func:`export_kernelbench`
  writes) is attached as implementations, so an export imports back.
* **export** (:func:`export_kernelbench`): every torch2cuda task of a dataset (or any folder of task
  folders) becomes ``KB/level<k>/<n>_<Name>.py`` — the reference module unchanged except that the
  module-level constants of one chosen configuration (default: the last ``[[timing]]``
  configuration, else the last verification configuration, the largest by convention) are
  substituted — and its implementations become ``KB/solutions/level<k>/<n>_<Name>/
  <impl>.py``: KernelBench-style ``ModelNew`` files. Ours call CUDA through veriforge's binding
  (``veriforge.cuda.torchbind.load_cuda``: the CPU runtime without a GPU, PyTorch's extension loader
  with one) rather than ``load_inline`` with C++ wrappers, so running them needs veriforge installed;
  a comment at the top says so. ``<k>`` is the task's ``level<k>`` tag if it has one, else 1
  (single-operator problems). ``KB/manifest.json`` maps each file back to its task.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from veriforge.errors import VeriforgeError

__all__ = ["KernelBenchError", "camel_name", "export_kernelbench", "import_kernelbench_tree", "substitute_constants"]


class KernelBenchError(VeriforgeError, ValueError):
    """A source that holds no KernelBench problems, or a task that cannot be exported."""


_LEVEL = re.compile(r"^level(\d+)$")
_PROBLEM = re.compile(r"^(\d+)_(.+)\.py$")


def camel_name(task_id: str) -> str:
    """``softmax_rows`` → ``SoftmaxRows`` (KernelBench's file names are ``<n>_<CamelName>.py``)."""
    return "".join(part[:1].upper() + part[1:] for part in task_id.split("_") if part) or "Task"


def substitute_constants(source: str, values: dict[str, Any]) -> str:
    """Replace module-level ``NAME = <literal>`` assignments of ``values`` (KernelBench size constants).

    Only top-level lines are touched (no indentation), so a local variable of the same name inside
    a function is left alone. A name the module does not define is refused: the configuration would
    silently not apply.
    """
    out = source
    for name, value in values.items():
        pattern = re.compile(rf"^({re.escape(name)}\s*=\s*)([^\n#]*?)(\s*(#.*)?)$", re.M)
        if not pattern.search(out):
            raise KernelBenchError(f"the reference defines no module-level constant {name!r} to set to {value!r}")
        out = pattern.sub(lambda m, v=value: f"{m.group(1)}{v!r}{m.group(3)}", out, count=1)
    return out


def _level_of(tags: list[str]) -> int:
    for tag in tags:
        m = re.fullmatch(r"level(\d+)", str(tag))
        if m:
            return int(m.group(1))
    return 1


def export_kernelbench(src: str | Path, dest: str | Path, *, config: str | None = None,
                       solutions: bool = True) -> list[dict[str, Any]]:
    """Write KernelBench problem (and solution) files for every torch2cuda task under ``src``.

    ``src`` is a dataset folder (its ``tasks/torch2cuda``), a folder of task folders, or one task;
    ``config`` names the configuration whose sizes are substituted (default: each task's last).
    Returns the manifest rows (also written to ``dest/manifest.json``).
    """
    from veriforge.cuda.tasks.load import iter_tasks, load_task

    src, dest = Path(src), Path(dest)
    root = src / "tasks" / "torch2cuda" if (src / "tasks" / "torch2cuda").is_dir() else src
    if not root.exists():
        raise KernelBenchError(f"{src} does not exist")
    manifest: list[dict[str, Any]] = []
    counters: dict[int, int] = {}
    for folder in iter_tasks(root):
        spec = load_task(folder)
        if spec.family != "torch2cuda":
            continue
        if config is None:  # the sizes speed is judged at: the last [[timing]] config, else the last config
            cfg = spec.timing[-1] if spec.timing else spec.configs[-1]
        else:
            cfg = spec.config(config)
        level = _level_of(list(spec.tags))
        counters[level] = counters.get(level, 0) + 1
        stem = f"{counters[level]}_{camel_name(spec.id)}"
        problem = dest / f"level{level}" / f"{stem}.py"
        problem.parent.mkdir(parents=True, exist_ok=True)
        sizes = {k: v for k, v in cfg.variables.items() if k != "seed"}
        problem.write_text(substitute_constants((folder / "reference.py").read_text(), sizes))
        row: dict[str, Any] = {"task_id": spec.id, "task_dir": str(folder), "level": level, "problem": str(
            problem.relative_to(dest)), "config": cfg.name, "sizes": sizes, "solutions": []}
        if solutions:
            for impl in spec.implementations:
                sol = dest / "solutions" / f"level{level}" / stem / f"{impl.name}.py"
                sol.parent.mkdir(parents=True, exist_ok=True)
                header = (f"# KernelBench-style solution for level{level}/{stem}.py (veriforge task {spec.id}, "
                          f"strategy {impl.strategy}, quality {impl.quality}).\n# Calls CUDA through "
                          f"veriforge.cuda.torchbind.load_cuda: needs veriforge installed.\n")
                sol.write_text(header + (folder / impl.file).read_text())
                row["solutions"].append({"name": impl.name, "strategy": impl.strategy, "quality": impl.quality,
                                         "file": str(sol.relative_to(dest))})
        manifest.append(row)
    if not manifest:
        raise KernelBenchError(f"no torch2cuda tasks under {root}")
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def import_kernelbench_tree(src: str | Path, dest: str | Path, *, category: str = "other") -> list[Path]:
    """Import a KernelBench root or level folder (or one file) into ``dest/torch2cuda/``; returns folders."""
    from veriforge.cuda.tasks.importers import import_kernelbench, to_toml
    from veriforge.cuda.tasks.load import load_task

    src, dest = Path(src), Path(dest)
    if not src.exists():
        raise KernelBenchError(f"{src} does not exist")
    levels = sorted((p for p in src.iterdir() if p.is_dir() and _LEVEL.match(p.name)),
                    key=lambda p: int(p.name[5:])) if src.is_dir() else []
    sources = [(int(p.name[5:]), p) for p in levels] or [(_level_from_path(src), src)]
    manifest = _read_manifest(src)
    out: list[Path] = []
    for level, path in sources:
        for spec in import_kernelbench(path, dest / "torch2cuda", category=category):
            assert spec.folder is not None
            folder = Path(spec.folder)
            data = tomllib.loads((folder / "task.toml").read_text())
            data["tags"] = sorted(set(data.get("tags", [])) | {"kernelbench", f"level{level}"})
            stem = _stem_for(path, folder)
            impls = _attach_solutions(src, level, stem, folder, manifest)
            if impls:
                data["implementations"] = impls
            (folder / "task.toml").write_text(to_toml(data))
            load_task(folder)
            out.append(folder)
    if not out:
        raise KernelBenchError(f"no KernelBench problem files (class Model + get_inputs) under {src}")
    return out


def _level_from_path(path: Path) -> int:
    for part in (path, *path.parents):
        m = _LEVEL.match(part.name)
        if m:
            return int(m.group(1))
    return 1


def _stem_for(level_path: Path, folder: Path) -> str | None:
    """The problem file stem that produced ``folder`` (the importer names tasks from stems)."""
    from veriforge.cuda.tasks.importers import _task_id

    files = [level_path] if level_path.is_file() else sorted(level_path.glob("*.py"))
    for f in files:
        if _task_id(f.stem) == folder.name:
            return f.stem
    return None


def _read_manifest(src: Path) -> dict[str, dict[str, Any]]:
    path = src / "manifest.json" if src.is_dir() else src.parent.parent / "manifest.json"
    if not path.is_file():
        return {}
    return {row["problem"]: row for row in json.loads(path.read_text())}


def _attach_solutions(src: Path, level: int, stem: str | None, folder: Path,
                      manifest: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Copy ``solutions/level<k>/<stem>/*.py`` into the task's ``impls/`` (strategies from the manifest)."""
    if stem is None or not src.is_dir():
        return []
    sol_dir = src / "solutions" / f"level{level}" / stem
    if not sol_dir.is_dir():
        return []
    known = {s["name"]: s for s in manifest.get(f"level{level}/{stem}.py", {}).get("solutions", [])}
    impls = []
    for k, sol in enumerate(sorted(sol_dir.glob("*.py"))):
        text = sol.read_text()
        if "class ModelNew" not in text:
            continue
        (folder / "impls").mkdir(exist_ok=True)
        (folder / "impls" / sol.name).write_text(text)
        info = known.get(sol.stem, {})
        impls.append({"name": sol.stem, "file": f"impls/{sol.name}", "strategy": info.get("strategy", "other"),
                      "quality": int(info.get("quality", k + 1))})
    return impls
