"""End-to-end offline build of the fixture repositories, resume, report and CLI."""

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from veriforge.cli.d3gym_cmd import app
from veriforge.core.store import RunStore
from veriforge.discovery.build import BuildConfig, build_tasks

FIXTURES = Path(__file__).parent / "fixtures"
CFG = BuildConfig(env_mode="reuse", timeout_s=120, validate_reruns=1, jobs=2)
SCHEMA_KEYS = {
    "instance_id",
    "domain",
    "subtask_categories",
    "github_name",
    "task_inst",
    "domain_knowledge",
    "dataset_folder_tree",
    "dataset_preview",
    "src_file_or_path",
    "gold_program_name",
    "output_fname",
    "eval_script_name",
    "veriforge",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    out = tmp_path_factory.mktemp("tasks")
    mp = pytest.MonkeyPatch()
    mp.setenv("VERIFORGE_HOME", str(home))
    store = RunStore(home / "runs.sqlite")
    reports = {
        name: build_tasks(FIXTURES / name, out, CFG, store=store)
        for name in ("stats_analysis", "ml_eval", "numpy_sim")
    }
    yield out, reports, store, home
    store.close()
    mp.undo()


def test_fixture_repos_build_at_least_four_validated_tasks(built):
    out, _, _, _ = built
    tasks = sorted(p.name for p in out.iterdir() if (p / "task.json").is_file())
    assert tasks == [
        "ml_eval__evaluate_classifier",
        "ml_eval__plot_feature_distributions",
        "numpy_sim__simulate_diffusion",
        "stats_analysis__notebooks_site_summary",
        "stats_analysis__scripts_compare_treatments",
        "stats_analysis__scripts_standardized_heights",  # with the repository's growthlib vendored
    ]
    heights = out / "stats_analysis__scripts_standardized_heights"
    assert (heights / "lib" / "growthlib" / "utils.py").is_file()
    assert 'load_trial("datasets/data/plant_growth.csv")' in next((heights / "gold_program").iterdir()).read_text()
    for name in tasks:
        d = out / name
        task = json.loads((d / "task.json").read_text())
        assert set(task) == SCHEMA_KEYS
        assert (d / "gold_program" / task["gold_program_name"]).is_file()
        assert (d / "eval" / task["eval_script_name"]).is_file()
        assert task["output_fname"].startswith("pred_results/")
        for o in task["veriforge"]["outputs"]:
            assert (d / "gold_results" / o).stat().st_size > 0
        assert "==" in (d / "env" / "requirements.lock").read_text()
        assert (d / "env" / "python_version").read_text().startswith("3.")
        assert task["dataset_preview"].startswith("[START Preview of datasets/")
        report = json.loads((d / "build_report.json").read_text())
        assert report["status"] == "built" and report["validation"]["ok"]
        assert any(c["name"] != "gold" and c["got_pass"] is False for c in report["validation"]["controls"])
    sim = json.loads((out / "numpy_sim__simulate_diffusion" / "task.json").read_text())
    assert sim["veriforge"]["outputs"] == ["final_temperature.npy", "snapshots.npy", "energy.txt"]
    assert (out / "numpy_sim__simulate_diffusion" / "datasets" / "data" / "params.json").is_file()
    assert "numpy==" in (out / "numpy_sim__simulate_diffusion" / "env" / "requirements.lock").read_text()


def test_distractors_skipped_and_failures_classified(built):
    out, reports, _, _ = built
    skipped = {s["path"]: s["reason"] for s in reports["stats_analysis"].skipped}
    assert {
        "scripts/explore.py",
        "scripts/analysis_2019.py",
        "tests/test_utils.py",
        "growthlib/utils.py",
    } <= set(skipped)
    sim = reports["numpy_sim"]
    bad = next(t for t in sim.tasks if t.source == "buggy_variant.py")
    assert (bad.status, bad.failed_stage, bad.failure_kind) == ("failed", "gold", "program")
    assert "KeyError" in bad.reason
    assert (out / ".rejected" / "numpy_sim__buggy_variant" / "build_report.json").is_file()
    summary = sim.summary()
    assert (
        summary["tasks_built"] == 1 and summary["program_failures"] == 1 and summary["gold_runs_passing"] == 1
    )


def test_run_store_records_and_resume_skips_completed_stages(built):
    out, reports, store, _ = built
    first = reports["numpy_sim"]
    run = store.get_run(first.run_id)
    assert run.status == "done" and run.summary["tasks_built"] == 1
    assert store.get_state(first.run_id, "numpy_sim__simulate_diffusion/gold")["status"] == "done"
    again = build_tasks(FIXTURES / "numpy_sim", out, CFG, store=store)
    ok = next(t for t in again.tasks if t.status == "built")
    assert {s["status"] for s in ok.stages.values()} == {"cached"}
    # lose one artefact: exactly the stage that made it runs again, the others stay cached
    shutil.rmtree(out / "numpy_sim__simulate_diffusion" / "gold_results")
    third = build_tasks(FIXTURES / "numpy_sim", out, CFG, store=store)
    ok = next(t for t in third.tasks if t.status == "built")
    assert ok.stages["gold"]["status"] == "done" and ok.stages["env"]["status"] == "cached"
    assert (out / "numpy_sim__simulate_diffusion" / "gold_results" / "energy.txt").is_file()
    assert len(store.events(third.run_id, kind="stage.cached")) >= 5


def test_cli_validate_and_build_report(built, tmp_path):
    out, _, _, home = built
    runner = CliRunner()
    one = tmp_path / "tasks"
    shutil.copytree(out / "numpy_sim__simulate_diffusion", one / "numpy_sim__simulate_diffusion")
    res = runner.invoke(app, ["validate", str(one), "--reruns", "1"], env={"VERIFORGE_HOME": str(home)})
    assert res.exit_code == 0, res.output
    assert res.output.startswith("ok   numpy_sim__simulate_diffusion")
    # an evaluator that passes everything must be caught by the negative controls
    task = json.loads((one / "numpy_sim__simulate_diffusion" / "task.json").read_text())
    script = one / "numpy_sim__simulate_diffusion" / "eval" / task["eval_script_name"]
    script.write_text("def eval(pred_dir='pred_results', gold_dir='gold_results'):\n    return True, 'ok'\n")
    res = runner.invoke(app, ["validate", str(one), "--reruns", "1"], env={"VERIFORGE_HOME": str(home)})
    assert (
        res.exit_code == 1 and "FAIL numpy_sim__simulate_diffusion" in res.output and "missing" in res.output
    )
    # the build command prints the per-stage report (everything cached by now)
    res = runner.invoke(
        app,
        ["build", str(FIXTURES / "numpy_sim"), "--out", str(out), "--env-mode", "reuse", "--timeout", "120"],
        env={"VERIFORGE_HOME": str(home)},
    )
    assert res.exit_code == 0, res.output
    assert "setup.py: packaging/configuration script" in res.output
    assert "gold runs passing: 1" in res.output and "program failures: 1" in res.output


def test_cli_run_and_export_say_when_unavailable(tmp_path):
    res = CliRunner().invoke(app, ["export", str(tmp_path)])
    assert res.exit_code in (0, 1, 2)
    if res.exit_code == 2:
        assert "not available" in res.output or "error" in res.output
