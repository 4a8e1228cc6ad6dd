"""Plotly figures become tasks judged by their data (issue 18, yield).

A notebook whose plotly figure is a cell's last expression and a script that only calls
``fig.show()`` used to be skipped as "writes no outputs"; a figure written with ``write_image``
failed without kaleido. Now the displayed figures are written as ``figure_<n>.json``, every
plotly writer is recorded from the figure object in the matplotlib recorder's schema, and the
same evaluator and validation controls judge them -- for the gold run and the agent's run alike.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("plotly")

from veriforge.discovery.display import PLOTLY_CAPTURED, capture_figures
from veriforge.discovery.env import D3Env
from veriforge.discovery.evalcheck import figure_controls, validate_evaluator
from veriforge.discovery.evalsynth.plan import plan_output
from veriforge.discovery.mine import NO_OUTPUTS, mine_repository
from veriforge.discovery.plotrec_plotly import extract_plotly

DATA = "group,dose,response\n" + "".join(
    f"{g},{d},{base + d * slope + (0.1 * r):.3f}\n"
    for g, base, slope in (("ctrl", 1.0, 0.5), ("low", 1.5, 0.8), ("high", 2.0, 1.4))
    for d in (1, 2, 3)
    for r in (0, 1, 2)
)

NB_CELLS = [
    "import pandas as pd\nimport plotly.express as px\nimport plotly.graph_objects as go\n"
    "df = pd.read_csv('../data/obs.csv')",
    "means = df.groupby('group', as_index=False).response.mean()\n"
    "fig = px.bar(means, x='group', y='response', title='Mean response')\nfig",  # displayed by Jupyter
    "print(len(df))",
    "df.head()",  # a last expression that is no figure: shown as before, no output
]

SCRIPT = """\
\"\"\"Dose-response curves per group.\"\"\"
import pandas as pd
import plotly.graph_objects as go

df = pd.read_csv("data/obs.csv")
fig = go.Figure()
for g, sub in df.groupby("group"):
    s = sub.groupby("dose").response.agg(["mean", "sem"]).reset_index()
    fig.add_trace(go.Scatter(x=s["dose"], y=s["mean"], name=g, mode="lines+markers", error_y=dict(array=s["sem"])))
fig.update_layout(xaxis_title="dose", yaxis_title="response")
fig.show()
"""

# the agent's programs for the notebook task (its output: pred_results/figure_1.json)
AGENT_BAR = """\
import pandas as pd
import plotly.express as px
df = pd.read_csv("datasets/data/obs.csv")
means = df.groupby("group", as_index=False).response.mean(){change}
fig = px.bar(means.iloc[::-1], x="group", y="response", template="plotly_dark", width=640,
             color_discrete_sequence=["red"])
fig.write_json("pred_results/figure_1.json")
"""
# and for the script task: traces in another order, other colours, template and size
AGENT_LINES = """\
import pandas as pd
import plotly.graph_objects as go
df = pd.read_csv("datasets/data/obs.csv")
fig = go.Figure()
groups = {groups}
for g in sorted(groups, reverse=True):
    sub = df[df.group == g]
    s = sub.groupby("dose").response.agg(["mean", "sem"]).reset_index()
    fig.add_trace(go.Scatter(x=s["dose"], y=s["mean"]{scale}, name=groups[g], mode="markers",
                             marker_color="black", error_y=dict(array=s["sem"])))
