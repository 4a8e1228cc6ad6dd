"""`veriforge cudaperf dataset build|export|families|kernelbench-*` through typer's CliRunner."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from veriforge.cli.cudaperf_cmd import app
from veriforge.cuda.tasks.load import bundled_root
from veriforge.cudaperf.dataset import build as build_mod

runner = CliRunner()
_path = Path(__file__).resolve().parents[1] / "cudaperf" / "dataset" / "toy_families.py"
_spec = importlib.util.spec_from_file_location("cudaperf_toy_families_cli", _path)
toy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(toy)


@pytest.fixture
def toys(monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(build_mod, "verify_task", toy.fake_verify(calls))
    monkeypatch.setattr(build_mod, "_warm_up", lambda *a: None)
    toy.register()
    yield calls
    toy.unregister()


def test_build_json_summary_then_resume_and_export(tmp_path, toys):
    out = tmp_path / "ds"
    res = runner.invoke(app, ["dataset", "build", "--out", str(out), "--families", "toy_axpy,toy_relu",
                              "--jobs", "1", "--max-tasks", "2", "--json"])
    assert res.exit_code == 0, res.output
    first = json.loads(res.output)
    assert first["total"]["verified"] == 2 and toys == ["toy_axpy_a", "toy_axpy_b"]
    res = runner.invoke(app, ["dataset", "build", "--out", str(out), "--families", "toy_axpy,toy_relu",
                              "--jobs", "1"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "toy_axpy" in res.output and "total" in res.output and "tasks/min" in res.output
    assert toys == ["toy_axpy_a", "toy_axpy_b", "toy_axpy_broken", "toy_relu_clamp"]  # resumed, not redone
    res = runner.invoke(app, ["dataset", "export", str(out), "--seed", "9"])
    assert res.exit_code == 0, res.output
    assert "exported 3 tasks" in res.output and json.loads((out / "stats.json").read_text())["seed"] == 9


def test_bad_arguments_exit_2_with_one_clear_line(tmp_path, toys):
    res = runner.invoke(app, ["dataset", "build", "--out", str(tmp_path), "--families", "toy_axpy,nope"])
    assert res.exit_code == 2 and "unknown family 'nope'; known:" in res.output and "toy_relu" in res.output
    res = runner.invoke(app, ["dataset", "build", "--out", str(tmp_path), "--jobs", "0"])
    assert res.exit_code == 2 and "--jobs must be >= 1" in res.output
    res = runner.invoke(app, ["dataset", "build", "--out", str(tmp_path), "--families", "toy_relu",
                              "--kind", "c2cuda"])
    assert res.exit_code == 2 and "generates torch2cuda" in res.output
    res = runner.invoke(app, ["dataset", "export", str(tmp_path / "nothing")])
    assert res.exit_code == 2 and "no build" in res.output


def test_families_lists_registered_families(toys):
    res = runner.invoke(app, ["dataset", "families", "--kind", "torch2cuda", "--count"])
    assert res.exit_code == 0 and "toy_relu\ttorch2cuda\telementwise\t1" in res.output
    assert "toy_axpy" not in res.output


def test_kernelbench_export_and_import(tmp_path):
    shutil.copytree(bundled_root() / "torch2cuda" / "gelu_tanh", tmp_path / "src" / "gelu_tanh")
    res = runner.invoke(app, ["dataset", "kernelbench-export", str(tmp_path / "src"), "--out", str(tmp_path / "kb")])
    assert res.exit_code == 0 and "exported 1 problem(s) and 3 solution(s)" in res.output, res.output
    assert (tmp_path / "kb" / "level1" / "1_GeluTanh.py").is_file()
    res = runner.invoke(app, ["dataset", "kernelbench-import", str(tmp_path / "kb"), "--out", str(tmp_path / "back")])
    assert res.exit_code == 0 and "imported 1 task(s)" in res.output and "1 with implementations" in res.output
    res = runner.invoke(app, ["dataset", "kernelbench-import", str(tmp_path / "none"), "--out", str(tmp_path / "b")])
    assert res.exit_code == 2 and "does not exist" in res.output
