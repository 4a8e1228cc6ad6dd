"""OptiML-G end to end with a scripted model on the bundled vector_add task (real g++ builds, real
CPU-runtime verification): each thought gets a different kernel — one that fails to compile and is
fixed after feedback, one that stays wrong, one correct and fast — and the generator must pick the
fast one, say which thought won, and feed the compiler's error back to the model."""

from __future__ import annotations

import json
import re

import pytest

from veriforge.core.store import RunStore
from veriforge.llm import LLMClient, ScriptedBackend
from veriforge.llm.errors import LLMConfigError
from veriforge.optiml.generator import (
    Generator,
    GeneratorConfig,
    GeneratorConfigError,
    GeneratorError,
    resolve_client,
    resolve_generation_task,
)
from veriforge.optiml.thoughts import default_thoughts, select_thoughts

HEAD = "#include <cuda_runtime.h>\n"
# Line 3 lacks its semicolon: g++ reports the error at line 4 ("expected ',' or ';' before 'if'").
BROKEN = HEAD + """__global__ void add_one(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" void solve(const float* a, const float* b, float* c, int n) {
    add_one<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
"""
# Correct but slow: one block of 32 threads walks the whole array.
FIXED_SLOW = HEAD + """__global__ void add_loop(const float* a, const float* b, float* c, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) c[i] = a[i] + b[i];
}
extern "C" void solve(const float* a, const float* b, float* c, int n) {
    add_loop<<<1, 32>>>(a, b, c, n);
}
"""
WRONG = HEAD + """__global__ void sub(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] - b[i];
}
extern "C" void solve(const float* a, const float* b, float* c, int n) {
    sub<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
"""
FAST = HEAD + """__global__ void add_fast(const float* __restrict__ a, const float* __restrict__ b,
                         float* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" void solve(const float* a, const float* b, float* c, int n) {
    add_fast<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
"""

# Correct, but its loop runs inside a loop whose trip count is read from memory: the analysis cannot
# count its work, so its estimate is unknown on every configuration and it has no objective.
UNSCORED = HEAD + """__global__ void add_wrapped(const float* a, const float* b, float* c, int n) {
    for (int r = 0; r < (int)a[0] * 0 + 1; ++r) {
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[i] + b[i];
    }
}
extern "C" void solve(const float* a, const float* b, float* c, int n) {
    add_wrapped<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
"""


def reply(code: str, plan: str) -> str:
    return f"PLAN: {plan}\n\n```cuda\n{code}```\n"


class ScriptedModel:
    """Answers by thought (read from the first prompt) and by feedback (the last message)."""

    def __init__(self) -> None:
        self.requests: list[list[dict[str, str]]] = []

    def __call__(self, request, index):
        msgs = [{"role": m.role, "content": m.content} for m in request.messages]
        self.requests.append(msgs)
        first = msgs[1]["content"]
        last = msgs[-1]["content"]
        if "(straightforward)" in first:
            if "Compilation failed" in last:
                return reply(FIXED_SLOW, "one block, strided loop")
            return reply(BROKEN, "one thread per element")
        if "(grid_stride)" in first:
            return reply(WRONG, "grid stride")
        if "(vectorized)" in first:
            return reply(FAST, "restrict pointers, one thread per element")
        if "(tiled)" in first:
            return reply(UNSCORED, "guarded grid-stride loop")
        return "I would rather not write code today."


@pytest.fixture(scope="module")
def generation(tmp_path_factory, link_build_caches):
    """One generation shared by the assertions below (evaluations are the slow part)."""
    home = tmp_path_factory.mktemp("vfhome-gen")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERIFORGE_HOME", str(home))
        link_build_caches(home)
        model = ScriptedModel()
        client = LLMClient(ScriptedBackend(model), trace_path=None)
        spec, _ = resolve_generation_task(None, "vector_add")
        thoughts = select_thoughts(default_thoughts(),
                                   ["straightforward", "grid_stride", "vectorized", "fused", "tiled"])
        events: list[tuple[str, dict]] = []
        store = RunStore(home / "runs.sqlite")
        gen = Generator(client, spec, thoughts=thoughts, store=store,
                        config=GeneratorConfig(rounds=2, concurrency=5, configs=["small", "odd"]),
                        on_event=lambda kind, payload: events.append((kind, payload)))
        result = gen.run_sync("add two float vectors element-wise")
        store.close()
        yield result, model, events, home


def test_picks_the_correct_fastest_thought(generation):
    result, _, _, _ = generation
    assert result.success
    assert result.winner == "vectorized"
    assert result.source is not None and "add_fast" in result.source
    assert result.best.provenance == "estimated"
    by = {o.thought.name: o for o in result.outcomes}
    # the slow fix verified too, with a worse objective: the choice was made by the objective
    assert by["straightforward"].status == "verified"
    assert by["straightforward"].objective > 10 * by["vectorized"].objective
    assert by["grid_stride"].status == "incorrect"
    assert by["fused"].status == "no_code"


def test_verified_candidate_without_a_score_ranks_after_the_scored_ones(generation):
    from veriforge.optiml.generator import _rank

    result, _, _, _ = generation
    by = {o.thought.name: o for o in result.outcomes}
    unscored = by["tiled"]
    assert unscored.status == "verified" and unscored.objective is None and unscored.provenance is None
    why = unscored.unscored_reason
    assert why.startswith("config 'small': estimate unknown:") and "(int)a[0] * 0 + 1" in why and "'odd'" in why
    assert unscored.rounds[0].unscored_reason == why
    ranked = [o.thought.name for o in sorted((o for o in result.outcomes if o.verified), key=_rank)]
    assert ranked == ["vectorized", "straightforward", "tiled"]  # even after the slow scored one
    # the round's feedback says why: no number was made up
    assert "Objective (composite): unknown (config 'small': estimate unknown" in unscored.rounds[0].feedback


