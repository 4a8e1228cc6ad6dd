"""Every known cheat in cheats/ must be rejected, with the reason its header announces."""

from __future__ import annotations

from pathlib import Path

import pytest

from veriforge.cuda.evaluate.anticheat_torch import scan_torch
from veriforge.cuda.evaluate.harness import evaluate

CHEATS = Path(__file__).parent / "cheats"
TASKS = Path(__file__).parents[1] / "tasks" / "data"


def _expect(path: Path) -> str:
    first = path.read_text().splitlines()[0]
    return first.split("expect:", 1)[1].strip()


@pytest.mark.parametrize("path", sorted((CHEATS / "c2cuda").glob("*.cu")), ids=lambda p: p.stem)
def test_c_cheat_rejected(path: Path) -> None:
    memcheck = "// memcheck" in path.read_text()
    res = evaluate(TASKS / "c2cuda" / "vec_scale_add", path, configs=["small"], memcheck=memcheck,
                   estimate=False)
    assert not res.verdict.correct, path.name
    assert _expect(path).lower() in res.verdict.reason.lower(), res.verdict.reason


@pytest.mark.parametrize("path", sorted((CHEATS / "torch2cuda").glob("*.py")), ids=lambda p: p.stem)
def test_torch_cheat_rejected_statically(path: Path) -> None:
    findings = scan_torch(path.read_text())
    assert findings, path.name
    assert any(_expect(path).lower() in f.lower() for f in findings), findings


def test_honest_torch_impls_pass_static_scan() -> None:
    for impl in sorted((TASKS / "torch2cuda" / "relu_rows" / "impls").glob("*.py")):
        assert scan_torch(impl.read_text()) == [], impl.name
