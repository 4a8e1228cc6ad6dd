"""Repository-local helper modules: mined as a transitive closure, vendored under ``lib/``, on the
import path of every run (gold, agent), described in the instruction; refused with a reason when
they cannot be shipped unchanged."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import pytest

from veriforge.discovery.localmods import helper_api, local_closure
from veriforge.discovery.mine import RepoIndex, mine_repository

DATA = "group,value\na,1.0\nb,2.5\na,1.5\nb,3.0\n"

SCRIPT = """
    import sys
    import pandas as pd
    import stats_aux as aux
    from rules import scoring

    sys.path.append('../shared')
    df = pd.read_csv("../data/obs.csv")
    out = aux.group_sums(df, "group")
    out["score"] = [scoring.score(v) for v in out["value"]]
    out.to_csv("results/sums.csv", index=False)
"""

AUX = '''
    """Helpers of the analysis."""
    import numpy as np
    import style_defaults


    def group_sums(df, key):
        """Sum of each group's values, groups in sorted order."""
        return df.groupby(key, as_index=False)["value"].sum()


    def _private():
        return style_defaults.WIDTH


    if __name__ == "__main__":  # a demo of the author's: never runs when imported
        import pandas as pd
        print(group_sums(pd.read_csv("../data/demo.csv"), "group"))