fig.update_layout(template="simple_white", width=900, height=300, title="restyled")
fig.write_json("pred_results/figure_1.json")
"""


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def _notebook(cells: list[str]) -> str:
    cells_json = [{"cell_type": "code", "source": c, "outputs": [], "metadata": {}} for c in cells]
    return json.dumps({"cells": cells_json, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def _repo(root: Path) -> Path:
    _write(root, "data/obs.csv", DATA)
    _write(root, "nb/explore.ipynb", _notebook(NB_CELLS))
    _write(root, "curves.py", SCRIPT)
    return root


def test_displayed_plotly_figures_are_mined_as_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo(tmp_path / "repo")
    _write(repo, "prints.py", "import pandas as pd\nimport plotly.express as px\nprint(pd.read_csv('data/obs.csv'))\n")
    res = mine_repository(repo)
    cands = {c.path: c for c in res.candidates}
    skipped = {s.path: s.reason for s in res.skipped}
    assert set(cands) == {"nb/explore.ipynb", "curves.py"}, skipped
    assert skipped["prints.py"] == NO_OUTPUTS  # imports plotly, draws nothing: still no task
    assert cands["curves.py"].source_changes == [PLOTLY_CAPTURED]
    nb = cands["nb/explore.ipynb"].source
    assert "_veriforge_display(fig)" in nb and "_veriforge_display(df.head())" in nb
    assert "_veriforge_shown(fig).show()" in cands["curves.py"].source
    # a .show() on anything else keeps working: only a plotly figure is saved when the program runs
    src = "import plotly.express as px\nfig = px.line(x=[1], y=[2])\nclass Pic:\n    def show(self):\n"
    src += "        print('own show')\nPic().show()\nfig.show()\n"
    src += "display(fig, 'table')\n"  # Jupyter's display(), never imported (KimmeridgePyrite's S_model_Old)
    out = capture_figures(src, ast.parse(src), ["plotly"], "script")
    assert out is not None
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pred_results").mkdir()
    exec(compile(out, "<captured>", "exec"), {"__name__": "__main__"})
    printed = capsys.readouterr().out
    assert printed.startswith("own show\n") and "table" in printed  # the rest is displayed as before
    assert sorted(p.name for p in (tmp_path / "pred_results").iterdir()) == ["figure_1.json", "figure_2.json"]


def test_extraction_maps_traces_onto_the_recorded_schema() -> None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=3)
    fig.add_trace(go.Bar(x=["b", "a"], y=[2.0, 1.0], name="bars", error_y=dict(type="percent", value=10)), 1, 1)
    fig.add_trace(go.Box(y=[1.0, 2.0, 3.0], name="A"), 1, 2)
    fig.add_trace(go.Box(y=[4.0, 5.0], name="B"), 1, 2)
    fig.add_trace(go.Heatmap(z=[[1, 2], [3, 4]]), 1, 3)
    fig.update_xaxes(title_text="group", row=1, col=1)
    data = extract_plotly(fig)
    bars_ax, box_ax, heat_ax = data["axes"]
    assert bars_ax["xlabel"] == "group" and bars_ax["xticks"] == [[0.0, "b"], [1.0, "a"]]
    bar, err = bars_ax["series"]
    assert bar["kind"] == "bar" and [b[3] for b in bar["bars"]] == [2.0, 1.0]
    assert err["segments"] == [[0.0, 1.8, 0.0, 2.2], [1.0, 0.9, 1.0, 1.1]]  # 10 % error bars
    assert [s["x"] for s in box_ax["series"]] == [[0.0] * 3, [1.0] * 2]  # boxes at their names
    assert heat_ax["series"][0]["array"] == {"shape": [2, 2], "values": [1.0, 2.0, 3.0, 4.0]}
    assert data["unextracted"] == []
    pic = go.Figure(go.Image(source="data:image/png;base64,iVBORw0KGgo="))
    assert extract_plotly(pic)["unextracted"] == [{"type": "image", "name": ""}]
    # a depth profile (a geochemical log): the traces share y (height), their x is the data, so
    # the swapped-series control exchanges x
    log = go.Figure(
        [go.Scatter(x=[1.0, 2.0], y=[0.0, 5.0], name="Fe"), go.Scatter(x=[3.0, 1.0], y=[0.0, 5.0], name="S")]
    )
    made = {name: pdata for name, _, pdata in figure_controls(b"{}", json.dumps(extract_plotly(log)).encode())}
    swapped = json.loads(made["swapped_series"] or b"{}")["axes"][0]["series"]
    assert [(s["label"], s["x"]) for s in swapped] == [("Fe", [3.0, 1.0]), ("S", [1.0, 2.0])]


def test_unreadable_plotly_figure_is_refused(tmp_path: Path) -> None:
    import plotly.graph_objects as go

    gold = tmp_path / "gold"
    (gold / ".plotdata").mkdir(parents=True)
    fig = go.Figure([go.Scatter(x=[1, 2], y=[3, 4]), go.Image(source="data:image/png;base64,iVBORw0KGgo=")])
    (gold / "fig.json").write_text(fig.to_json())
    (gold / ".plotdata" / "fig.json.json").write_text(json.dumps(extract_plotly(fig)))
    entry = plan_output(gold / "fig.json", "fig.json", None, gold)
    assert entry["kind"] == "unsupported" and "cannot be read from the figure object" in entry["reason"]
    (gold / ".plotdata" / "fig.json.json").write_text(json.dumps(extract_plotly(go.Figure(fig.data[0]))))
    assert plan_output(gold / "fig.json", "fig.json", None, gold)["kind"] == "figure"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One reuse-mode build of the fixture repository (plus a script that writes images/HTML)."""
    from veriforge.core.store import RunStore
    from veriforge.discovery.build import BuildConfig, build_tasks

    tmp = tmp_path_factory.mktemp("plotly")
    repo = _repo(tmp / "repo")
    _write(repo, "export.py", "import pandas as pd\nimport plotly.express as px\n"
           "df = pd.read_csv('data/obs.csv')\nfig = px.scatter(df, x='dose', y='response', color='group')\n"
           "fig.write_image('results/scatter.png')\nfig.write_html('results/scatter.html')\n")
    mp = pytest.MonkeyPatch()
    mp.setenv("VERIFORGE_HOME", str(tmp / "home"))
    store = RunStore(tmp / "runs.sqlite")
    try:
        report = build_tasks(repo, tmp / "out", BuildConfig(env_mode="reuse", timeout_s=120, validate_reruns=1),
                             store=store)
    finally:
        store.close()
        mp.undo()
    status = {t.source: (t.status, t.reason) for t in report.tasks}
    assert status == {s: ("built", "") for s in ("nb/explore.ipynb", "curves.py", "export.py")}, status
    return {t.source: Path(t.task_dir) for t in report.tasks}


