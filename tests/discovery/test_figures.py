"""Figures judged by their data (issue 18 part 3): recorder, plan, evaluator, validation controls."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from veriforge.discovery.evalcheck import figure_controls, negative_controls, validate_evaluator
from veriforge.discovery.evalsynth import UnsupportedOutputError, synthesize
from veriforge.discovery.evalsynth.runtime import evaluate_plan
from veriforge.discovery.plotrec import load_plotdata, recorder_env, recorder_manifest

pytest.importorskip("matplotlib")

FIGURE = """
import matplotlib.pyplot as plt
groups = {groups!r}
means = {means!r}
err = {err!r}
t = [0, 1, 2, 3, 4]
ctrl = [1.0, 1.5, 2.5, 3.0, 3.2]
drug = [1.0, 1.2, 1.3, 1.3, 1.4]
fig, (a, b) = plt.subplots(1, 2, figsize={size!r})
lines = {lines!r}
for name in lines:
    a.plot(t, ctrl if name == "control" else drug, {style}, label=name)
a.legend()
a.set_title("growth")
b.bar(groups, means, yerr=err, color={colour!r}, capsize=3)
b.set_ylabel("yield")
fig.savefig("pred_results/fig.png", dpi={dpi})
"""

GOLD = dict(
    groups=["A", "B", "C"],
    means=[3.0, 1.0, 2.0],
    err=[0.2, 0.1, 0.3],
    size=(6, 3),
    lines=["control", "drug"],
    style="'-'",
    colour="tab:blue",
    dpi=60,
)


def draw(root: Path, **changes) -> Path:
    """Run the figure program with the recorder (as gold and agent runs do); the results folder."""
    work = root
    (work / "pred_results").mkdir(parents=True)
    (work / "prog.py").write_text(FIGURE.format(**{**GOLD, **changes}))
    env = {**os.environ, "MPLBACKEND": "Agg", **recorder_env(work)}
    env.pop("PYTHONHOME", None)
    subprocess.run([sys.executable, "prog.py"], cwd=work, env=env, check=True, timeout=120)
    return work / "pred_results"


@pytest.fixture(scope="module")
def gold(tmp_path_factory) -> Path:
    return draw(tmp_path_factory.mktemp("gold"))


def test_recorder_captures_series_bars_and_intervals(gold):
    data = load_plotdata(gold, "fig.png")
    assert data is not None and (gold / "fig.png").is_file()
    line_ax, bar_ax = data["axes"]
    lines = {s["label"]: s for s in line_ax["series"] if s["kind"] == "xy"}
    assert lines["control"]["y"] == [1.0, 1.5, 2.5, 3.0, 3.2] and lines["drug"]["x"] == [0, 1, 2, 3, 4]
    assert line_ax["legend"] == ["control", "drug"] and line_ax["title"] == "growth"
    (bars,) = [s for s in bar_ax["series"] if s["kind"] == "bar"]
    assert [b[3] for b in bars["bars"]] == [3.0, 1.0, 2.0]
    assert [t for _, t in bar_ax["xticks"]] == ["A", "B", "C"]
    (errs,) = [s for s in bar_ax["series"] if s["kind"] == "errorbar"]
    assert sorted(round(s[3] - s[1], 6) for s in errs["segments"]) == [0.2, 0.4, 0.6]
    assert recorder_manifest(gold)["saved"] == [{"path": "fig.png", "recorded": True, "series": 4}]


@pytest.fixture(scope="module")
def script(gold):
    s = synthesize(gold, ["fig.png"])
    (entry,) = s.plan["outputs"]
    assert entry["kind"] == "figure" and entry["params"]["plotdata"] == ".plotdata/fig.png.json"
    return s


@pytest.mark.parametrize(
    ("changes", "expected", "needle"),
    [
        # another style: colours, markers, size, dpi, drawing order of the series: same data
        (
            dict(lines=["drug", "control"], style="'o--'", colour="red", size=(8, 4), dpi=50),
            True,
            "SSIM",
        ),
        (dict(groups=["A", "B", "C"], means=[3.00001, 1.0, 2.0]), True, "match"),  # within rtol
        (dict(means=[1.0, 3.0, 2.0]), False, "bar 'a'"),  # two categories swapped
        (dict(groups=["A", "B"], means=[3.0, 1.0], err=[0.2, 0.1]), False, "expected 3"),  # dropped
        (dict(err=[0.4, 0.2, 0.6]), False, "interval"),  # wrong intervals
        (dict(lines=["control"]), False, "missing ['drug']"),  # a series left out
    ],
)
def test_figure_evaluator_judges_data_not_style(tmp_path, gold, script, changes, expected, needle):
    pred = draw(tmp_path, **changes)
    ok, msg = evaluate_plan(script.plan, str(pred), str(gold))
    assert ok is expected and needle in msg, msg


def test_swapped_labelled_series_fail(tmp_path, gold, script):
    """Same lines and legend, values exchanged: reverses the conclusion; pixels barely change."""
    prog = FIGURE.format(**GOLD).replace('ctrl if name == "control" else drug', 'drug if name == "control" else ctrl')
    work = tmp_path
    (work / "pred_results").mkdir()
    (work / "prog.py").write_text(prog)
    env = {**os.environ, "MPLBACKEND": "Agg", **recorder_env(work)}
    subprocess.run([sys.executable, "prog.py"], cwd=work, env=env, check=True, timeout=120)
    ok, msg = evaluate_plan(script.plan, str(work / "pred_results"), str(gold))
    assert not ok and "'control'" in msg, msg


def test_prediction_without_plot_data_fails(tmp_path, gold, script):
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "fig.png").write_bytes((gold / "fig.png").read_bytes())  # the gold pixels, no recording
    ok, msg = evaluate_plan(script.plan, str(pred), str(gold))
    assert not ok and "no plot data" in msg


def test_figures_without_data_are_refused_and_foreign_images_keep_pixels(tmp_path):
    work = tmp_path / "empty"
    (work / "pred_results").mkdir(parents=True)
    (work / "prog.py").write_text(
        "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.set_title('t')\n"
        "fig.savefig('pred_results/blank.png')\n"
    )
    env = {**os.environ, "MPLBACKEND": "Agg", **recorder_env(work)}
    subprocess.run([sys.executable, "prog.py"], cwd=work, env=env, check=True, timeout=120)
    with pytest.raises(UnsupportedOutputError, match="no data series"):
        synthesize(work / "pred_results", ["blank.png"])
    (work / "prog.py").write_text(
        "import numpy as np\nimport matplotlib.pyplot as plt\n"
        "plt.imshow(np.zeros((4, 5, 3)))\nplt.savefig('pred_results/picture.png')\n"
    )
    subprocess.run([sys.executable, "prog.py"], cwd=work, env=env, check=True, timeout=120)
    with pytest.raises(UnsupportedOutputError, match="only shows pictures"):
        synthesize(work / "pred_results", ["picture.png"])
    from PIL import Image

    Image.new("RGB", (20, 10), "white").save(work / "pred_results" / "photo.png")  # not matplotlib
    assert synthesize(work / "pred_results", ["photo.png"]).plan["outputs"][0]["kind"] == "image"


def test_figure_controls_cover_swaps_drops_and_restyles(gold):
    made = {n: (png, pd) for n, png, pd in figure_controls((gold / "fig.png").read_bytes(), _pd(gold))}
    assert {"swapped_series", "dropped_category", "wrong_interval", "restyled", "missing_plotdata"} <= set(made)
    swapped = json.loads(made["swapped_series"][1])
    ys = {s["label"]: s["y"] for s in swapped["axes"][0]["series"] if s["kind"] == "xy"}
    assert ys["control"] == [1.0, 1.2, 1.3, 1.3, 1.4]  # drug's values under control's label
    dropped = json.loads(made["dropped_category"][1])
    assert len(next(s for s in dropped["axes"][1]["series"] if s["kind"] == "bar")["bars"]) == 2


def _pd(results: Path) -> bytes:
    return (results / ".plotdata" / "fig.png.json").read_bytes()


def test_validation_runs_figure_controls(tmp_path, gold, script):
    task = tmp_path / "task"
    (task / "eval").mkdir(parents=True)
    import shutil

    shutil.copytree(gold, task / "gold_results")
    (task / "eval" / "eval_fig.py").write_text(script.code)
    (task / "task.json").write_text(
        json.dumps(
            {
                "instance_id": "f",
                "eval_script_name": "eval_fig.py",
                "output_fname": "pred_results/fig.png",
                "veriforge": {"outputs": ["pred_results/fig.png"], "eval_plan": script.plan},
            }
        )
    )
    cases, _ = negative_controls(task / "gold_results", script.plan)
    assert ".plotdata/fig.png.json" in cases[0][2]
    v = validate_evaluator(task, reruns=1)
    got = {c.name: c.got_pass for c in v.controls}
    assert v.ok, v.reasons
    assert got["restyled"] is True and got["swapped_series"] is False and got["dropped_category"] is False
    assert got["wrong_interval"] is False and got["missing_plotdata"] is False and got["wrong_type"] is False
    # A pixel-only evaluator is rejected by exactly these controls.
    pixel_plan = {**script.plan, "outputs": [{**script.plan["outputs"][0], "kind": "image"}]}
    from veriforge.discovery.evalsynth.codegen import render_script

    (task / "eval" / "eval_fig.py").write_text(render_script(pixel_plan))
    bad = validate_evaluator(task, reruns=1)
    assert not bad.ok
    assert any(r.startswith("swapped_series") for r in bad.reasons)
    assert any(r.startswith("restyled") for r in bad.reasons)


def test_gold_run_and_agent_run_both_record(tmp_path):
    """The sandboxed gold run and D3Env's agent run install the recorder; sidecars are not outputs."""
    from veriforge.discovery.env import D3Env
    from veriforge.discovery.goldrun import run_gold

    task = tmp_path / "task"
    (task / "gold_program").mkdir(parents=True)
    (task / "datasets").mkdir()
    (task / "datasets" / "m.txt").write_text("3.0 1.0 2.0\n")
    prog = (
        "import matplotlib.pyplot as plt\n"
        "m = [float(v) for v in open('datasets/m.txt').read().split()]\n"
        "plt.bar(['A', 'B', 'C'], m)\nplt.savefig('pred_results/fig.png')\n"
    )
    (task / "gold_program" / "prog.py").write_text(prog)
    res = run_gold(task, "prog.py", sys.executable, ["pred_results/fig.png"], timeout_s=120)
    assert res.ok and res.outputs == ["pred_results/fig.png"], res.stderr_tail
    assert load_plotdata(task / "gold_results", "fig.png") is not None
    s = synthesize(task / "gold_results", res.outputs)
    (task / "eval").mkdir()
    s.write(task / "eval" / "eval_prog.py")
    (task / "task.json").write_text(
        json.dumps(
            {
                "instance_id": "bars",
                "eval_script_name": "eval_prog.py",
                "gold_program_name": "prog.py",
                "veriforge": {"outputs": ["pred_results/fig.png"], "timeout_s": 120, "eval_plan": s.plan},
            }
        )
    )
    env = D3Env(task, python=sys.executable)
    env.reset()
    restyled = prog.replace("plt.bar(['A', 'B', 'C'], m)", "plt.bar(['C', 'A', 'B'], [m[2], m[0], m[1]], color='k')")
    _, reward, _, info = env.step(restyled)
    assert reward == 1.0 and info["produced"] == ["fig.png"], info
    env = D3Env(task, python=sys.executable)
    env.reset()
    _, reward, _, info = env.step(prog.replace("['A', 'B', 'C']", "['B', 'A', 'C']"))  # A and B swapped
    assert reward == 0.0 and "bar 'a'" in env.evaluate().message


