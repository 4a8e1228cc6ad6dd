"""Programs that only display figures get them saved as outputs; Python 2 programs are converted.
Both are mined, rewritten and built end to end (gold run, recorded plot data, validation)."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

from veriforge.discovery.display import SAVE_FN, capture_figures, python2_to_3
from veriforge.discovery.mine import CAPTURED, NO_OUTPUTS, mine_repository

DATA = "group,value\na,1.0\nb,2.5\na,1.5\nb,3.0\n"


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def _notebook(cells: list[str]) -> str:
    return json.dumps(
        {
            "cells": [{"cell_type": "code", "source": c, "outputs": [], "metadata": {}} for c in cells],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


NB_CELLS = [
    "import pandas as pd\nimport matplotlib.pyplot as plt\ndf = pd.read_csv('../data/obs.csv')",
    "means = df.groupby('group').value.mean()\nmeans.plot.bar()",  # shown inline at the cell's end
    "fig, ax = plt.subplots()\nax.plot(df.value.values, 'o-')\nax.set_title('raw')",
    "print(means)",
]

SHOW_SCRIPT = """\
\"\"\"Plots group sums.\"\"\"
from __future__ import annotations
import pandas as pd
import matplotlib.pyplot as plt


def draw(df):
    df.groupby("group").value.sum().plot.bar()
    plt.show()


draw(pd.read_csv("data/obs.csv"))
plt.plot([1, 2, 3])
plt.show()
"""

PY2 = """\
import pandas as pd
df = pd.read_csv("data/obs.csv")
sums = df.groupby("group").value.sum()
print "sums:", dict(sums)
for k, v in sums.iteritems():
    print k, v
sums.to_csv("results/sums.csv")
"""


def test_capture_replaces_show_calls_and_saves_at_cell_ends():
    src = SHOW_SCRIPT
    out = capture_figures(src, ast.parse(src), ["matplotlib", "pandas"], "script")
    assert out is not None and "plt.show()" not in out
    assert out.count(f"{SAVE_FN}()") == 3  # two show() calls and the end of the program
    assert out.startswith('"""Plots group sums."""\nfrom __future__ import annotations\n')  # future stays first
    ast.parse(out)
    nb_src = "# In[1]:\nimport matplotlib.pyplot as plt\n\n# In[2]:\nplt.plot([1])\n\n# In[3]:\nx = 1\n"
    nb = capture_figures(nb_src, ast.parse(nb_src), ["matplotlib"], "notebook")
    assert nb is not None and nb.count(f"{SAVE_FN}()") == 3  # before cells 2 and 3, and at the end
    assert capture_figures("print(1)\n", ast.parse("print(1)\n"), ["numpy"], "script") is None
    stats_only = "import matplotlib.pyplot as plt\nfrom scipy import stats\nprint(stats.ttest_rel([1, 2], [2, 3]))\n"
    assert capture_figures(stats_only, ast.parse(stats_only), ["matplotlib", "scipy"], "script") is None


def test_python2_conversion_only_when_the_result_parses():
    converted = python2_to_3(PY2)
    assert converted is not None and 'print("sums:", dict(sums))' in converted
    assert python2_to_3("def f(:\n    pass\n") is None  # not Python 2 either


def test_display_only_and_python2_programs_are_mined_with_their_changes(tmp_path):
    _write(tmp_path, "data/obs.csv", DATA)
    _write(tmp_path, "nb/look.ipynb", _notebook(NB_CELLS))
    _write(tmp_path, "show.py", SHOW_SCRIPT)
    _write(tmp_path, "legacy.py", PY2)
    _write(tmp_path, "just_prints.py", "import pandas as pd\nprint(pd.read_csv('data/obs.csv').sum())\n")
    res = mine_repository(tmp_path)
    cands = {c.path: c for c in res.candidates}
    skipped = {s.path: s.reason for s in res.skipped}
    assert set(cands) == {"nb/look.ipynb", "show.py", "legacy.py"}, skipped
    assert skipped["just_prints.py"] == NO_OUTPUTS  # prints only, no plotting: still not a task
    assert cands["nb/look.ipynb"].source_changes == [CAPTURED]
    assert cands["legacy.py"].source_changes[0].startswith("converted from Python 2 by the 2to3 fixers")
    assert "print(k, v)" in cands["legacy.py"].source


def test_display_only_notebook_and_python2_script_build_and_validate(tmp_path, build_repo):
    repo = tmp_path / "repo"
    _write(repo, "data/obs.csv", DATA)
    _write(repo, "nb/look.ipynb", _notebook(NB_CELLS))
    _write(repo, "legacy.py", textwrap.dedent(PY2).replace("iteritems", "items"))
    report = build_repo(repo)
    status = {t.source: (t.status, t.reason) for t in report.tasks}
    assert status == {"nb/look.ipynb": ("built", ""), "legacy.py": ("built", "")}, status
    nb = next(Path(t.task_dir) for t in report.tasks if t.source == "nb/look.ipynb")
    meta = json.loads((nb / "task.json").read_text())
    assert meta["veriforge"]["outputs"] == ["figure_1.png", "figure_2.png"]  # cell 2's bars, cell 3's line
    assert meta["veriforge"]["source_changes"] == [CAPTURED]
    bars = json.loads((nb / "gold_results" / ".plotdata" / "figure_1.png.json").read_text())
    assert "bar" in json.dumps(bars)  # judged by its data, like any figure output
    legacy = next(Path(t.task_dir) for t in report.tasks if t.source == "legacy.py")
    assert (legacy / "gold_results" / "sums.csv").read_text().splitlines() == ["group,value", "a,2.5", "b,5.5"]
