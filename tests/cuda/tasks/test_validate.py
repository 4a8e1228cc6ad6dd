"""validate_task and the `veriforge tasks` CLI on the small test tasks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from veriforge.cli.tasks_cmd import app
from veriforge.cuda.tasks.validate import validate_task

DATA = Path(__file__).parent / "data"


def test_validate_good_task() -> None:
    report = validate_task(DATA / "c2cuda" / "histogram", jobs=2)
    assert report.ok, (report.problems, report.impls)
    assert sorted(i.name for i in report.impls) == ["global_atomic", "per_bin", "shared"]


def test_validate_reports_signature_mismatch_and_wrong_impl(tmp_path: Path) -> None:
    dst = tmp_path / "vec_scale_add"
    shutil.copytree(DATA / "c2cuda" / "vec_scale_add", dst)
    naive = dst / "impls" / "naive.cu"
    naive.write_text(naive.read_text().replace("alpha * x[i] + y[i]", "x[i] + y[i]"))
    ref = dst / "reference.c"
    ref.write_text(ref.read_text().replace("float alpha, int n", "double alpha, int n"))
    report = validate_task(dst)
    assert not report.ok
    assert any("reference.c: parameter 4" in p for p in report.problems), report.problems
    ref.write_text(ref.read_text().replace("double alpha, int n", "float alpha, int n"))
    report = validate_task(dst)
    bad = [i for i in report.impls if not i.correct]
    assert [i.name for i in bad] == ["naive"] and "wrong" in bad[0].reason


def test_cli_list_show_validate(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["list", "--root", str(DATA), "--json", "--family", "c2cuda"])
    assert res.exit_code == 0, res.output
    assert {t["id"] for t in json.loads(res.stdout)["tasks"]} == {"vec_scale_add", "histogram"}
    res = runner.invoke(app, ["show", str(DATA / "c2cuda" / "histogram")])
    assert res.exit_code == 0 and 'extern "C" void solve(const int* x, int* hist, int n, int bins)' in res.output
    res = runner.invoke(app, ["validate", str(DATA / "c2cuda" / "vec_scale_add"), "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["ok"] is True  # progress lines go to stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "task.toml").write_text('id = "broken"\n')
    res = runner.invoke(app, ["validate", str(broken)])
    assert res.exit_code == 1 and "broken" in res.output
    res = runner.invoke(app, ["validate", str(tmp_path / "nothing")])
    assert res.exit_code == 2


def test_submit_validation_gives_one_future_per_task_in_order(tmp_path: Path) -> None:
    from veriforge.cuda.evaluate.executor import ThreadExecutor
    from veriforge.cuda.tasks.validate import submit_validation

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "task.toml").write_text('id = "broken"\n')
    paths = [DATA / "torch2cuda" / "relu_rows", broken, DATA / "c2cuda" / "vec_scale_add"]
    with ThreadExecutor(2) as pool:
        futures = submit_validation(paths, pool)
        reports = [f.result(timeout=240) for f in futures]
    assert [r.path for r in reports] == paths
    relu, bad, axpy = reports
    assert relu.ok and relu.family == "torch2cuda", (relu.problems, relu.impls)
    assert [i.name for i in relu.impls] == ["naive", "grid_stride", "row_block"]
    assert all(sorted(i.configs) == ["small", "wide"] for i in relu.impls)
    assert not bad.ok and bad.problems and not bad.impls
    assert axpy.ok and len(axpy.impls) >= 3
