"""The OptiML-X model proposer: evidence in the prompt, edits out, garbage skipped with reasons,
and it plugs into the real search engine as a Proposer."""

from __future__ import annotations

import logging

import pytest

from veriforge.core.types import Candidate
from veriforge.llm import LLMClient, ScriptedBackend
from veriforge.llm.errors import LLMRequestError
from veriforge.optiml.diagnosis import diagnose
from veriforge.optiml.model_proposer import ModelProposer, node_evidence
from veriforge.search import Edit, Evaluation, Proposer
from veriforge.search.tree import Node

KERNEL = """#include <cuda_runtime.h>
__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i * 32 % n] + b[i];
}
extern "C" void solve(const float* a, const float* b, float* c, int n) {
    add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
"""
FEATURES = {"global_load_efficiency": 0.125, "global_load_sectors_per_request": 32.0,
            "theoretical_occupancy": 0.25, "occupancy_limit_registers": 0.25, "registers_per_thread": 128.0,
            "flops": 1000.0}

EDIT_A = KERNEL.replace("a[i * 32 % n]", "a[i]")
EDIT_B = KERNEL.replace("__global__ void", "__global__ void __launch_bounds__(256)")

GOOD_REPLY = f"""Here are my edits.

### Edit 1: read a[i] contiguously so loads coalesce
```cuda
{EDIT_A}```

### Edit 2: add __launch_bounds__(256) to cap registers
```cuda
{EDIT_B}```

### Edit 3: something vague without code

### Edit 4: unchanged kernel
```cuda
{KERNEL}```

**Edit 5:** defines the wrong function
```cuda
__global__ void k() {{}}
extern "C" void run() {{ k<<<1, 1>>>(); }}
```
"""


def make_node(details: dict) -> Node:
    node = Node(id=7, state=Candidate(source=KERNEL), key="k")
    node.samples = [Evaluation(ok=True, objective=2.5e-5, provenance="estimated", details=details)]
    return node


def scripted(reply_fn) -> tuple[LLMClient, list]:
    seen: list = []

    def fn(request, index):
        seen.append([{"role": m.role, "content": m.content} for m in request.messages])
        return reply_fn(request)

    return LLMClient(ScriptedBackend(fn), trace_path=None, use_cache=False), seen


def test_node_helper_exposes_evaluation():
    node = make_node({"features": FEATURES})
    assert node.evaluation is not None and node.evaluation.objective == 2.5e-5


async def test_prompt_carries_kernel_and_diagnosis_and_edits_parse(caplog):
    findings = [f.to_dict() for f in diagnose(FEATURES)]
    node = make_node({"features": FEATURES, "findings": findings, "bottleneck": "uncoalesced load",
                      "time_s": 2.4e-5})
    client, seen = scripted(lambda req: GOOD_REPLY)
    proposer = ModelProposer(client)
    assert isinstance(proposer, Proposer) and proposer.name == "model"
    with caplog.at_level(logging.INFO, logger="veriforge.optiml.model_proposer"):
        edits = await proposer.propose(node, 4)

    prompt = seen[0][-1]["content"]
    assert "global loads use 32 sectors per request (12.5% efficiency)" in prompt  # the diagnosis text
    assert "occupancy limited by registers to 25%" in prompt
    assert "4 |     if (i < n) c[i] = a[i * 32 % n] + b[i];" in prompt  # numbered kernel
    assert "global_load_efficiency = 0.125" in prompt  # key features
    assert "Propose 4 different edits" in prompt

    assert [e.description for e in edits] == ["read a[i] contiguously so loads coalesce",
                                              "add __launch_bounds__(256) to cap registers"]
    assert all(isinstance(e, Edit) and e.proposer == "model" for e in edits)
    assert edits[0].state.source == EDIT_A and edits[1].state.source == EDIT_B
    assert edits[0].state.parent == node.state.hash
    assert edits[0].evidence["findings"][0]["kind"] == "uncoalesced_load"
    assert edits[0].evidence["bottleneck"] == "uncoalesced load"
    assert edits[0].evidence["features"]["global_load_efficiency"] == 0.125

    reasons = [s["reason"] for s in proposer.skipped]
    assert "edit 3: no code block" in reasons
    assert "edit 4: the code is unchanged" in reasons
    assert "edit 5: the code does not define solve()" in reasons
    assert any("edit 3: no code block" in r.getMessage() for r in caplog.records)


async def test_findings_are_diagnosed_from_features_when_missing():
    node = make_node({"features": FEATURES})
    client, seen = scripted(lambda req: GOOD_REPLY)
    edits = await ModelProposer(client).propose(node, 1)
    assert len(edits) == 1  # k=1: the second good edit is dropped
    assert "global loads use 32 sectors per request" in seen[0][-1]["content"]
    assert edits[0].evidence["findings"]
    evidence = node_evidence(node)
    assert evidence["bottleneck"].startswith("uncoalesced load")