def test_plotly_tasks_build_with_figure_evaluators_and_controls(built: dict[str, Path]) -> None:
    for source, outputs in (
        ("nb/explore.ipynb", ["figure_1.json"]),  # the bar chart; df.head() is no output
        ("curves.py", ["figure_1.json"]),
        ("export.py", ["scatter.png", "scatter.html"]),
    ):
        task = json.loads((built[source] / "task.json").read_text())
        assert sorted(task["veriforge"]["outputs"]) == sorted(outputs), source
        plan = task["veriforge"]["eval_plan"]["outputs"]
        assert [e["kind"] for e in plan] == ["figure"] * len(outputs), plan
        assert all("plotly figure" in e["reason"] for e in plan)
        assert "_veriforge" not in task["task_inst"]  # the saver is no step of the analysis
    png = json.loads((built["export.py"] / "task.json").read_text())["veriforge"]["eval_plan"]["outputs"]
    assert "not rendered to pixels here" in next(e["reason"] for e in png if e["path"] == "scatter.png")
    assert "write_json" in json.loads((built["curves.py"] / "task.json").read_text())["task_inst"]
    lines = json.loads((built["curves.py"] / "gold_results/.plotdata/figure_1.json.json").read_text())
    assert [s["label"] for s in lines["axes"][0]["series"] if s["kind"] == "xy"] == ["ctrl", "high", "low"]
    for source in built:
        val = validate_evaluator(built[source], reruns=1)
        assert val.ok, (source, val.reasons)
        verdicts = {c.name.split(":")[0]: c.got_pass for c in val.controls}
        assert verdicts["gold"] and verdicts["restyled"], (source, verdicts)
        for negative in ("swapped_series", "dropped_category", "perturbed_value", "wrong_type", "missing_plotdata"):
            assert verdicts[negative] is False, (source, negative)


def _agent(task_dir: Path, program: str) -> dict[str, Any]:
    env = D3Env(task_dir, max_debug_rounds=0)
    env.reset()
    return env.step(program)[3]


def test_agent_plotly_figures_are_judged_by_their_data(built: dict[str, Path]) -> None:
    bar, lines = built["nb/explore.ipynb"], built["curves.py"]
    restyled = _agent(bar, AGENT_BAR.format(change=""))
    assert restyled["eval_passed"], restyled["eval_message"]
    dropped = _agent(bar, AGENT_BAR.format(change="\nmeans = means[means.group != 'low']"))
    assert dropped["valid_execution"] and dropped["eval_passed"] is False
    groups = {"ctrl": "ctrl", "low": "low", "high": "high"}
    ok = _agent(lines, AGENT_LINES.format(groups=groups, scale=""))
    assert ok["eval_passed"], ok["eval_message"]
    swapped = _agent(lines, AGENT_LINES.format(groups={**groups, "low": "high", "high": "low"}, scale=""))
    assert swapped["valid_execution"] and swapped["eval_passed"] is False
    perturbed = _agent(lines, AGENT_LINES.format(groups=groups, scale=" * 1.02"))
    assert perturbed["valid_execution"] and perturbed["eval_passed"] is False


def test_only_ipython_help_lines_are_commented_out(tmp_path: Path) -> None:
    """KimmeridgePyrite's S_model notebooks lost a statement ending in a ``?`` comment (NameError
    at run time): only a whole line of IPython help syntax is commented out."""
    from veriforge.discovery.notebook import notebook_to_script

    cell = "R = 2 * x  # tweak in future?\ndf.describe?\n?np.mean\nnp.*load*??\ns = 'why?'\n%matplotlib inline"
    (tmp_path / "n.ipynb").write_text(_notebook([cell]))
    lines = notebook_to_script(tmp_path / "n.ipynb").splitlines()[1:-1]
    assert lines == [
        "R = 2 * x  # tweak in future?",
        "# (IPython) df.describe?",
        "# (IPython) ?np.mean",
        "# (IPython) np.*load*??",
        "s = 'why?'",
        "# (IPython) %matplotlib inline",
    ]


def test_bare_jupyter_display_gets_its_import(tmp_path: Path) -> None:
    """Jupyter's display() needs no import; run as a script, KimmeridgePyrite's S_model notebook
    died on ``display(ui, output)`` with NameError. The converted script imports it first."""
    from veriforge.discovery.notebook import JUPYTER_DISPLAY, notebook_to_script

    (tmp_path / "a.ipynb").write_text(_notebook(["x = 1", "display(x)"]))
    (tmp_path / "b.ipynb").write_text(_notebook(["x = 1", "print(x)"]))
    assert notebook_to_script(tmp_path / "a.ipynb").splitlines()[:3] == ["# In[1]:", JUPYTER_DISPLAY, "x = 1"]
    assert JUPYTER_DISPLAY not in notebook_to_script(tmp_path / "b.ipynb")
