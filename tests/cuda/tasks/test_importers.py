"""Importers: a JSONL pair round-trips into a valid task; KernelBench files import as they are."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from veriforge.cuda.tasks.importers import import_jsonl, import_kernelbench, to_toml
from veriforge.cuda.tasks.validate import validate_task

DATA = Path(__file__).parent / "data"


def test_jsonl_import_builds_a_valid_task(tmp_path: Path) -> None:
    src = DATA / "c2cuda" / "vec_scale_add"
    data = tomllib.loads((src / "task.toml").read_text())
    record = {k: v for k, v in data.items() if k != "implementations"}
    record["reference_c"] = (src / "reference.c").read_text()
    record["implementations"] = [{"name": i["name"], "strategy": i["strategy"],
                                  "source": (src / i["file"]).read_text()} for i in data["implementations"]]
    jsonl = tmp_path / "pairs.jsonl"
    jsonl.write_text(json.dumps(record) + "\n")
    specs = import_jsonl(jsonl, tmp_path / "out")
    assert [s.id for s in specs] == ["vec_scale_add"]
    assert specs[0].config("odd").init == {"x": "normal(0, 10)"}
    report = validate_task(tmp_path / "out" / "vec_scale_add")
    assert report.ok, (report.problems, report.impls)


def test_kernelbench_import(tmp_path: Path) -> None:
    level = tmp_path / "level1"
    level.mkdir()
    (level / "19_ReLU.py").write_text((DATA / "torch2cuda" / "relu_rows" / "reference.py").read_text())
    (level / "notes.py").write_text("x = 1\n")
    specs = import_kernelbench(level, tmp_path / "tasks")
    assert [s.id for s in specs] == ["kb_19_relu"] and specs[0].family == "torch2cuda"
    assert (tmp_path / "tasks" / "kb_19_relu" / "reference.py").read_text().startswith("import torch")


def test_to_toml_roundtrip() -> None:
    data = {"id": "x", "n": 3, "f": 1.5, "t": {"rtol": 1e-5}, "cs": [{"name": "a", "init": {"x": "normal(0, 1)"}}]}
    assert tomllib.loads(to_toml(data)) == data


BIG_PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.tanh(x) * self.scale


batch_size = 4096
dim = 393216
kernel = 3


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return [kernel]
'''


def test_kernelbench_sizes_become_timing_and_verification_runs_shrunken_copies(tmp_path: Path) -> None:
    from veriforge.cuda.tasks.reference import load_torch_reference

    (tmp_path / "7_Big_tanh.py").write_text(BIG_PROBLEM)
    tuple_shape = BIG_PROBLEM.replace("dim = 393216", "dim = 393216\nshape = (dim,)")
    (tmp_path / "8_Shape_tuple.py").write_text(tuple_shape)
    big, shaped = import_kernelbench(tmp_path, tmp_path / "tasks")
    assert [c.name for c in big.timing] == ["kernelbench"] and big.timing[0].variables == {}  # the file's sizes
    small, medium = (dict(c.variables) for c in big.configs)
    assert small["batch_size"] * small["dim"] <= 1 << 12 < medium["batch_size"] * medium["dim"] <= 1 << 16
    assert small["kernel"] == medium["kernel"] == 3  # small constants (kernel sizes, strides) are kept
    module = load_torch_reference(BIG_PROBLEM, small)
    assert module.get_inputs()[0].numel() == small["batch_size"] * small["dim"]
    # a shape tuple cannot be overridden by a config: sizes are left as they are, no timing config
    assert not shaped.timing and all(not c.variables for c in shaped.configs)
