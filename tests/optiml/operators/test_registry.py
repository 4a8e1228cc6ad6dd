"""The operator registry: built-ins registered by their modules, loaded lazily, and plug-ins through a real
``veriforge.optiml.operators`` entry point (a distribution on sys.path) — a working one the search
proposes, and broken ones that cost a warning, never the search."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from veriforge.core.types import Candidate
from veriforge.optiml.operators import (
    ENTRY_POINT_GROUP,
    OPERATORS,
    BuiltinProposer,
    EditProposal,
    OperatorWarning,
    operator,
    operator_names,
    propose_edits,
    refresh,
    registered,
)
from veriforge.optiml.operators import registry as reg
from veriforge.optiml.xsearch import XSearchSettings, make_engine
from veriforge.search.interfaces import Evaluation

BUILTINS = ("tune", "unroll", "restrict", "launch_bounds", "vectorize", "swap_axes", "block_shape", "rows",
            "stage_shared", "aggregate", "fuse", "tile_shared")

KERNEL = """
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
extern "C" void solve(const float* x, float* y, int n) {
    scale<<<(n + 255) / 256, 256>>>(x, y, n);
}
"""

PLUGIN = '''
"""A third-party operator: halve a literal block of 256 threads."""
from veriforge.optiml.operators import EditProposal, operator


@operator("halve_block", order=5, motives={"small_grid"})
def halve_block(source, findings=()):
    """Halve a literal block size of 256 (the grid follows)."""
    if ", 256>>>" not in source:
        return []
    new = source.replace(", 256>>>", ", 128>>>").replace("(n + 255) / 256", "(n + 127) / 128")
    return [EditProposal("halve_block", new, "block 256 -> 128 (plug-in)", {"plugin": True}, 3.0)]
'''


@pytest.fixture
def clean_registry():
    """Every test leaves the registry (and sys.modules) as it found it."""
    reg.registered()  # the built-ins first, so they are not counted as the test's
    specs, loaded = dict(reg._specs), set(reg._loaded_entry_points)
    modules = set(sys.modules)
    yield
    reg._specs.clear()
    reg._specs.update(specs)
    reg._loaded_entry_points.clear()
    reg._loaded_entry_points.update(loaded)
    for name in set(sys.modules) - modules:
        if name.startswith("vf_test_plugin"):
            del sys.modules[name]


def _distribution(root: Path, name: str, entry_points: dict[str, str], modules: dict[str, str]) -> None:
    """An installed distribution as pip leaves it: modules plus ``<name>-0.1.dist-info`` with the entry points."""
    for mod, text in modules.items():
        (root / f"{mod}.py").write_text(textwrap.dedent(text))
    info = root / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    lines = "\n".join(f"{k} = {v}" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{lines}\n")


def test_builtins_register_themselves_in_order_with_their_metadata() -> None:
    specs = {s.name: s for s in registered()}
    assert tuple(n for n in operator_names() if n in BUILTINS) == BUILTINS
    assert set(BUILTINS) <= set(OPERATORS)
    assert all(specs[n].origin == "builtin" and specs[n].module == f"veriforge.optiml.operators.{n}"
               for n in BUILTINS)
    assert {n for n in BUILTINS if specs[n].restructuring} == set(BUILTINS[4:])
    assert "no_restrict" in specs["restrict"].motives and "small_grid" in specs["tune"].motives
    assert specs["tune"].summary.startswith("Power-of-two moves")  # a spec reads its function's docstring
    with pytest.raises(ValueError, match="unknown operators"):
        propose_edits(KERNEL, operators=["no_such_operator"])


def test_importing_optiml_or_the_package_imports_no_operator_module() -> None:
    code = ("import sys, veriforge.optiml, veriforge.optiml.operators as o; "
            "print(sorted(m for m in sys.modules if m.startswith('veriforge.optiml.operators.') "
            "and m != 'veriforge.optiml.operators.registry')); o.registered(); "
            "print(len([m for m in sys.modules if m.startswith('veriforge.optiml.operators.')]) > 10)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]" and out[1] == "True"


def test_a_name_is_registered_once(clean_registry) -> None:
    with pytest.raises(ValueError, match="already registered"):
        operator("tune")(lambda source, findings=(): [])


def test_an_entry_point_plugin_is_proposed_by_the_search(tmp_path, monkeypatch, clean_registry) -> None:
    _distribution(tmp_path, "vf_test_plugin_ok", {"halve_block": "vf_test_plugin_ok"},
                  {"vf_test_plugin_ok": PLUGIN})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert refresh() == ["halve_block"]
    spec = next(s for s in registered() if s.name == "halve_block")
    assert spec.origin == "entry point halve_block = vf_test_plugin_ok" and spec.order == 5
    assert operator_names()[0] == "halve_block"  # order 5: before every built-in
    edits = propose_edits(KERNEL)
    assert edits[0].operator == "halve_block" and "128>>>" in edits[0].source

    class Evaluator:
        fingerprint = "threads"

        def evaluate(self, cand: Candidate) -> Evaluation:  # fewer threads per block is "faster" here
            t = 1e-5 * (2.0 if ", 256>>>" in cand.source else 1.0)
            return Evaluation(ok=True, objective=t, provenance="estimated", details={"time_s": t, "findings": []})

    settings = XSearchSettings(max_evaluations=4, seed=0, regression_tolerance=None, suspicious_factor=None)
    result = make_engine(settings, [BuiltinProposer()], Evaluator()).run_sync(Candidate(source=KERNEL))
    operators = [n.edit["metadata"]["operator"] for n in result.tree.nodes if n.edit]
    assert "halve_block" in operators
    assert ", 128>>>" in result.best_state.source


def test_broken_plugins_warn_with_their_entry_point_and_the_search_goes_on(tmp_path, monkeypatch,
                                                                          clean_registry) -> None:
    _distribution(tmp_path, "vf_test_plugin_bad", {
        "missing": "vf_test_plugin_nowhere:edits",                 # the module does not exist
        "clash": "vf_test_plugin_clash",                            # registers a built-in's name
        "raises": "vf_test_plugin_raises:edits",                    # a plain function that fails on use
        "junk": "vf_test_plugin_raises:junk",                       # returns something else than edits
    }, {
        "vf_test_plugin_clash": ('from veriforge.optiml.operators import operator\n\n'
                                 '@operator("tune")\ndef tune(source, findings=()):\n    return []\n'),
        "vf_test_plugin_raises": ('def edits(source, findings=()):\n    raise RuntimeError("plug-in bug")\n\n\n'
                                  'def junk(source, findings=()):\n    return "not a list"\n'),
    })
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(OperatorWarning) as caught:
        added = refresh()
    messages = [str(w.message) for w in caught]
    assert any("'missing = vf_test_plugin_nowhere:edits'" in m and "ModuleNotFoundError" in m for m in messages)
    assert any("'clash = vf_test_plugin_clash'" in m and "already registered" in m for m in messages)
    assert sorted(added) == ["junk", "raises"]  # plain functions, registered under their entry point names
    assert next(s for s in registered() if s.name == "tune").origin == "builtin"
    with pytest.warns(OperatorWarning) as caught:
        edits = propose_edits(KERNEL)
    messages = [str(w.message) for w in caught]
    assert any("operator raises failed" in m and "plug-in bug" in m and "entry point raises = " in m
               for m in messages)
    assert any("operator junk failed" in m and "not a list of EditProposal" in m for m in messages)
    assert {e.operator for e in edits} >= {"tune", "restrict"}  # the built-ins still propose
    assert all(isinstance(e, EditProposal) for e in edits)