def test_compile_error_is_fed_back_with_line_and_text(generation):
    result, model, _, _ = generation
    by = {o.thought.name: o for o in result.outcomes}
    rounds = by["straightforward"].rounds
    assert [r.status for r in rounds] == ["compile_error", "verified"]
    conv = next(m for m in model.requests if "(straightforward)" in m[1]["content"] and len(m) > 2)
    feedback = conv[-1]["content"]
    assert conv[-2] == {"role": "assistant", "content": reply(BROKEN, "one thread per element")}
    assert "Compilation failed" in feedback
    assert re.search(r"line 4\b.*error: expected", feedback)  # mapped to the candidate's line
    assert "if (i < n) c[i] = a[i] + b[i];" in feedback  # with the offending source line


def test_wrong_answer_feedback_names_config_and_elements(generation):
    result, model, _, _ = generation
    by = {o.thought.name: o for o in result.outcomes}
    wrong = by["grid_stride"]
    # the same wrong kernel twice: verified once, the second turn is recorded as a repeat
    assert [r.status for r in wrong.rounds] == ["incorrect", "repeat"]
    assert "wrong on config 'small'" in wrong.rounds[0].feedback
    assert "expected" in wrong.rounds[0].feedback and "got" in wrong.rounds[0].feedback
    conv = next(m for m in model.requests if "(grid_stride)" in m[1]["content"] and len(m) > 2)
    assert "wrong on config" in conv[-1]["content"]


def test_prompt_carries_the_exact_signature_and_the_strategy(generation):
    _, model, _, _ = generation
    first = next(m for m in model.requests if "(vectorized)" in m[1]["content"])
    assert first[0]["role"] == "system"
    text = first[1]["content"]
    assert 'extern "C" void solve(const float* a, const float* b, float* c, int n)' in text
    assert "add two float vectors element-wise" in text  # the user's words
    assert "float4" in text  # the vectorised thought's guidance


def test_report_is_json_and_written(generation, tmp_path):
    result, _, events, _ = generation
    data = json.loads(json.dumps(result.to_dict()))
    assert data["winner"] == "vectorized"
    assert {t["thought"]: t["status"] for t in data["thoughts"]} == {
        "straightforward": "verified", "grid_stride": "incorrect", "vectorized": "verified",
        "fused": "no_code", "tiled": "verified"}
    tiled = next(t for t in data["thoughts"] if t["thought"] == "tiled")
    assert tiled["objective"] is None and "estimate unknown" in tiled["unscored_reason"]
    paths = result.write(tmp_path / "out")
    assert paths["kernel"].read_text() == FAST
    assert (tmp_path / "out" / "thoughts" / "straightforward.cu").read_text() == FIXED_SLOW
    full = json.loads(paths["json"].read_text())
    assert full["thoughts"][0]["trajectory"]["steps"][0]["role"] == "user"
    assert ("done", {"winner": "vectorized"}) in events


def test_natural_language_alone_is_refused():
    with pytest.raises(GeneratorConfigError, match=r"cannot be verified.*--task"):
        resolve_generation_task("add two vectors please", None)
    spec, words = resolve_generation_task("vector_add", None)  # a task id alone is fine
    assert spec.id == "vector_add" and words is None


def test_torch_tasks_are_refused():
    from veriforge.cuda.tasks import bundled_tasks

    torch_tasks = bundled_tasks("torch2cuda")
    if not torch_tasks:
        pytest.skip("no bundled torch2cuda task")
    with pytest.raises(GeneratorError, match="c2cuda"):
        resolve_generation_task(None, torch_tasks[0])


def test_no_model_configured_points_to_configuration(monkeypatch, tmp_path):
    monkeypatch.delenv("VERIFORGE_LLM__MODEL", raising=False)
    monkeypatch.delenv("VERIFORGE_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)  # no veriforge.toml here
    with pytest.raises(LLMConfigError) as info:
        resolve_client(None)
    text = str(info.value)
    assert "--model" in text and "[llm]" in text and "docs/llm.md" in text


def test_model_failure_is_an_outcome_not_a_crash(tmp_path):
    from veriforge.llm.errors import LLMRequestError

    def broken(request, index):
        raise LLMRequestError("server exploded", kind="server", retryable=False)

    spec, _ = resolve_generation_task(None, "vector_add")
    gen = Generator(LLMClient(ScriptedBackend(broken), trace_path=None), spec,
                    thoughts=select_thoughts(default_thoughts(), ["tiled"]), config=GeneratorConfig(rounds=1))
    result = gen.run_sync()
    assert not result.success and result.winner is None
    assert result.outcomes[0].status == "llm_error" and "server exploded" in result.outcomes[0].error


def test_generation_over_real_http(tmp_path):
    """The same path through the OpenAI-compatible HTTP back-end against a local server."""
    from veriforge.llm.testing import FakeOpenAIServer
    from veriforge.optiml.generator import generate

    with FakeOpenAIServer(replies=lambda body, i: reply(FAST, "restrict")) as server:
        result = generate("vector_add", model=f"fake-model@{server.base_url}",
                          thoughts=select_thoughts(default_thoughts(), ["grid_stride"]),
                          config=GeneratorConfig(rounds=1, temperature=0.2, configs=["small"]))
        bodies = [r.body for r in server.chat_requests]
    assert result.winner == "grid_stride" and result.source == FAST
    assert len(bodies) == 1 and bodies[0]["temperature"] == 0.2
    assert bodies[0]["messages"][0]["role"] == "system"
    assert "grid-stride loop" in bodies[0]["messages"][1]["content"]
