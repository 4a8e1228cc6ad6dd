"""Repair of drifted gold programs: each rule fires only on its error and yields code that runs with
today's libraries; failure classes (infrastructure / machine / program); the gold stage repairs,
re-runs and records the diff in the task; model repair is bounded to small edits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from veriforge.discovery.goldrun import classify_failure, failure_class
from veriforge.discovery.repair import apply_rules, model_repair, unified_diff
from veriforge.llm import LLMClient
from veriforge.llm.backends.scripted import ScriptedBackend

TB = 'Traceback (most recent call last):\n  File "p.py", line 3, in <module>\n    x()\n'


def _run(source: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "prog.py"
    path.write_text(source)
    env = {**os.environ, "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, cwd=tmp_path, env=env)


def _repair_until_it_runs(source: str, tmp_path: Path, rounds: int = 4) -> tuple[str, list[str], str]:
    """What the gold stage does: run, and on failure apply the matching rule; returns (source, rules, stdout)."""
    used: list[str] = []
    for _ in range(rounds):
        proc = _run(source, tmp_path)
        if proc.returncode == 0:
            return source, used, proc.stdout
        fixed = apply_rules(source, proc.stderr)
        assert fixed is not None, proc.stderr[-600:]
        source, rule = fixed
        used.append(rule.name)
    raise AssertionError("still failing")


def test_numpy_aliases_pandas_append_and_ix_are_repaired_into_running_code(tmp_path):
    source = (
        "import numpy as np\nimport pandas as pd\n"
        "rows = []\nrows.append(1)\n"  # a list append must keep working
        "df = pd.DataFrame({'a': np.array([1, 2], dtype=np.float), 'b': [3, 4]})\n"
        "df = df.append({'a': 5.0, 'b': 6}, ignore_index=True)\n"
        "df = df.append(pd.DataFrame({'a': [7.0], 'b': [8]}), ignore_index=True)\n"
        "n = np.int(df.ix[0, 'b'])\n"
        "print(df['a'].tolist(), n, rows, np.float64(1.5))\n"
    )
    fixed, used, out = _repair_until_it_runs(source, tmp_path)
    assert out.strip() == "[1.0, 2.0, 5.0, 7.0] 3 [1] 1.5"
    assert used == ["numpy-removed-alias", "pandas-append", "pandas-ix"]
    assert "np.float64(1.5)" in fixed and "rows.append(1)" not in fixed  # goes through the helper
    diff = unified_diff(source, fixed, "prog.py")
    assert "-df = pd.DataFrame({'a': np.array([1, 2], dtype=np.float)" in diff and "+++ b/prog.py" in diff


def test_matplotlib_keyword_style_and_scipy_names(tmp_path):
    source = (
        "import matplotlib.pyplot as plt\nfrom scipy import mean, stats\nfrom scipy.misc import comb\n"
        "plt.style.use('seaborn-whitegrid')\n"
        "n, _, _ = plt.hist([1, 2, 2, 3], bins=3, normed=True)\n"
        "print(round(float(mean([1, 2, 3])), 1), int(comb(5, 2)), round(float(sum(n)), 2), stats.norm.cdf(0))\n"
    )
    fixed, used, out = _repair_until_it_runs(source, tmp_path, rounds=5)
    assert out.split()[:2] == ["2.0", "10"] and out.split()[3] == "0.5"
    assert set(used) == {"scipy-numpy-reexport", "scipy-misc-special", "matplotlib-seaborn-style", "renamed-keyword"}
    assert "density=True" in fixed and "'seaborn-v0_8-whitegrid'" in fixed and "from numpy import mean" in fixed


def test_surplus_tick_labels_are_fitted_to_the_fixed_ticks_as_old_matplotlib_did(tmp_path):
    source = (
        '"""Heatmap of rule accuracies (nvc-style)."""\n'
        "import matplotlib.pyplot as plt\n"
        "fig, ax = plt.subplots()\n"
        "ax.set_xticks([0, 1, 2])\n"
        "ax.set_xticklabels(['a', 'b', 'c', 'd', 'e', 'f'])\n"
        "ax.set_yticks([0, 1, 2])\n"
        "ax.set_yticklabels(['x'])\n"
        "print([t.get_text() for t in ax.get_xticklabels()], [t.get_text() for t in ax.get_yticklabels()])\n"
    )
    fixed, used, out = _repair_until_it_runs(source, tmp_path)
    assert used == ["matplotlib-fixed-ticklabels"]
    assert out.strip() == "['a', 'b', 'c'] ['x', '', '']"
    assert fixed.startswith('"""Heatmap of rule accuracies (nvc-style)."""\nimport matplotlib.axis as _vf_axis')


def test_call_specific_keyword_rename_touches_only_that_function():
    source = "p = ggplot(df) + facet_grid(facets='Sign~Type')\nq = other(facets=1)\n"
    err = TB + "TypeError: facet_grid.__init__() got an unexpected keyword argument 'facets'"
    new, rule = apply_rules(source, err)
    assert rule.name == "renamed-keyword"
    assert new == "p = ggplot(df) + facet_grid(rows='Sign~Type')\nq = other(facets=1)\n"


def test_plotnine_theme_elements_move_to_the_package():
    source = "t = themes.theme(axis_title_y=themes.element_text(angle=90), x=plotnine.themes.element_blank())\n"
    err = TB + "AttributeError: module 'plotnine.themes' has no attribute 'element_text'"
    new, rule = apply_rules(source, err)
    assert rule.name == "plotnine-theme-elements" and new == (
        "t = themes.theme(axis_title_y=__import__('plotnine').element_text(angle=90), "
        "x=__import__('plotnine').element_blank())\n"
    )


def test_rules_fire_only_on_their_error():
    source = "import numpy as np\nx = np.float(3)\ny = df.append(z)\n"
    assert apply_rules(source, TB + "KeyError: 'diffusivity'") is None
    assert apply_rules(source, TB + "AttributeError: module 'numpy' has no attribute 'trapezoid'") is None
    # a warning mentioning the alias before the real traceback does not count
    noisy = "DeprecationWarning: module 'numpy' has no attribute 'float'\n" + TB + "ValueError: bad"
    assert apply_rules(source, noisy) is None
    new, rule = apply_rules(source, TB + "AttributeError: module 'numpy' has no attribute 'float'")
    assert rule.name == "numpy-removed-alias" and "x = float(3)" in new and "df.append" in new


def test_cpu_count_minus_k_is_a_machine_failure_and_gets_at_least_one_worker(tmp_path):
    k = (os.cpu_count() or 1) + 1
    source = (
        "from multiprocessing import Pool, cpu_count\n"
        "if __name__ == '__main__':\n"
        f"    with Pool(cpu_count() - {k}) as pool:\n"
        "        print(sum(pool.map(abs, [-1, -2, 3])))\n"
    )
    proc = _run(source, tmp_path)
    fc = failure_class("crashed", 1, proc.stderr, [], source=source)
    assert (fc.kind, fc.code) == ("machine", "cpu-count") and f"cpu_count() - {k}" in fc.reason
    fixed, used, out = _repair_until_it_runs(source, tmp_path)
    assert used == ["cpu-count-minus-k"] and out.strip() == "6" and f"max(1, cpu_count() - {k})" in fixed


@pytest.mark.parametrize(
    ("stderr", "kind", "code", "needle"),
    [
        (TB + "FileNotFoundError: [Errno 2] No such file or directory: 'ffmpeg'", "machine", "system-tool", "ffmp"),
        (TB + "RuntimeError: Requested MovieWriter (ffmpeg) not available", "machine", "system-tool", "ffmpeg"),
        (
            TB + "RuntimeError: Failed to process string with tex because latex could not be found",
            "machine",
            "system-tool",
            "latex",
        ),
        (TB + "FileNotFoundError: [Errno 2] No such file or directory: 'a.csv'", "infrastructure", "missing-data", ""),
        (TB + "AttributeError: 'Series' object has no attribute 'ix'", "infrastructure", "library-drift", "pandas"),
        (TB + "ImportError: cannot import name 'mean' from 'scipy'", "infrastructure", "library-drift", "scipy"),
        (TB + "ModuleNotFoundError: No module named 'sklearn.grid_search'", "infrastructure", "library-drift", ""),
        (TB + "ModuleNotFoundError: No module named 'seaborn'", "infrastructure", "dependency", "seaborn"),
        (TB + "KeyError: 'x'", "program", "exception", "KeyError"),
        (
            TB + "AttributeError: `np.NaN` was removed in the NumPy 2.0 release. Use `np.nan` instead.",
            "infrastructure",
            "library-drift",
            "numpy-removed-alias",
        ),
    ],
)
def test_failure_classes(stderr, kind, code, needle):
    """Drift, missing data, missing tools, missing dependencies and bugs each get their own class."""
    fc = failure_class("crashed", 1, stderr, [])
    assert (fc.kind, fc.code) == (kind, code) and needle in fc.reason
    assert classify_failure("crashed", 1, stderr, []) == (fc.kind, fc.reason)


def _client(replies: list[dict[str, str]]) -> LLMClient:
    return LLMClient(ScriptedBackend(replies), model="scripted-test")


def test_model_repair_accepts_a_small_fix_and_refuses_a_rewrite():
    source = "import pandas as pd\n" + "".join(f"x{i} = {i}\n" for i in range(30)) + "v = df.lookup([0], ['a'])\n"
    err = TB + "AttributeError: 'DataFrame' object has no attribute 'lookup'"
    small = source.replace("df.lookup([0], ['a'])", "df.at[0, 'a']")
    got = model_repair(source, err, "p.py", _client([{"text": f"```python\n{small}```", "match": "lookup"}]))
    assert got == small
    rewrite = "import pandas as pd\nprint('something else entirely')\n"
    assert model_repair(source, err, "p.py", _client([{"text": f"```python\n{rewrite}```"}])) is None
    assert model_repair(source, err, "p.py", _client([{"text": "no code"}])) is None


DRIFTED = """import numpy as np
import pandas as pd