def test_bars_are_compared_by_category_however_they_are_grouped():
    """One container per bar (colour by category, as seaborn's hue does) vs one for all: same data."""
    from veriforge.discovery.evalsynth.runtime import compare_plotdata

    ticks = [[0.0, "A"], [1.0, "B"]]

    def fig(*containers):
        series = [{"kind": "bar", "label": lab, "bars": bars} for lab, bars in containers]
        return {"axes": [{"xticks": ticks, "series": series}]}

    gold = fig(("", [[-0.4, 0, 0.8, 0.12], [0.6, 0, 0.8, 0.13]]))
    per_bar = fig(("A", [[-0.4, 0, 0.8, 0.12]]), ("B", [[0.6, 0, 0.8, 0.13]]))
    assert compare_plotdata(per_bar, gold)[0] is None
    swapped = fig(("A", [[-0.4, 0, 0.8, 0.13]]), ("B", [[0.6, 0, 0.8, 0.12]]))
    assert "bar 'a'" in compare_plotdata(swapped, gold)[0]
    # Labelled groups (a legend) are matched by label: exchanging the groups' values fails.
    grouped = fig(
        ("ctrl", [[-0.4, 0, 0.4, 1.0], [0.6, 0, 0.4, 2.0]]), ("drug", [[0.0, 0, 0.4, 3.0], [1.0, 0, 0.4, 4.0]])
    )
    exchanged = fig(
        ("drug", [[-0.4, 0, 0.4, 1.0], [0.6, 0, 0.4, 2.0]]), ("ctrl", [[0.0, 0, 0.4, 3.0], [1.0, 0, 0.4, 4.0]])
    )
    assert compare_plotdata(grouped, grouped)[0] is None
    assert compare_plotdata(exchanged, grouped)[0] is not None


