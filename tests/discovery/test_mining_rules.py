"""Mining rules that used to lose real analyses: test-named statistics scripts, constant path
expressions, ``__file__``-relative idioms (mined, rewritten and run), notebook size, ambiguous inputs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from veriforge.discovery.mine import MineConfig, RepoIndex, mine_repository
from veriforge.discovery.standalone import make_standalone

DATA = "group,value\na,1.0\nb,2.5\na,1.5\nb,3.0\n"


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(textwrap.dedent(text))


def _mine(root: Path, **kw):
    res = mine_repository(root, **kw)
    return {c.path: c for c in res.candidates}, {s.path: s.reason for s in res.skipped}


ANALYSIS = """
    import pandas as pd
    df = pd.read_csv("data/obs.csv")
    df.groupby("group").value.mean().to_csv("results/means.csv")
"""


def test_test_named_statistics_scripts_are_mined_real_tests_are_not(tmp_path):
    _write(tmp_path, "data/obs.csv", DATA)
    for name in ("t_test.py", "chi2_test.py", "ab_test.py", "test_hypothesis_power.py"):
        _write(tmp_path, name, ANALYSIS)
    _write(tmp_path, "test_io.py", "import pytest\n" + textwrap.dedent(ANALYSIS))
    _write(tmp_path, "loader_test.py", textwrap.dedent(ANALYSIS) + "\ndef test_loads():\n    assert True\n")
    _write(
        tmp_path,
        "model_test.py",
        "import unittest\nclass ModelTest(unittest.TestCase):\n    def test_x(self):\n        pass\n",
    )
    _write(tmp_path, "tests/helper_analysis.py", ANALYSIS)  # inside a tests/ folder: test code
    cands, skipped = _mine(tmp_path)
    assert set(cands) == {"t_test.py", "chi2_test.py", "ab_test.py", "test_hypothesis_power.py"}
    assert skipped["test_io.py"] == "test code (imports pytest)"
    assert skipped["loader_test.py"] == "test code (defines test function test_loads())"
    assert skipped["model_test.py"] == "test code (imports unittest)"
    assert skipped["tests/helper_analysis.py"] == "test code"


@pytest.mark.parametrize(
    "expr",
    [
        '"{}/obs.csv".format(DATA)',
        '"{d}/obs.csv".format(d=DATA)',
        'TEMPLATE.format(DATA)',
        '"%s/obs.csv" % DATA',
        '"%s/%s" % (DATA, "obs.csv")',
        'f"{DATA}/obs.csv"',
        'f"data/{NAME}.csv"',
        'os.path.join(DATA, NAME + ".csv")',
        'os.path.join(os.getcwd(), "data", "obs.csv")',
        '"/".join([DATA, "obs.csv"])',
        '"/".join([os.path.split(os.path.abspath(__file__))[0], "data", "obs.csv"])',
        'Path(DATA).joinpath("obs.csv")',
    ],
)
def test_constant_path_expressions_resolve_and_rewrite(tmp_path, expr):
    _write(tmp_path, "data/obs.csv", DATA)
    src = f"""
        import os
        from pathlib import Path
        import pandas as pd
        DATA = "data"
        NAME = "obs"
        OUT = "results"
        TEMPLATE = "{{}}/obs.csv"
        df = pd.read_csv({expr})
        df.to_csv("{{}}/summary.csv".format(OUT))
        df.describe().to_csv("%s/describe_%s.csv" % (OUT, NAME))
    """
    _write(tmp_path, "analyse.py", src)
    cands, skipped = _mine(tmp_path)
    assert "analyse.py" in cands, skipped
    c = cands["analyse.py"]
    assert c.datasets == ["data/obs.csv"] and c.warnings == []
    assert [w["value"] for w in c.writes] == ["results/summary.csv", "results/describe_obs.csv"]
    sa = make_standalone(c, tmp_path)
    assert sa.datasets == ["data/obs.csv"]
    assert sa.outputs == ["pred_results/summary.csv", "pred_results/describe_obs.csv"]


FILE_IDIOMS = {
    "join_dirname": """
        import os
        import pandas as pd
        HERE = os.path.dirname(os.path.abspath(__file__))
        df = pd.read_csv(os.path.join(os.path.dirname(__file__), "..", "data", "obs.csv"))
        out = os.path.join(HERE, "..", "results")
        os.makedirs(out, exist_ok=True)
        df.groupby("group").value.sum().to_csv(os.path.join(out, "sums.csv"))
    """,
    "pathlib_parent_parent": """
        from pathlib import Path
        import pandas as pd
        DATA = Path(__file__).resolve().parent.parent / "data"
        RESULTS = Path(__file__).resolve().parents[1] / "results"
        df = pd.read_csv(DATA / "obs.csv")
        RESULTS.mkdir(parents=True, exist_ok=True)
        df.groupby("group").value.sum().to_csv(RESULTS / "sums.csv")
    """,
}


def test_file_relative_idioms_build_end_to_end(tmp_path, build_repo):
    """mine -> standalone rewrite -> environment -> gold run -> evaluator validation, both idioms."""
    repo = tmp_path / "repo"
    _write(repo, "data/obs.csv", DATA)
    for idiom, src in FILE_IDIOMS.items():
        _write(repo, f"scripts/{idiom}.py", src)
    report = build_repo(repo)
    assert {t.source: t.status for t in report.tasks} == {f"scripts/{i}.py": "built" for i in FILE_IDIOMS}, [
        t.reason for t in report.tasks
    ]
    for t in report.tasks:
        gold = Path(t.task_dir) / "gold_results" / "sums.csv"
        assert gold.read_text().splitlines() == ["group,value", "a,2.5", "b,5.5"]


def _run_in_task_layout(work: Path, sa, dataset: str, pred_results: bool = True) -> None:
    """Run a rewritten program as the harness does (cwd = task folder, program in gold_program/,
    DATA at datasets/<dataset>) and check it wrote the group sums to pred_results/sums.csv."""
    (work / "datasets" / dataset).parent.mkdir(parents=True)
    (work / "datasets" / dataset).write_text(DATA)
    if pred_results:
        (work / "pred_results").mkdir()  # the runtime layout has it (empty)
    (work / "gold_program").mkdir()
    (work / "gold_program" / sa.program_name).write_text(sa.program)
    proc = subprocess.run(
        [sys.executable, f"gold_program/{sa.program_name}"], cwd=work, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert (work / "pred_results" / "sums.csv").read_text().splitlines() == ["group,value", "a,2.5", "b,5.5"]


@pytest.mark.parametrize("idiom", sorted(FILE_IDIOMS))
def test_file_relative_idioms_mine_rewrite_and_run(tmp_path, idiom):
    repo = tmp_path / "repo"
    _write(repo, "data/obs.csv", DATA)
    _write(repo, "scripts/sums.py", FILE_IDIOMS[idiom])
    cands, skipped = _mine(repo)
    assert "scripts/sums.py" in cands, skipped
    sa = make_standalone(cands["scripts/sums.py"], repo)
    assert sa.datasets == ["data/obs.csv"] and sa.outputs == ["pred_results/sums.csv"]
    # the rewritten program runs in the task layout (cwd = task folder, program elsewhere) and
    # reads datasets/<repo path>, whatever __file__ now is
    _run_in_task_layout(tmp_path / "task", sa, "data/obs.csv", pred_results=False)


def test_notebook_measured_by_code_not_outputs(tmp_path):
    _write(tmp_path, "data/obs.csv", DATA)
    code = textwrap.dedent(ANALYSIS)
    big_png = "iVBORw0KGgo" * 60_000  # ~660 kB of embedded image output
    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Means\n"]},
            {
                "cell_type": "code",
                "metadata": {},
                "execution_count": 1,
                "source": code.splitlines(keepends=True),
                "outputs": [{"output_type": "display_data", "data": {"image/png": big_png}, "metadata": {}}],
            },
        ],
    }
    (tmp_path / "means.ipynb").write_text(json.dumps(nb))
    assert (tmp_path / "means.ipynb").stat().st_size > 200_000
    cands, skipped = _mine(tmp_path)
    assert "means.ipynb" in cands, skipped
    # the limit still applies to the code itself
    _, skipped = _mine(tmp_path, cfg=MineConfig(max_source_bytes=50))
    assert skipped["means.ipynb"].startswith("oversized (code cells")


def test_ambiguous_input_prefers_nearest_file_and_is_reported(tmp_path):
    # exp_a sorts first alphabetically; the script lives in exp_b, so exp_b's file is nearest
    _write(tmp_path, "exp_a/results.csv", DATA)
    _write(tmp_path, "exp_b/results.csv", DATA.replace("1.0", "9.0"))
    _write(
        tmp_path,
        "exp_b/code/analyse.py",
        """
        import pandas as pd
        df = pd.read_csv("/Users/alice/project/results.csv")
        df.describe().to_csv("summary.csv")
        """,
    )
    cands, _ = _mine(tmp_path)
    c = cands["exp_b/code/analyse.py"]
    assert c.datasets == ["exp_b/results.csv"]
    assert c.ambiguous_inputs == [
        {
            "line": 3,
            "call": "pd.read_csv",
            "value": "/Users/alice/project/results.csv",
            "chosen": "exp_b/results.csv",
            "alternatives": ["exp_a/results.csv"],
            "rule": "partial path match: only the last 1 part(s) of the path agree; "
            "longest match, then nearest to the script",
        }
    ]
    assert any(w.startswith("ambiguous input line 3") and "exp_a/results.csv" in w for w in c.warnings)
    # a relative path that exists under the root and under the script's folder is reported too
    _write(tmp_path, "data/obs.csv", DATA)
    _write(tmp_path, "scripts/data/obs.csv", DATA)
    res = RepoIndex(tmp_path).resolve("data/obs.csv", "scripts")
    assert (res.path, res.alternatives) == ("data/obs.csv", ["scripts/data/obs.csv"])
    assert RepoIndex(tmp_path).resolve("exp_a/results.csv", "").alternatives == []


def test_ambiguous_input_reaches_task_json_and_build_report(tmp_path, monkeypatch):
    from veriforge.core.store import RunStore
    from veriforge.discovery.build import BuildConfig, build_tasks

    monkeypatch.setenv("VERIFORGE_HOME", str(tmp_path / "home"))
    repo = tmp_path / "repo"
    _write(repo, "exp_a/obs.csv", DATA)
    _write(repo, "exp_b/obs.csv", DATA.replace("1.0", "9.0"))
    _write(
        repo,
        "exp_b/code/means.py",
        """
        import pandas as pd
        df = pd.read_csv("/home/bob/lab/obs.csv")
        df.groupby("group").value.mean().to_csv("means.csv")
        """,
    )
    store = RunStore(tmp_path / "runs.sqlite")
    try:
        report = build_tasks(
            repo, tmp_path / "out", BuildConfig(env_mode="reuse", timeout_s=120, validate_reruns=1), store=store
        )
    finally:
        store.close()
    assert [t.status for t in report.tasks] == ["built"], [t.reason for t in report.tasks]
    task = json.loads((Path(report.tasks[0].task_dir) / "task.json").read_text())
    amb = task["veriforge"]["ambiguous_inputs"]
    assert [(a["chosen"], a["alternatives"]) for a in amb] == [("exp_b/obs.csv", ["exp_a/obs.csv"])]
    saved = json.loads((tmp_path / "out" / "d3gym_build.json").read_text())
    assert saved["summary"]["warnings"] == 1
    warning = saved["warnings"][0]
    assert warning["source"] == "exp_b/code/means.py" and "exp_a/obs.csv" in warning["warning"]


def test_chdir_to_another_machine_is_neutralised(tmp_path):
    """A Colab export starts with os.chdir('/content/drive/...'); the rewritten program must stay in
    the task folder, where datasets/ and pred_results/ are."""
    repo = tmp_path / "repo"
    _write(repo, "Sample data.csv", DATA)
    _write(
        repo,
        "t_test.py",
        """
        import os
        import pandas as pd
        os.chdir(r'/content/drive/MyDrive/course data')
        df = pd.read_csv('Sample data.csv')
        df.groupby("group").value.sum().to_csv('ttest_result.csv')
        """,
    )
    cands, skipped = _mine(repo)
    assert "t_test.py" in cands, skipped
    sa = make_standalone(cands["t_test.py"], repo)
    assert "os.chdir(r'/content" not in sa.program and 'os.chdir(".")' in sa.program
    assert any("chdir" in w for w in sa.warnings)
    work = tmp_path / "task"
    (work / "datasets").mkdir(parents=True)
    (work / "datasets" / "Sample data.csv").write_text(DATA)
    (work / "pred_results").mkdir()
    (work / "t_test.py").write_text(sa.program)
    proc = subprocess.run([sys.executable, "t_test.py"], cwd=work, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (work / "pred_results" / "ttest_result.csv").read_text().splitlines()[1] == "a,2.5"


def test_unresolvable_output_path_is_named_as_such(tmp_path):
    _write(tmp_path, "data/obs.csv", DATA)
    _write(
        tmp_path,
        "per_group.py",
        """
        import sys
        import pandas as pd
        df = pd.read_csv("data/obs.csv")
        for g, part in df.groupby("group"):
            part.to_csv(sys.argv[1] + g + ".csv")
        """,
    )
    _, skipped = _mine(tmp_path)
    assert skipped["per_group.py"] == "output paths could not be resolved statically (line 6 part.to_csv(...))"


def test_author_machine_folders_with_a_trailing_separator_and_a_file_only_in_another_folder(tmp_path):
    """Learn-PsychoPy's shape: `pathin`/`pathout` are the author's absolute folders ending in "/",
    joined by `+`; the data file the script names is absent and a same-named file of another
    experiment exists. The rewrite keeps the separator (was 'pred_resultsplot.csv'), and the
    substitute file is used only as a reported choice, never silently."""
    repo = tmp_path / "repo"
    _write(repo, "Demos/stroop/data/all.csv", DATA)
    _write(
        repo,
        "Labs/Stroop/scripts/make_table.py",
        """
        import pandas as pd
        pathin = '/Users/ethan/GitHub/Learn/Labs/Stroop/experiments/stroop/data/'
        pathout = '/Users/ethan/GitHub/Learn/Labs/Stroop/figures/'
        df = pd.read_csv(pathin + 'all.csv')
        df.groupby('group').value.sum().to_csv(pathout + 'sums.csv')
        """,
    )
    cands, _skipped = _mine(repo)
    c = cands["Labs/Stroop/scripts/make_table.py"]
    assert c.datasets == ["Demos/stroop/data/all.csv"]
    (choice,) = c.ambiguous_inputs
    assert choice["chosen"] == "Demos/stroop/data/all.csv" and choice["rule"].startswith("partial path match")
    assert any(w.startswith("ambiguous input line 5") for w in c.warnings)
    sa = make_standalone(c, repo)
    assert sa.outputs == ["pred_results/sums.csv"]
    _run_in_task_layout(tmp_path / "task", sa, "Demos/stroop/data/all.csv")


def test_a_script_saved_with_a_utf8_bom_is_mined(tmp_path):
    """Windows editors (PsychoPy's Builder among them) start files with U+FEFF; that is no syntax
    error and no sign of Python 2."""
    _write(tmp_path, "data/obs.csv", DATA)
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + textwrap.dedent(ANALYSIS).encode())
    cands, skipped = _mine(tmp_path)
    assert "bom.py" in cands, skipped
    assert not cands["bom.py"].source.startswith("\ufeff")


LISTINGS = """
    import glob, os
    import pandas as pd
    from pathlib import Path

    path = '../data/'
    frames = [pd.read_csv(f) for f in sorted(glob.glob('../data/obs_*.csv'))]
    frames += [pd.read_csv(p) for p in sorted(Path('../data').glob('obs_*.csv'))]
    for m in sorted(os.listdir('models')):
        model_path = 'models' + os.sep + m
        frames.append(pd.read_csv(model_path))
    for n in ('a', 'b'):
        frames.append(pd.read_csv(path + 'obs_' + n + '.csv'))
    os.makedirs('out', exist_ok=True)
    print(os.listdir('.'), os.listdir('out'))
    pd.concat(frames).groupby('group').value.sum().to_csv('out/sums.csv')
"""


def test_folder_listings_patterns_and_known_folder_prefixes_mine_rewrite_and_run(tmp_path):
    repo = tmp_path / "repo"
    _write(repo, "data/obs_a.csv", "group,value\na,1.0\nb,2.0\n")
    _write(repo, "data/obs_b.csv", "group,value\na,0.5\n")
    _write(repo, "data/unrelated.txt", "not read\n")
    _write(repo, "an/models/m1.csv", "group,value\nb,10.0\n")
    _write(repo, "an/run.py", LISTINGS)
    cands, skipped = _mine(repo)
    assert "an/run.py" in cands, skipped
    cand = cands["an/run.py"]
    assert cand.datasets == ["an/models", "data"]  # the listed folders; '.' and its own 'out' are not datasets
    sa = make_standalone(cand, repo)
    assert 'glob.glob("datasets/data/obs_*.csv")' in sa.program  # the pattern survives the rewrite
    assert 'Path("datasets/data").glob(' in sa.program
    assert 'model_path = "datasets/an/models" + os.sep + m' in sa.program
    assert 'path = "datasets/data/"' in sa.program
    work = tmp_path / "task"
    for d in cand.datasets:
        src = repo / d
        for f in src.rglob("*"):
            dst = work / "datasets" / d / f.relative_to(src)
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(f.read_bytes())
    (work / "pred_results").mkdir()
    (work / sa.program_name).write_text(sa.program)
    proc = subprocess.run([sys.executable, sa.program_name], cwd=work, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    # a (1 + 0.5) twice from both globs, + a 1.0 + 0.5 from the prefix reads; b 2 twice + 10 + 2
    assert (work / "pred_results" / "sums.csv").read_text().splitlines() == ["group,value", "a,4.5", "b,16.0"]


def test_a_data_folder_the_program_also_writes_into_is_an_input_without_its_committed_results(tmp_path):
    """Learn-PsychoPy's assemble_data.py: glob the data folder, write all_data.csv into it. The folder is
    the dataset; the committed all_data.csv is the answer and must not be shipped as an input."""
    from veriforge.discovery.package import copy_datasets

    repo = tmp_path / "repo"
    _write(repo, "exp/data/p1.csv", "rt\n0.5\n")
    _write(repo, "exp/data/p2.csv", "rt\n0.7\n")
    _write(repo, "exp/data/all_data.csv", "rt\n0.5\n0.7\n")  # the author's committed result
    _write(repo, "scripts/assemble.py", """
        import glob
        import pandas as pd
        path = '/Users/someone/project/exp/data'
        df = pd.concat([pd.read_csv(f) for f in sorted(glob.glob(path + "/p*.csv"))])
        df.to_csv(path + '/all_data.csv', index=False)
    """)
    cands, _skipped = _mine(repo)
    cand = cands["scripts/assemble.py"]
    assert cand.datasets == ["exp/data"] and cand.dataset_excludes == ["exp/data/all_data.csv"]
    sa = make_standalone(cand, repo)
    assert 'glob.glob("datasets/exp/data/p*.csv")' in sa.program and sa.outputs == ["pred_results/all_data.csv"]
    copy_datasets(repo, sa.datasets, tmp_path / "task", exclude=cand.dataset_excludes)
    assert sorted(p.name for p in (tmp_path / "task/datasets/exp/data").iterdir()) == ["p1.csv", "p2.csv"]


CALLED_WITH = """
    import os
    import pandas as pd


    def process_directory(directory_path, output_file, sep=","):
        names = sorted(f for f in os.listdir(directory_path) if f.endswith(".csv"))
        frames = [pd.read_csv(os.path.join(directory_path, f), sep=sep) for f in names]
        table = pd.concat(frames).groupby("group", as_index=False)["value"].sum()
        table.to_csv(output_file, index=False)


    def main():
        directory_path = "data/sessions"
        output_file = "results/summary.csv"
        process_directory(directory_path, output_file)


    if __name__ == "__main__":
        main()
"""


def test_paths_handed_to_the_programs_own_functions_are_followed_to_their_calls(tmp_path):
    repo = tmp_path / "repo"
    _write(repo, "data/sessions/s1.csv", "group,value\na,1.0\nb,2.0\n")
    _write(repo, "data/sessions/s2.csv", "group,value\na,0.5\n")
    _write(repo, "scripts/summarise.py", CALLED_WITH)
    # the same function called with two different files: which one it reads is not one path
    _write(repo, "scripts/two_calls.py", "import pandas as pd\ndef fetch(p):\n    return pd.read_csv(p)\n"
           "a = fetch('../data/sessions/s1.csv')\nb = fetch('../data/sessions/s2.csv')\n"
           "pd.concat([a, b]).to_csv('out.csv')\n")
    # the same text through two different literals: rewriting one call would leave the other
    _write(repo, "scripts/two_literals.py", "import pandas as pd\ndef fetch(p):\n    return pd.read_csv(p)\n"
           "a = fetch('../data/sessions/s1.csv')\nb = fetch('../data/sessions/s1.csv')\n"
           "pd.concat([a, b]).to_csv('out.csv')\n")
    # called once with a literal, but also handed to map(): the other calls are not seen
    _write(repo, "scripts/mapped.py", "import pandas as pd\ndef fetch(p):\n    return pd.read_csv(p)\n"
           "a = fetch('../data/sessions/s1.csv')\nrest = list(map(fetch, []))\na.to_csv('out.csv')\n")
    cands, skipped = _mine(repo)
    assert "scripts/summarise.py" in cands, skipped
    cand = cands["scripts/summarise.py"]
    assert cand.datasets == ["data/sessions"]
    assert [w["value"] for w in cand.writes] == ["results/summary.csv"]
    for name in ("two_calls", "two_literals", "mapped"):
        assert skipped[f"scripts/{name}.py"].startswith("input paths could not be resolved statically")
    sa = make_standalone(cand, repo)
    assert 'directory_path = "datasets/data/sessions"' in sa.program  # the caller's literal is rewritten
    assert 'output_file = "pred_results/summary.csv"' in sa.program
    work = tmp_path / "task"
    for f in (repo / "data/sessions").iterdir():
        (work / "datasets/data/sessions").mkdir(parents=True, exist_ok=True)
        (work / "datasets/data/sessions" / f.name).write_bytes(f.read_bytes())
    (work / "pred_results").mkdir()
    (work / sa.program_name).write_text(sa.program)
    proc = subprocess.run([sys.executable, sa.program_name], cwd=work, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (work / "pred_results/summary.csv").read_text().splitlines() == ["group,value", "a,1.5", "b,2.0"]


RUN_TIME_NAMES = """
    import os
    from pathlib import Path
    import pandas as pd

    OUT = "results"
    FIGS = Path("figures")
    DATA = "../data/"
    os.makedirs(OUT, exist_ok=True)
    for name in sorted(os.listdir(DATA + "sessions")):
        df = pd.read_csv(os.path.join(DATA, "sessions", name))
        stem = name.split(".")[0]
        df.describe().to_csv(os.path.join(OUT, stem + "_summary.csv"))
        df.head(1).to_csv(OUT + "/" + stem + "_first.csv")
        df.tail(1).to_csv(f"{OUT}/{stem}_last.csv")
        df.sum().to_csv(FIGS / f"{stem}_sum.csv")
        df.to_csv(DATA + "sessions/" + stem + ".bak")  # into the input folder: no output
"""


def test_files_named_at_run_time_in_known_folders_are_outputs_found_by_running(tmp_path):
    repo = tmp_path / "repo"
    _write(repo, "data/sessions/s1.csv", "a,b\n1,2\n3,4\n")
    _write(repo, "scripts/per_session.py", RUN_TIME_NAMES)
    cands, skipped = _mine(repo)
    assert "scripts/per_session.py" in cands, skipped
    cand = cands["scripts/per_session.py"]
    assert [(w["value"], w.get("folder")) for w in cand.writes] == [
        ("results", True), ("results", True), ("results", True), ("figures", True)
    ]
    sa = make_standalone(cand, repo)
    assert 'OUT = "pred_results"' in sa.program and 'FIGS = Path("pred_results")' in sa.program
    assert any("files named at run time go into" in w for w in sa.warnings)  # the .bak into the inputs
    work = _run_in_task(tmp_path / "task", sa, {"data/sessions/s1.csv": "a,b\n1,2\n3,4\n"})
    assert sorted(p.name for p in (work / "pred_results").iterdir()) == [
        "s1_first.csv", "s1_last.csv", "s1_sum.csv", "s1_summary.csv"
    ]
    # a prefix that ends inside a file name names no folder a literal could stand for
    _write(repo, "scripts/prefix.py", "import pandas as pd\nfor n in ['x']:\n"
           "    pd.read_csv('../data/sessions/s1.csv').to_csv('results/subj_' + n + '.csv')\n")
    assert _mine(repo)[1]["scripts/prefix.py"].startswith("output paths could not be resolved statically")


SHARED_ROOT = """
    import pandas as pd

    path = '../data/'
    df = pd.read_csv(path + 'obs.csv')
    df.groupby('group', as_index=False)['value'].sum().to_csv(path + 'sums.csv', index=False)
"""


def test_a_folder_both_read_and_written_is_redirected_at_each_call(tmp_path):
    """`path` names the input folder *and* where results go: no literal could serve both, so each
    call's own argument becomes the literal (it was 'input path shares its root with an output
    path')."""
    repo = tmp_path / "repo"
    _write(repo, "data/obs.csv", "group,value\na,1.0\nb,2.0\na,0.5\n")
    _write(repo, "scripts/sums.py", SHARED_ROOT)
    cands, skipped = _mine(repo)
    assert "scripts/sums.py" in cands, skipped
    sa = make_standalone(cands["scripts/sums.py"], repo)
    assert "path = '../data/'" in sa.program  # left as the author wrote it
    assert 'pd.read_csv("datasets/data/obs.csv")' in sa.program and 'to_csv("pred_results/sums.csv"' in sa.program
    work = _run_in_task(tmp_path / "task", sa, {"data/obs.csv": "group,value\na,1.0\nb,2.0\na,0.5\n"})
    assert (work / "pred_results/sums.csv").read_text().splitlines() == ["group,value", "a,1.5", "b,2.0"]


def _run_in_task(work: Path, sa, datasets: dict[str, str]) -> Path:
    """Run a standalone program in a task-like folder (``datasets/<rel>``, empty ``pred_results``)."""
    for rel, text in datasets.items():
        (work / "datasets" / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / "datasets" / rel).write_text(text)
    (work / "pred_results").mkdir()
    (work / sa.program_name).write_text(sa.program)
    proc = subprocess.run([sys.executable, sa.program_name], cwd=work, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return work
