"""Importers: KernelBench problem files → torch2cuda tasks; C/CUDA pairs (JSONL) → c2cuda tasks.

KernelBench problems are used *as they are*: each ``<n>_<Name>.py`` becomes ``reference.py`` of
a task whose configurations keep the file's own sizes (two seeds). JSONL pairs, one task per
line (documented in docs/tasks.md)::

    {"id": "vector_add", "title": "...", "description": "...", "category": "elementwise",
     "reference_c": "void reference(...) {...}",
     "params": [{"name": "a", "type": "const float*", "role": "in", "size": "n", "init": "uniform(-1, 1)"}, ...],
     "configs": [{"name": "small", "seed": 1, "n": 1000}, ...],
     "implementations": [{"name": "naive", "strategy": "naive", "source": "extern \\"C\\" void solve(...)"}],
     "tolerance": {"rtol": 1e-5, "atol": 1e-6}, "metrics": {"flops": "n", "bytes": "12 * n"}}
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from veriforge.core import pyparse as _pyparse

from .load import load_task
from .schema import TaskFormatError, TaskSpec

__all__ = ["import_jsonl", "import_kernelbench", "to_toml"]


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TaskFormatError(f"cannot write {type(value).__name__} to TOML")


def to_toml(data: dict[str, Any]) -> str:
    """A small TOML writer for task.toml shapes (scalars, tables, arrays of tables)."""
    lines: list[str] = []
    tables: list[tuple[str, dict]] = []
    arrays: list[tuple[str, list[dict]]] = []
    for key, value in data.items():
        if isinstance(value, dict):
            tables.append((key, value))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            arrays.append((key, value))
        else:
            lines.append(f"{key} = {_toml_value(value)}")
    for key, table in tables:
        lines += ["", f"[{key}]"] + [f"{k} = {_toml_value(v)}" for k, v in table.items()]
    for key, items in arrays:
        for item in items:
            lines += ["", f"[[{key}]]"] + [f"{k} = {_toml_value(v)}" for k, v in item.items()]
    return "\n".join(lines) + "\n"


def _task_id(name: str) -> str:
    ident = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    return f"kb_{ident}" if not ident or ident[0].isdigit() else ident


def _size_constants(text: str) -> dict[str, int]:
    """Module-level integer constants of a KernelBench problem (``batch_size = 4096``), in order."""
    import ast

    out: dict[str, int] = {}
    try:
        tree = _pyparse.parse(text)
    except SyntaxError:
        return out
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        if isinstance(node.value, ast.Constant) and type(node.value.value) is int:
            out[node.targets[0].id] = node.value.value
        elif isinstance(node.value, ast.Tuple | ast.List) and any(
                (isinstance(e, ast.Constant) and type(e.value) is int and e.value >= 16) or isinstance(e, ast.Name)
                for e in node.value.elts):
            # a shape tuple (`input_shape = (32768,)`, `(dim,)`) is built when the module loads: configs
            # override scalars only afterwards, so shrinking would leave it inconsistent
            return {}
    return out


def _shrink(sizes: dict[str, int], budget: int) -> dict[str, int]:
    """Halve the largest size constant (≥ 16; smaller ones are kernel sizes, strides, channels that
    shapes depend on) until the product of all of them — a bound on any tensor built from them — is
    at most ``budget``. Halving keeps power-of-two divisibility (heads, groups) where it can."""
    out = dict(sizes)
    big = [k for k, v in out.items() if v >= 16]

    def product() -> int:
        p = 1
        for k in big:
            p *= out[k]
        return p

    while big and product() > budget:
        k = max(big, key=lambda name: out[name])
        if out[k] < 32:
            break
        out[k] //= 2
    return out


def import_kernelbench(src: str | Path, dest: str | Path, *, category: str = "other") -> list[TaskSpec]:
    """Turn every KernelBench problem file in ``src`` (a file or a level folder) into a task folder
    under ``dest``. Imported tasks have no implementations yet (add them, then validate)."""
    src, dest = Path(src), Path(dest)
    files = [src] if src.is_file() else sorted(p for p in src.glob("*.py") if not p.name.startswith("_"))
    out = []
    for f in files:
        text = f.read_text()
        if "class Model" not in text or "def get_inputs" not in text:
            continue
        task_id = _task_id(f.stem)
        folder = dest / task_id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "reference.py").write_text(text)
        sizes = _size_constants(text)
        small, medium = _shrink(sizes, 1 << 12), _shrink(sizes, 1 << 16)
        if sizes and small != sizes:
            # KernelBench's own sizes (often billions of elements) are what speed is judged at: a
            # [[timing]] configuration. Verification runs shrunken copies the CPU runtime can run.
            configs = [{"name": "small", "seed": 1, **small}, {"name": "medium", "seed": 2, **medium}]
            timing = [{"name": "kernelbench", "seed": 3}]
        else:
            configs, timing = [{"name": "default", "seed": 1}, {"name": "reseeded", "seed": 2}], []
        data = {
            "id": task_id, "family": "torch2cuda", "category": category,
            "title": f"KernelBench {f.stem}",
            "description": f"Implement the PyTorch reference (KernelBench problem {f.name}) with custom CUDA.\n",
            "tags": ["kernelbench"], "metrics": {}, "configs": configs,
            **({"timing": timing} if timing else {}),
        }
        (folder / "task.toml").write_text(to_toml(data))
        out.append(load_task(folder))
    return out


def import_jsonl(path: str | Path, dest: str | Path) -> list[TaskSpec]:
    """One c2cuda task folder under ``dest`` per JSONL line of ``path`` (format in the docstring)."""
    dest = Path(dest)
    out = []
    for lineno, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            task_id = item["id"]
            folder = dest / task_id
            (folder / "impls").mkdir(parents=True, exist_ok=True)
            (folder / "reference.c").write_text(item["reference_c"])
            impls = []
            for impl in item.get("implementations", []):
                file = f"impls/{impl['name']}.cu"
                (folder / file).write_text(impl["source"])
                impls.append({k: v for k, v in impl.items() if k != "source"} | {"file": file})
            data = {k: v for k, v in item.items() if k not in ("reference_c", "implementations")}
            data.setdefault("family", "c2cuda")
            data["implementations"] = impls
            (folder / "task.toml").write_text(to_toml(data))
        except (KeyError, TypeError, json.JSONDecodeError) as exc:
            raise TaskFormatError(f"{path}:{lineno}: not a task record ({type(exc).__name__}: {exc})") from None
        out.append(load_task(folder))
    return out
