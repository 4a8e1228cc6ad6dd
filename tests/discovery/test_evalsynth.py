"""Evaluator synthesis: every output type, judged on correct variants and on wrong answers.

The generated script is executed from its own source text (as the task folder will run it), not
by calling the runtime module, so a broken code generator fails these tests.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from veriforge.discovery.evalsynth import EvalScript, UnsupportedOutputError, synthesize
from veriforge.discovery.evalsynth.model import code_problem
from veriforge.llm import LLMClient, ScriptedBackend


def _load(script: EvalScript):
    ns: dict = {"__name__": "eval_mod"}
    exec(compile(script.code, "eval.py", "exec"), ns)
    return ns["eval"]


def _write(d: Path, rel: str, content: str | bytes) -> None:
    p = d / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    (p.write_bytes if isinstance(content, bytes) else p.write_text)(content)


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "gold_results", tmp_path / "pred_results"


SUMMARY = "group,mean,std,n\na,1.5,0.25,10\nb,2.25,0.5,12\nc,3.0,0.75,8\n"


def test_table_harmless_differences_pass_and_wrong_values_fail(dirs):
    gold, pred = dirs
    _write(gold, "summary.csv", SUMMARY)
    script = synthesize(gold, ["pred_results/summary.csv"])
    entry = script.plan["outputs"][0]
    assert entry["kind"] == "table" and entry["params"]["key_columns"] == ["group"]
    assert entry["params"]["row_order"] == "unordered"
    ev = _load(script)
    # columns reordered, rows reordered, float noise within rtol, an extra column: all fine
    _write(
        pred, "summary.csv", "n,std,group,mean,note\n12,0.5,b,2.2500001,x\n10,0.25,a,1.5,y\n8,0.75,c,3,z\n"
    )
    ok, msg = ev(str(pred), str(gold))
    assert ok, msg
    for bad, why in [
        ("group,mean,std,n\na,1.5,0.25,10\nb,2.4,0.5,12\nc,3.0,0.75,8\n", "differ"),
        ("group,mean,std,n\na,1.5,0.25,10\nb,2.25,0.5,12\n", "rows"),
        ("group,average,std,n\na,1.5,0.25,10\nb,2.25,0.5,12\nc,3.0,0.75,8\n", "missing columns"),
        ("group,mean,std,n\na,1.5,0.25,10\nB,2.25,0.5,12\nc,3.0,0.75,8\n", "no row"),
    ]:
        _write(pred, "summary.csv", bad)
        ok, msg = ev(str(pred), str(gold))
        assert not ok and why in msg, (bad, msg)


def test_table_order_kept_when_program_sorts_and_extra_columns_per_plan(dirs):
    gold, pred = dirs
    _write(gold, "ranked.csv", "gene,score\ng2,0.9\ng1,0.5\ng3,0.1\n")
    script = synthesize(gold, ["ranked.csv"], program_source="df.sort_values('score', ascending=False)")
    assert script.plan["outputs"][0]["params"]["row_order"] == "ordered"
    ev = _load(script)
    _write(pred, "ranked.csv", "gene,score\ng1,0.5\ng2,0.9\ng3,0.1\n")
    assert not ev(str(pred), str(gold))[0]
    unordered = _load(synthesize(gold, ["ranked.csv"], program_source="df.to_csv(out)"))
    assert unordered(str(pred), str(gold))[0]
    # a plan that forbids extra columns rejects them
    script.plan["outputs"][0]["params"]["extra_columns"] = False
    from veriforge.discovery.evalsynth.codegen import render_script

    strict = _load(EvalScript(render_script(script.plan), script.plan))
    _write(pred, "ranked.csv", "gene,score,x\ng2,0.9,1\ng1,0.5,1\ng3,0.1,1\n")
    ok, msg = strict(str(pred), str(gold))
    assert not ok and "extra columns" in msg


def test_table_without_key_uses_canonical_sort_and_ignores_pandas_index(dirs):
    gold, pred = dirs
    _write(gold, "pts.tsv", "\tx\ty\n0\t0.5\t1.25\n1\t0.5\t2.5\n2\t0.1\t9.0\n")
    script = synthesize(gold, ["pts.tsv"])
    params = script.plan["outputs"][0]["params"]
    assert params["ignore_columns"] == [""] and params["key_columns"] == []
    ev = _load(script)
    _write(pred, "pts.tsv", "y\tx\n9.0\t0.1\n2.5\t0.5\n1.25\t0.5\n")
    assert ev(str(pred), str(gold))[0]
    _write(pred, "pts.tsv", "y\tx\n9.0\t0.1\n2.5\t0.5\n1.25\t0.6\n")
    assert not ev(str(pred), str(gold))[0]


def test_json_nested_tolerance_key_order_and_types(dirs):
    gold, pred = dirs
    doc = {"model": "logreg", "metrics": {"accuracy": 0.8125, "auc": 0.9}, "coef": [1.5, -2.0], "ok": True}
    _write(gold, "m.json", json.dumps(doc))
    ev = _load(synthesize(gold, ["m.json"]))
    _write(
        pred,
        "m.json",
        json.dumps(
            {
                "ok": True,
                "coef": [1.5000001, -2],
                "metrics": {"auc": 0.9, "accuracy": 0.8125},
                "model": "logreg",
            },
            indent=4,
        ),
    )
    assert ev(str(pred), str(gold))[0]
    wrong = [
        {**doc, "metrics": {"accuracy": 0.7, "auc": 0.9}},
        {**doc, "coef": [-2.0, 1.5]},
        {**doc, "ok": 1},
        {k: v for k, v in doc.items() if k != "model"},
        {**doc, "extra": 1},
    ]
    for w in wrong:
        _write(pred, "m.json", json.dumps(w))
        assert not ev(str(pred), str(gold))[0], w
    _write(pred, "m.json", "model,logreg\n")
    ok, msg = ev(str(pred), str(gold))
    assert not ok and "not valid JSON" in msg


def test_arrays_npy_and_npz(dirs):
    gold, pred = dirs
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 5))
    gold.mkdir(parents=True)
    np.save(gold / "f.npy", a)
    np.savez(gold / "s.npz", u=a, t=np.arange(3))
    ev = _load(synthesize(gold, ["f.npy", "s.npz"]))
    pred.mkdir()
    np.save(pred / "f.npy", a * (1 + 1e-7))
    np.savez(pred / "s.npz", t=np.arange(3), u=a)
    assert ev(str(pred), str(gold))[0]
    np.save(pred / "f.npy", a.T)
    ok, msg = ev(str(pred), str(gold))
    assert not ok and "shape" in msg
    np.save(pred / "f.npy", a + 0.01)
    ok, msg = ev(str(pred), str(gold))
    assert not ok and "values differ" in msg
    np.save(pred / "f.npy", a)
    np.savez(pred / "s.npz", time=np.arange(3), u=a)
    assert not ev(str(pred), str(gold))[0]


def test_scalar_and_text(dirs):
    gold, pred = dirs
    _write(gold, "energy.txt", "12.3456789\n")
    _write(gold, "report.txt", "Mean difference: 1.25 (p = 0.0031)\nGroups differ significantly.\n")
    script = synthesize(gold, ["energy.txt", "report.txt"])
    assert [e["kind"] for e in script.plan["outputs"]] == ["scalar", "text"]
    ev = _load(script)
    _write(pred, "energy.txt", "  12.34568 ")
    _write(pred, "report.txt", "Mean difference:   1.2500\n(p = 0.0031)  Groups differ significantly.")
    assert ev(str(pred), str(gold))[0]
    _write(pred, "energy.txt", "12.5")
    ok, msg = ev(str(pred), str(gold))
    assert not ok and msg.startswith("FAIL energy.txt")
    _write(pred, "energy.txt", '{"value": 12.3456789}')
    assert not ev(str(pred), str(gold))[0]
    _write(pred, "energy.txt", "12.3456789")
    _write(pred, "report.txt", "Mean difference: 1.35 (p = 0.0031)\nGroups differ significantly.\n")
    assert not ev(str(pred), str(gold))[0]


def _figure(path: Path, ys: list[float], noise: int = 0) -> None:
    im = Image.new("RGB", (200, 150), "white")
    d = ImageDraw.Draw(im)
    d.line([(20, 130), (20, 10)], fill="black")
    d.line([(20, 130), (190, 130)], fill="black")
    pts = [(30 + 40 * i, 130 - int(100 * y)) for i, y in enumerate(ys)]
    d.line(pts, fill=(31, 119, 180), width=3)
    a = np.asarray(im).astype(int)
    if noise:
        a = np.clip(a + np.random.default_rng(1).integers(-noise, noise + 1, a.shape), 0, 255)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(a.astype("uint8")).save(path)


def test_image_ssim(dirs):
    gold, pred = dirs
    _figure(gold / "fig.png", [0.1, 0.5, 0.3, 0.9, 0.6])
    script = synthesize(gold, ["fig.png"])
    assert script.plan["outputs"][0]["kind"] == "image"
    ev = _load(script)
    _figure(pred / "fig.png", [0.1, 0.5, 0.3, 0.9, 0.6], noise=2)
    ok, msg = ev(str(pred), str(gold))
    assert ok and "SSIM" in msg
    _figure(pred / "fig.png", [0.9, 0.2, 0.7, 0.1, 0.4])
    assert not ev(str(pred), str(gold))[0]
    Image.new("RGB", (300, 150), "white").save(pred / "fig.png")
    ok, msg = ev(str(pred), str(gold))
    assert not ok and "size" in msg


def test_missing_and_empty_predictions_fail_with_reason(dirs):
    gold, pred = dirs
    _write(gold, "summary.csv", SUMMARY)
    ev = _load(synthesize(gold, ["summary.csv"]))
    pred.mkdir()
    ok, msg = ev(str(pred), str(gold))
    assert not ok and "missing" in msg
    _write(pred, "summary.csv", "")
    ok, msg = ev(str(pred), str(gold))
    assert not ok and "empty" in msg


def test_script_is_self_contained_and_deterministic(dirs, tmp_path):
    gold, _ = dirs
    _write(gold, "summary.csv", SUMMARY)
    a = synthesize(gold, ["summary.csv"])
    b = synthesize(gold, ["summary.csv"])
    assert a.code == b.code
    assert "veriforge" not in "\n".join(
        line for line in a.code.splitlines() if line.startswith(("import", "from"))
    )
    compile(a.code, "eval.py", "exec")


def test_unsupported_output_without_model_raises(dirs):
    gold, _ = dirs
    _write(gold, "fig.pdf", b"%PDF-1.4 binary")
    with pytest.raises(UnsupportedOutputError) as err:
        synthesize(gold, ["fig.pdf"])
    assert "fig.pdf" in str(err.value) and "model" in str(err.value)


CHECK_CODE = """def check(pred_path, gold_path):
    with open(pred_path, "rb") as a, open(gold_path, "rb") as b:
        p, g = a.read(), b.read()
    if not p.startswith(b"%PDF"):
        return False, "not a PDF"
    return len(p) == len(g), "pdf size compared"