'''

RULES_INIT = "from rules.scoring import score\n"
SCORING = "def score(v):\n    return round(v * 10)\n"
STYLE = "WIDTH = 3\n"


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(textwrap.dedent(text))


def _repo(root: Path) -> Path:
    _write(root, "data/obs.csv", DATA)
    _write(root, "analysis/run_sums.py", SCRIPT)
    _write(root, "analysis/stats_aux.py", AUX)
    _write(root, "analysis/rules/__init__.py", RULES_INIT)
    _write(root, "analysis/rules/scoring.py", SCORING)
    _write(root, "shared/style_defaults.py", STYLE)  # found only through the sys.path.append
    return root


def _mine(root: Path):
    res = mine_repository(root)
    return {c.path: c for c in res.candidates}, {s.path: s.reason for s in res.skipped}


def test_transitive_closure_with_packages_and_sys_path_folders(tmp_path):
    cands, skipped = _mine(_repo(tmp_path))
    assert "analysis/run_sums.py" in cands, skipped
    cand = cands["analysis/run_sums.py"]
    got = {m["path"]: m["dest"] for m in cand.local_modules}
    assert got == {
        "analysis/stats_aux.py": "stats_aux.py",
        "analysis/rules/__init__.py": "rules/__init__.py",
        "analysis/rules/scoring.py": "rules/scoring.py",
        "shared/style_defaults.py": "style_defaults.py",  # a helper's import, via the script's sys.path
    }
    # the helper's third-party import reaches the environment; local names do not
    assert "numpy" in cand.imports
    assert not {"stats_aux", "rules", "style_defaults"} & set(cand.imports)
    assert all(len(m["sha256"]) == 64 and m["size"] > 0 for m in cand.local_modules)


def test_helper_with_fixed_path_io_is_vendored_redirected(tmp_path):
    """Fixed paths in helpers used to refuse the program; now they are counted and redirected
    (tests/discovery/test_helper_paths.py has the whole behaviour)."""
    _repo(tmp_path)
    fixed_write = '\ndef save(df):\n    df.to_csv("../out/table.csv")\n'
    _write(tmp_path, "analysis/stats_aux.py", textwrap.dedent(AUX) + fixed_write)
    cands, skipped = _mine(tmp_path)
    assert "analysis/run_sums.py" in cands, skipped
    mods = {m["path"]: m for m in cands["analysis/run_sums.py"].local_modules}
    assert mods["analysis/stats_aux.py"]["fixed_io"] == 1  # the __main__ demo's read does not count


def test_oversized_closure_and_unparsable_helper_are_refused(tmp_path):
    root = _repo(tmp_path)
    index = RepoIndex(root)
    src = (root / "analysis/run_sums.py").read_text()
    tree = ast.parse(src)
    imports = ["pandas", "rules", "stats_aux", "sys"]
    mods, _tp = local_closure(index, "analysis/run_sums.py", tree, imports)
    assert len(mods) == 4
    small = local_closure(index, "analysis/run_sums.py", tree, imports, max_bytes=200)
    assert isinstance(small, str) and "too large to vendor" in small
    _write(root, "analysis/stats_aux.py", "def group_sums(df, key:\n    pass\n")
    bad = local_closure(RepoIndex(root), "analysis/run_sums.py", tree, imports)
    assert bad == "repository-local module analysis/stats_aux.py cannot be parsed (SyntaxError)"


def test_a_python2_helper_is_vendored_converted(tmp_path):
    from veriforge.discovery.package import copy_local_modules

    root = _repo(tmp_path / "repo")
    _write(root, "analysis/stats_aux.py", "def group_sums(df, key):\n    print 'grouping by', key\n"
           "    return df.groupby(key, as_index=False)['value'].sum()\n")
    cands, skipped = _mine(root)
    assert "analysis/run_sums.py" in cands, skipped
    mods = {m["path"]: m for m in cands["analysis/run_sums.py"].local_modules}
    assert mods["analysis/stats_aux.py"]["python2"] is True and mods["analysis/rules/scoring.py"]["python2"] is False
    copy_local_modules(root, list(mods.values()), tmp_path / "task")
    assert "print('grouping by', key)" in (tmp_path / "task/lib/stats_aux.py").read_text()


def test_relative_imports_are_still_refused(tmp_path):
    _write(tmp_path, "data/obs.csv", DATA)
    _write(tmp_path, "pkg/__init__.py", "")
    _write(tmp_path, "pkg/helpers.py", SCORING)
    _write(tmp_path, "pkg/main.py", "from . import helpers\nimport pandas as pd\n"
           "pd.read_csv('../data/obs.csv').to_csv('out.csv')\n")
    _cands, skipped = _mine(tmp_path)
    assert skipped["pkg/main.py"] == "uses relative imports: part of a package, not a standalone program"


def test_helper_api_lists_public_callables_with_their_first_doc_line():
    api = helper_api(textwrap.dedent(AUX))
    assert api == ["group_sums(df, key): Sum of each group's values, groups in sorted order."]


def test_vendored_build_runs_gold_and_agent_with_lib_on_the_path(tmp_path, build_repo):
    """mine -> standalone (+ lib/) -> env -> gold -> validation, then an agent program importing
    the helpers through the environment; the Dockerfile ships lib/ too."""
    from veriforge.discovery.env import D3Env

    report = build_repo(_repo(tmp_path / "repo"), dockerfile=True)
    (task,) = [t for t in report.tasks if t.source == "analysis/run_sums.py"]
    assert task.status == "built", task.reason
    tdir = Path(task.task_dir)
    assert (tdir / "lib/stats_aux.py").read_text() == textwrap.dedent(AUX)
    assert (tdir / "lib/rules/scoring.py").is_file() and (tdir / "lib/style_defaults.py").is_file()
    assert (tdir / "gold_results/sums.csv").read_text().splitlines() == [
        "group,value,score", "a,2.5,25", "b,5.5,55"
    ]
    meta = json.loads((tdir / "task.json").read_text())
    lib = meta["veriforge"]["lib"]
    assert lib["dir"] == "lib" and lib["modules"] == ["rules", "stats_aux", "style_defaults"]
    assert {f["source"] for f in lib["files"]} >= {"analysis/stats_aux.py", "shared/style_defaults.py"}
    assert "`import stats_aux`: group_sums(df, key)" in meta["task_inst"]
    assert "COPY lib /task/lib" in (tdir / "Dockerfile").read_text()

    env = D3Env(tdir, max_debug_rounds=1)
    env.reset()
    agent = (
        "import pandas as pd, stats_aux\nfrom rules import score\n"
        "out = stats_aux.group_sums(pd.read_csv('datasets/data/obs.csv'), 'group')\n"
        "out['score'] = [score(v) for v in out['value']]\n"
        "out.to_csv('pred_results/sums.csv', index=False)\n"
    )
    obs, reward, _done, info = env.step(agent)
    assert info["valid_execution"] and info["eval_passed"], obs
    assert reward == 1.0


def test_a_helper_changed_after_mining_is_not_shipped(tmp_path):
    from veriforge.discovery.errors import DiscoveryError
    from veriforge.discovery.package import copy_local_modules

    root = _repo(tmp_path / "repo")
    cands, _ = _mine(root)
    mods = cands["analysis/run_sums.py"].local_modules
    (root / "analysis/stats_aux.py").write_text("def group_sums(df, key):\n    return df\n")
    with pytest.raises(DiscoveryError, match="changed since it was mined"):
        copy_local_modules(root, mods, tmp_path / "task")