@pytest.mark.parametrize("garbage", [
    "",
    "I cannot help with that.",
    "```cuda\nint main() {}\n```",  # code with no edit heading
    "### Edit 1:\n```cuda\n" + EDIT_A + "```",  # no description
    "### Edit 1: truncated reply\n```cuda\n__global__ void k(",  # cut off mid-code, no solve
])
async def test_garbage_replies_give_no_edits_and_a_reason(garbage):
    client, _ = scripted(lambda req: garbage)
    proposer = ModelProposer(client)
    assert await proposer.propose(make_node({"features": FEATURES}), 3) == []
    assert proposer.skipped and all(s["node"] == 7 and s["reason"] for s in proposer.skipped)


async def test_model_failure_gives_no_edits():
    def fail(req):
        raise LLMRequestError("bad request", status=400, kind="bad_request")

    client, _ = scripted(fail)
    proposer = ModelProposer(client)
    assert await proposer.propose(make_node({}), 2) == []
    assert "model call failed: bad request" in proposer.skipped[0]["reason"]


async def test_task_contract_and_numbered_lines_copied_back():
    from veriforge.cuda.tasks import find_task, load_task
    from veriforge.optiml.prompts import number_lines

    spec = load_task(find_task("vector_add"))
    numbered = number_lines(EDIT_A)
    client, seen = scripted(lambda req: f"### Edit 1: coalesce\n```cuda\n{numbered}\n```\n")
    edits = await ModelProposer(client, spec).propose(make_node({"features": FEATURES}), 2)
    assert 'extern "C" void solve(const float* a, const float* b, float* c, int n)' in seen[0][-1]["content"]
    assert edits[0].state.source == EDIT_A  # the line numbers a model copied are removed


def test_runs_inside_the_search_engine():
    """The real MCTS engine calls the async proposer and keeps each edit's evidence in the tree."""
    from veriforge.search import MCTS, FunctionEvaluator, SearchConfig

    def evaluate(state: Candidate) -> Evaluation:
        coalesced = "a[i * 32 % n]" not in state.source
        feats = dict(FEATURES, global_load_efficiency=1.0 if coalesced else 0.125)
        return Evaluation(ok=True, objective=1.0 if coalesced else 4.0, provenance="estimated",
                          details={"features": feats})

    client, seen = scripted(lambda req: GOOD_REPLY if "a[i * 32 % n]" in req.messages[-1].content
                            else "no further ideas")
    proposer = ModelProposer(client)
    result = MCTS([proposer], FunctionEvaluator(evaluate, fingerprint="fake-cuda-v1"),
                  SearchConfig(max_evaluations=4, seed=0)).run_sync(Candidate(source=KERNEL))
    assert result.best_state.source == EDIT_A
    tree = result.tree_json()
    edited = [n for n in tree["nodes"] if n.get("edit")]
    assert edited and all(n["edit"]["proposer"] == "model" for n in edited)
    assert any(n["edit"]["evidence"]["findings"][0]["kind"] == "uncoalesced_load" for n in edited)
    assert proposer.calls >= 1 and seen


def test_dropped_replies_reach_tree_json_and_the_report(tmp_path):
    """Malformed replies and failed calls are in tree.json (proposer_skips) and the report, not only a log."""
    from veriforge.core.store import RunStore
    from veriforge.optiml.report import render_report
    from veriforge.optiml.xsearch import XSearchSettings, optimize, resolve_inputs

    spec, start, _ = resolve_inputs("c2cuda/vector_add")
    edited = start.source.replace("const int threads = 256;", "const int threads = 128;")
    assert edited != start.source
    first = f"### Edit 1: something vague without code\n\n### Edit 2: smaller blocks\n```cuda\n{edited}```\n"
    replies = iter([first, LLMRequestError("endpoint http://x/v1: HTTP 500")])

    def reply(request):
        r = next(replies, "still nothing")
        if isinstance(r, Exception):
            raise r
        return r

    client, _ = scripted(reply)
    proposer = ModelProposer(client, spec)
    result = optimize("c2cuda/vector_add", settings=XSearchSettings(max_evaluations=3, final_top_k=0,
                                                                    regression_tolerance=None),
                      proposers=[proposer], store=RunStore(tmp_path / "runs.sqlite"))
    tree = result.tree_json()
    reasons = [s["reason"] for s in tree["proposer_skips"]]
    assert tree["proposer_calls"] == {"model": proposer.calls} and proposer.calls >= 2
    assert any("no edit" in r or "no code" in r or "section" in r for r in reasons), reasons
    assert any(r.startswith("model call failed") and "HTTP 500" in r for r in reasons), reasons
    assert [s["kind"] for s in tree["proposer_skips"]].count("call_failed") == 1
    from veriforge.optiml.report import skips_line

    assert "1 failed" in skips_line(tree["proposer_skips"], tree["proposer_calls"])
    assert all(s["proposer"] == "model" and s["node"] in (0, 1) for s in tree["proposer_skips"])
    html = render_report(result)
    assert "proposals dropped before evaluation" in html and "HTTP 500" in html