"""


def test_model_writes_plan_then_code_for_other_types(dirs):
    gold, pred = dirs
    _write(gold, "fig.pdf", b"%PDF-1.4 0123456789")
    plan_reply = '```json\n{"metric": "PDF header and size", "thresholds": {"size": "equal"}}\n```'
    bad_code = "```python\ndef check(a):\n    return True, ''\n```"
    calls: list[str] = []

    def fn(request, i):
        last = request.messages[-1].content
        calls.append(last)
        if "evaluation plan for one output" in last:
            return plan_reply
        if "previous answer was rejected" in last:
            return f"```python\n{CHECK_CODE}```"
        return bad_code

    client = LLMClient(ScriptedBackend(fn, name="evalsynth"), use_cache=False)
    script = synthesize(gold, ["fig.pdf"], client=client)
    entry = script.plan["outputs"][0]
    assert entry["kind"] == "model" and entry["source"] == "model"
    assert entry["metric"] == "PDF header and size"
    assert len(calls) == 3 and "exactly (pred_path, gold_path)" in calls[2]
    ev = _load(script)
    _write(pred, "fig.pdf", b"%PDF-1.4 9876543210")
    assert ev(str(pred), str(gold))[0]
    _write(pred, "fig.pdf", b"not a pdf at all")
    assert not ev(str(pred), str(gold))[0]


def test_code_problem_rejects_bad_checks():
    assert code_problem("def check(p, g):\n    return True, ''") is None
    assert "syntax" in code_problem("def check(:")
    assert "no top-level" in code_problem("def other(p, g): pass")


def test_table_noise_never_breaks_key_alignment(dirs):
    gold, pred = dirs
    rng = random.Random(3)
    rows = [(f"s{i}", round(rng.uniform(0, 100), 6), rng.randint(0, 5)) for i in range(50)]
    _write(gold, "t.csv", "sample,value,count\n" + "".join(f"{a},{b},{c}\n" for a, b, c in rows))
    ev = _load(synthesize(gold, ["t.csv"]))
    shuffled = rows[:]
    rng.shuffle(shuffled)
    _write(
        pred, "t.csv", "count,sample,value\n" + "".join(f"{c},{a},{b * (1 + 1e-6)}\n" for a, b, c in shuffled)
    )
    assert ev(str(pred), str(gold))[0]


def test_table_key_prefers_label_columns_over_counts(tmp_path):
    """Rows identified by (site, treatment): an integer count column must not join the key, or a
    wrong count would read as a missing row instead of a wrong value."""
    from veriforge.discovery.evalsynth.plan import plan_outputs

    gold = tmp_path / "gold"
    gold.mkdir()
    (gold / "t.csv").write_text(
        "site,treatment,height_mean,height_count\n"
        "A,ctrl,1.5,10\nA,drug,2.5,10\nB,ctrl,1.2,12\nB,drug,2.2,10\n"
    )
    plan = plan_outputs(gold, ["pred_results/t.csv"])
    [entry] = plan["outputs"]
    assert entry["kind"] == "table"
    assert entry["params"]["key_columns"] == ["site", "treatment"]
