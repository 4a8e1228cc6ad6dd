"""KernelBench round trip: torch2cuda tasks → level<k>/<n>_<Name>.py + ModelNew solutions → tasks again."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from veriforge.cuda.tasks.load import bundled_root, load_task
from veriforge.cudaperf.dataset.kernelbench import (
    KernelBenchError,
    camel_name,
    export_kernelbench,
    import_kernelbench_tree,
    substitute_constants,
)


@pytest.fixture
def tasks(tmp_path: Path) -> Path:
    root = tmp_path / "tasks" / "torch2cuda"
    for name in ("relu", "softmax_dim1"):
        shutil.copytree(bundled_root() / "torch2cuda" / name, root / name)
    shutil.copytree(bundled_root() / "c2cuda" / "saxpy", tmp_path / "tasks" / "c2cuda" / "saxpy")
    return tmp_path


def test_substitute_constants_only_touches_module_level_names():
    src = "batch_size = 16  # rows\ndim = 4\n\ndef f():\n    dim = 3\n"
    out = substitute_constants(src, {"batch_size": 2, "dim": 1001})
    assert out == "batch_size = 2  # rows\ndim = 1001\n\ndef f():\n    dim = 3\n"
    with pytest.raises(KernelBenchError, match="no module-level constant 'nope'"):
        substitute_constants(src, {"nope": 1})
    assert camel_name("softmax_dim1") == "SoftmaxDim1"


def test_export_then_import_round_trips(tasks: Path, tmp_path: Path):
    kb = tmp_path / "kb"
    manifest = export_kernelbench(tasks, kb)
    assert [m["task_id"] for m in manifest] == ["relu", "softmax_dim1"]  # c2cuda tasks are skipped
    relu = manifest[0]
    problem = kb / relu["problem"]
    assert problem == kb / "level1" / "1_Relu.py"
    spec = load_task(tasks / "tasks" / "torch2cuda" / "relu")
    last = spec.timing[-1] if spec.timing else spec.configs[-1]  # the sizes speed is judged at
    text = problem.read_text()
    assert f"batch_size = {last.variables['batch_size']}" in text and f"dim = {last.variables['dim']}" in text
    assert "class Model" in text and "def get_inputs" in text
    sols = sorted((kb / "solutions" / "level1" / "1_Relu").glob("*.py"))
    assert [p.stem for p in sols] == ["grid_stride", "naive", "vectorized"]
    assert all("class ModelNew" in p.read_text() for p in sols)

    back = tmp_path / "back"
    folders = import_kernelbench_tree(kb, back)
    assert len(folders) == 2
    imported = load_task(next(f for f in folders if "relu" in f.name))
    assert (Path(imported.folder) / "reference.py").read_text() == text  # the problem file as is
    assert {i.name: i.strategy for i in imported.implementations} == {i.name: i.strategy
                                                                       for i in spec.implementations}
    data = tomllib.loads((Path(imported.folder) / "task.toml").read_text())
    assert "kernelbench" in data["tags"] and "level1" in data["tags"]

    again = tmp_path / "kb2"
    export_kernelbench(back, again)
    relu_again = [p for p in (again / "level1").glob("*.py") if "Relu" in p.name]
    assert len(relu_again) == 1 and relu_again[0].read_text() == text  # same sizes survive the round trip


def test_errors_are_clear(tmp_path: Path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(KernelBenchError, match="no torch2cuda tasks"):
        export_kernelbench(tmp_path / "empty", tmp_path / "kb")
    with pytest.raises(KernelBenchError, match="no KernelBench problem files"):
        import_kernelbench_tree(tmp_path / "empty", tmp_path / "out")
    with pytest.raises(KernelBenchError, match="does not exist"):
        import_kernelbench_tree(tmp_path / "missing", tmp_path / "out")
