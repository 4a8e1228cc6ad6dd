"""`veriforge optimize` demo path on a tiny budget, and the HTML report it writes."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import typer
from typer.testing import CliRunner

from veriforge.cli.optimize_cmd import optimize_cmd
from veriforge.optiml.report import SECTIONS


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command()(optimize_cmd)
    return app


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.imgs: list[str] = []
        self.svgs = 0
        self.tables: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "img":
            self.imgs.append(a.get("src", ""))
        if tag == "svg":
            self.svgs += 1
        if tag == "table":
            self.tables.append(a.get("class", ""))


def test_demo_runs_verifies_and_writes_the_report(tmp_path) -> None:
    out = tmp_path / "out"
    res = CliRunner().invoke(_app(), ["--demo", "--budget", "3", "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    flat = res.output.replace("\n", "")  # rich folds long tokens (paths, figures) at the terminal width
    assert "speedup" in flat and "estimated" in flat and "report.html" in flat, res.output
    tree = json.loads((out / "tree.json").read_text())
    assert tree["task"] == "matmul_transposed_b" and tree["provenance"] == "estimated"
    nodes = tree["nodes"]
    assert len(nodes) == 3 and nodes[0]["edit"] is None
    child = nodes[1]
    assert child["edit"]["proposer"] == "builtin" and child["edit"]["evidence"]
    assert child["verdict"] in ("accepted", "rejected") and "relative_change" in child["effect"]
    best = (out / "best.cu").read_text()
    assert "solve" in best

    page = (out / "report.html").read_text()
    parser = _Collect()
    parser.feed(page)
    assert set(SECTIONS) <= set(parser.ids)
    pngs = [s for s in parser.imgs if s.startswith("data:image/png;base64,")]
    assert len(pngs) == 2 and all(len(s) > 2000 for s in pngs)  # real plots, embedded
    assert parser.svgs == 1  # the tree
    assert "diff" in parser.tables  # difflib's table
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")  # self-contained


def test_kernel_without_task_exits_2_with_an_explanation(tmp_path) -> None:
    kernel = tmp_path / "k.cu"
    kernel.write_text("__global__ void k(float* x) { x[0] = 1; }\n")
    res = CliRunner().invoke(_app(), [str(kernel), "--out", str(tmp_path / "o"), "--quiet"])
    assert res.exit_code == 2
    assert "--task" in res.output and "verification" in res.output
    assert not (tmp_path / "o").exists()