NOISY = """
import numpy as np
import matplotlib.pyplot as plt
means = {means!r}
jitter = np.random.default_rng().normal(0, 0.1, 3)  # unseeded, like seaborn's bootstrapped CIs
plt.bar(["A", "B", "C"], means)
for i, m in enumerate(means):
    plt.plot([i, i], [m - 0.5 + jitter[i], m + 0.5 + jitter[i]], color="k")
plt.savefig("pred_results/fig.png")
"""


def _run(work: Path, code: str) -> Path:
    (work / "pred_results").mkdir(parents=True)
    (work / "prog.py").write_text(code)
    env = {**os.environ, "MPLBACKEND": "Agg", **recorder_env(work)}
    subprocess.run([sys.executable, "prog.py"], cwd=work, env=env, check=True, timeout=120)
    return work / "pred_results"


def test_series_that_differ_between_gold_runs_are_required_but_not_compared(tmp_path):
    from veriforge.discovery.plotrec import rerun_and_mark

    task = tmp_path / "task"
    (task / "gold_program").mkdir(parents=True)
    (task / "datasets").mkdir()
    (task / "gold_program" / "prog.py").write_text(NOISY.format(means=[3.0, 1.0, 2.0]))
    from veriforge.discovery.goldrun import run_gold

    assert run_gold(task, "prog.py", sys.executable, ["pred_results/fig.png"], timeout_s=120).ok
    marks = rerun_and_mark(task, "prog.py", sys.executable, timeout_s=120)
    assert marks == {"fig.png": 3}, marks  # the three interval lines; the bars are stable
    gold = task / "gold_results"
    script = synthesize(gold, ["fig.png"])
    assert script.plan["outputs"][0]["kind"] == "figure"
    ok, msg = evaluate_plan(script.plan, str(_run(tmp_path / "again", NOISY.format(means=[3.0, 1.0, 2.0]))), str(gold))
    assert ok and "3 series not compared" in msg, msg
    ok, msg = evaluate_plan(script.plan, str(_run(tmp_path / "wrong", NOISY.format(means=[1.0, 3.0, 2.0]))), str(gold))
    assert not ok and "bar 'a'" in msg
    cases, _ = negative_controls(gold, script.plan)
    swapped = json.loads(next(c for c in cases if c[0] == "swapped_series")[2][".plotdata/fig.png.json"])
    assert [b[3] for b in swapped["axes"][0]["series"][0]["bars"]] != [3.0, 1.0, 2.0]  # built on stable bars
    # A figure whose every series varies has nothing to judge: refused.
    data = json.loads((gold / ".plotdata" / "fig.png.json").read_text())
    for s in data["axes"][0]["series"]:
        s["unstable"] = True
    (gold / ".plotdata" / "fig.png.json").write_text(json.dumps(data))
    with pytest.raises(UnsupportedOutputError, match="differs between two runs"):
        synthesize(gold, ["fig.png"])