df = pd.read_csv("data/runs.csv")
out = pd.DataFrame(columns=["group", "mean"])
for g, sub in df.groupby("group"):
    out = out.append({"group": g, "mean": np.float(sub["value"].mean())}, ignore_index=True)
out.to_csv("results/means.csv", index=False)
"""

LOOKUP = """import pandas as pd

df = pd.read_csv("data/runs.csv")
picked = df.lookup([0, 1], ["value", "value"])
pd.DataFrame({"picked": picked}).to_csv("results/picked.csv", index=False)
"""

NEEDS_TOOL = """import subprocess
import pandas as pd

df = pd.read_csv("data/runs.csv")
df.to_csv("results/copy.csv", index=False)
subprocess.run(["veriforge-no-such-tool", "-i", "results/copy.csv"], check=True)
"""


@pytest.mark.slow
def test_build_repairs_drift_records_the_diff_and_counts_failure_classes(tmp_path, monkeypatch):
    from veriforge.core.store import RunStore
    from veriforge.discovery.build import BuildConfig, build_tasks

    monkeypatch.setenv("VERIFORGE_HOME", str(tmp_path / "home"))
    repo = tmp_path / "drifty"
    (repo / "data").mkdir(parents=True)
    rows = ["group,value"] + [f"{'ab'[i % 2]},{i * 1.5}" for i in range(12)]
    (repo / "data" / "runs.csv").write_text("\n".join(rows) + "\n")
    (repo / "group_means.py").write_text(DRIFTED)
    (repo / "pick_values.py").write_text(LOOKUP)
    (repo / "convert_runs.py").write_text(NEEDS_TOOL)

    def model(request, _k):
        """Repairs the program it is shown (the standalone one); answers any other prompt plainly."""
        prompt = request.messages[-1].content
        if "newer library versions" not in prompt:
            return "Compute what the program computes."
        program = prompt.rsplit("```python\n", 1)[1].rsplit("```", 1)[0]
        fixed = program.replace('df.lookup([0, 1], ["value", "value"])', 'df["value"].iloc[[0, 1]].to_numpy()')
        return f"```python\n{fixed}```"

    client = LLMClient(ScriptedBackend(model), model="scripted-test")
    cfg = BuildConfig(env_mode="reuse", timeout_s=120, validate_reruns=1)
    with RunStore(tmp_path / "runs.sqlite") as store:
        report = build_tasks(repo, tmp_path / "out", cfg, store=store, client=client)
    by_id = {t.instance_id: t for t in report.tasks}
    means = by_id["drifty__group_means"]
    assert means.status == "built", means.reason
    task = json.loads((tmp_path / "out" / "drifty__group_means" / "task.json").read_text())
    repairs = task["veriforge"]["repairs"]
    # out.append is looked up before its argument np.float(...) is evaluated
    assert [r["by"] for r in repairs] == ["rule:pandas-append", "rule:numpy-removed-alias"]
    assert repairs[-1]["ok"] and "+    out = _vf_append(out, " in repairs[-1]["diff"]
    gold = (tmp_path / "out" / "drifty__group_means" / "gold_program").glob("*.py")
    assert "_vf_append" in next(gold).read_text()
    picked = by_id["drifty__pick_values"]
    assert picked.status == "built", picked.reason
    assert [r["by"] for r in picked.stages["gold"]["detail"]["repairs"]] == ["model"]
    tool = by_id["drifty__convert_runs"]
    assert (tool.failure_kind, tool.failed_stage) == ("machine", "gold")
    assert "needs system tool veriforge-no-such-tool" in tool.reason
    s = report.summary()
    assert s["failures"]["by_reason"] == {"gold/system-tool": 1} and s["machine_failures"] == 1
    assert s["repairs"] == {"gold_runs_repaired": 2, "applied": {"model": 1, "rule:numpy-removed-alias": 1,
                                                                  "rule:pandas-append": 1}}
    assert s["era"]["tasks_with_era"] == 0  # reuse mode: no era cut
    # pick_values and convert_runs import only pandas: one shared environment, its disk split in two
    env_of = {t.instance_id: t.stages["env"]["detail"] for t in report.tasks}
    shared = env_of["drifty__pick_values"]
    assert shared["env_dir"] == env_of["drifty__convert_runs"]["env_dir"] != env_of["drifty__group_means"]["env_dir"]
    assert s["disk"]["per_task_bytes"]["drifty__pick_values"] == shared["disk_bytes"] // 2 > 0