def test_vector_figures_are_judged_by_their_data(tmp_path):
    """A matplotlib figure saved as PDF (syllogistic-nvc's outputs) has no pixels to compare but the
    same recorded data: it gets the figure evaluator, not a refusal; the file must really be a PDF."""
    runs = {}
    for name, prog in (
        ("gold", FIGURE.format(**GOLD)),
        ("restyled", FIGURE.format(**{**GOLD, "style": "'o--'", "colour": "red", "dpi": 50})),
        ("swapped", FIGURE.format(**GOLD).replace('ctrl if name == "control" else drug',
                                                  'drug if name == "control" else ctrl')),
    ):
        work = tmp_path / name
        (work / "pred_results").mkdir(parents=True)
        (work / "prog.py").write_text(prog.replace("fig.png", "fig.pdf"))
        env = {**os.environ, "MPLBACKEND": "Agg", **recorder_env(work)}
        env.pop("PYTHONHOME", None)
        subprocess.run([sys.executable, "prog.py"], cwd=work, env=env, check=True, timeout=120)
        runs[name] = work / "pred_results"
    s = synthesize(runs["gold"], ["fig.pdf"])
    (entry,) = s.plan["outputs"]
    assert entry["kind"] == "figure"
    ok, msg = evaluate_plan(s.plan, str(runs["restyled"]), str(runs["gold"]))
    assert ok and "vector figure" in msg, msg
    ok, msg = evaluate_plan(s.plan, str(runs["swapped"]), str(runs["gold"]))
    assert not ok and "'control'" in msg, msg
    (runs["restyled"] / "fig.pdf").write_bytes(b"\x89PNG\r\n\x1a\n not a pdf")
    ok, msg = evaluate_plan(s.plan, str(runs["restyled"]), str(runs["gold"]))
    assert not ok and "not a .pdf file" in msg, msg
