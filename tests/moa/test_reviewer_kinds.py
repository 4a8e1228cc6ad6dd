"""Pluggable Reviewer back-ends (issue 17 part 1) and known-outcome skipping (part 4).

The reward kind runs a real tiny random Qwen2 reward model saved to disk and loaded from one config
line; the LLM judge is the scripted SimWorld reviewer (orchestration under test) or a real HTTP
server (CLI); requests are counted at the source, never inferred.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from veriforge.llm.errors import LLMRequestError
from veriforge.llm.testing import FakeOpenAIServer
from veriforge.moa.config import ReviewerConfig, load_config
from veriforge.moa.engine import MoAEngine
from veriforge.moa.errors import MoAConfigError
from veriforge.moa.memory import Trace
from veriforge.moa.reviewers import RewardBackend, known_outcome, reviewer_spec_updates
from veriforge.moa.simulate import AGENT_MODEL, AGGREGATOR_MODEL, REVIEWER_MODEL, SimWorld, sim_config
from veriforge.rank.outcomes import Outcome

os.environ.setdefault("HF_HUB_OFFLINE", "1")

WORLD_TEXTS = [f"[Q{i}] I {how} (draw {d}).\nAnswer: {100 + i + 17 * k}" for i in range(8)
               for how in ("worked it out", "adopted a reference") for d in (12345, 987) for k in range(4)]


@pytest.fixture(scope="module")
def reward_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Qwen2 reward model (1-output head) + byte-level BPE, saved as `moa distill` would."""
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    import torch
    from transformers import Qwen2ForSequenceClassification

    from veriforge.llm.testing import tiny_qwen2_config, tiny_tokenizer

    tok = tiny_tokenizer(WORLD_TEXTS, vocab_size=400, full_byte_alphabet=True)
    torch.manual_seed(0)
    model = Qwen2ForSequenceClassification(tiny_qwen2_config(tok, num_labels=1))
    path = tmp_path_factory.mktemp("rm") / "reviewer"
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def _sim_clients(world: SimWorld, *, reviewer: bool = True) -> dict:
    clients = world.clients()
    if not reviewer:
        del clients[REVIEWER_MODEL]  # a reward/judge reviewer must not need an LLM client at all
    return clients


def _trace(tid: str, text: str, answer: str | None, parsed: bool = True) -> Trace:
    return Trace(id=tid, layer=0, agent="a", model="m", prompt="p", reasoning=text, answer=answer, parsed=parsed)


# ------------------------------------------------------------------------------------- config
def test_kind_is_inferred_and_conflicts_are_one_clear_error() -> None:
    assert ReviewerConfig().kind == "llm"
    assert ReviewerConfig(reward_model="runs/distill/reviewer").kind == "reward"
    assert ReviewerConfig(judge="pkg.mod:judge").kind == "judge"
    for bad, message in [({"kind": "reward"}, "needs reward_model"),
                         ({"reward_model": "x", "judge": "m:j"}, "not both"),
                         ({"kind": "llm", "reward_model": "x"}, "reward settings are given"),
                         ({"reward_model": "x", "model": "vllm:m"}, "makes no LLM request")]:
        with pytest.raises(MoAConfigError, match=message):
            load_config(data={"reviewer": bad})
    # a reward reviewer is not an LLM model: no client is created for it
    cfg = load_config(data={"proposers": [{"model": "p"}], "aggregator": {"model": "agg"},
                            "reviewer": {"model": "judge-llm"}})
    assert cfg.models() == ["p", "agg", "judge-llm"]
    cfg = cfg.model_copy(update={"reviewer": ReviewerConfig(reward_model="some/dir")})
    assert cfg.models() == ["p", "agg"]
    assert reviewer_spec_updates("reward:runs/r") == {"kind": "reward", "reward_model": "runs/r", "model": None,
                                                      "judge": None}
    assert reviewer_spec_updates("judge:pkg.m:J")["judge"] == "pkg.m:J"
    assert reviewer_spec_updates("vllm:Qwen/Q")["model"] == "vllm:Qwen/Q"
    assert reviewer_spec_updates("llm") == {"kind": "llm", "model": None, "reward_model": None, "judge": None}


# ------------------------------------------------------------------------------------- reward
async def test_reward_reviewer_from_one_config_line_ranks_by_its_scores_without_llm_requests(
    tmp_path: Path, reward_dir: Path
) -> None:
    from veriforge.moa.distill import RewardReviewer

    toml = tmp_path / "moa.toml"
    toml.write_text(
        "method = 'rem_moa'\ndepth = 3\nwidth = 3\n"
        f"[[proposers]]\nname = 'sim'\nmodel = '{AGENT_MODEL}'\n"
        f"[aggregator]\nname = 'aggregator'\nmodel = '{AGGREGATOR_MODEL}'\ntemperature = 0.0\n"
        f"[reviewer]\nreward_model = '{reward_dir}'\n"  # the one line; the next two only make the check exact
        "budget = 'all_pairs'\nskip_known = false\n"
    )
    cfg = load_config(toml)
    assert cfg.reviewer.kind == "reward"
    world = SimWorld(seed=4)
    result = await MoAEngine(cfg, clients=_sim_clients(world, reviewer=False)).run(world.question(3))

    assert world.calls["reviewer"] == 0 and "reviewer" not in result.account["roles"]
    question = world.question(3)
    proposals = result.memory.proposals()
    scorer = RewardReviewer.from_pretrained(reward_dir)
    scores = {t.id: scorer.score(question, t.reasoning) for t in proposals}
    assert len(set(scores.values())) == len(scores) == 9
    # all pairs judged by score difference: the Bradley–Terry ranking is the reward model's order
    assert result.memory.ranking() == sorted(scores, key=lambda t: -scores[t])
    outcomes = result.memory.outcomes
    assert len(outcomes) == 9 * 8 // 2 and all(o.reason.startswith("reward ") for o in outcomes)
    assert all(o.winner == ("a" if scores[o.a] > scores[o.b] else "b") for o in outcomes)


async def test_reward_scores_each_trace_once_per_run(reward_dir: Path) -> None:
    from veriforge.moa.distill import RewardReviewer

    backend = RewardBackend(RewardReviewer.from_pretrained(reward_dir), tie_margin=0.0)
    first = {f"t{i}": _trace(f"t{i}", WORLD_TEXTS[i], None, parsed=False) for i in range(3)}
    more = {**first, **{f"t{i}": _trace(f"t{i}", WORLD_TEXTS[i], None, parsed=False) for i in range(3, 5)}}
    await backend.comparer("q", first)
    compare = await backend.comparer("q", more)
    assert backend.forward_passes == 5  # the first three were not scored again
    out = await compare("t0", "t4")
    assert out.winner == ("a" if backend.scores["t0"] > backend.scores["t4"] else "b")
    wide = RewardBackend(backend.reviewer, tie_margin=1e9)
    assert (await (await wide.comparer("q", first))("t0", "t1")).winner == "tie"


def test_bad_reward_path_fails_fast_with_one_line(tmp_path: Path) -> None:
    world = SimWorld(seed=1)
    missing = tmp_path / "no-such-reviewer"
    cfg = sim_config("rem_moa", 2, 3, reviewer=ReviewerConfig(reward_model=str(missing)))
    with pytest.raises(MoAConfigError) as err:
        MoAEngine(cfg, clients=_sim_clients(world))
    assert str(missing) in str(err.value) and "\n" not in str(err.value)
    assert sum(world.calls.values()) == 0
    # the same config through a baseline method never loads a reviewer
    MoAEngine(cfg.replace(method="moa"), clients=_sim_clients(world))


# -------------------------------------------------------------------------------------- judge
class OracleJudge:
    """A user's own judge: knows the sim's gold answers; counts its calls."""

    calls = 0

    def __init__(self) -> None:
        self.world = SimWorld()

    async def judge(self, question: str, response_a: str, response_b: str, *, a: str = "a", b: str = "b",
                    meta: dict | None = None) -> Outcome:
        OracleJudge.calls += 1
        assert meta is not None and [meta["answer_a"], meta["answer_b"]] == [
            re.findall(r"Answer: (\S+)", r)[-1] for r in (response_a, response_b)]
        ok = [self.world.correct(question, meta[k]) for k in ("answer_a", "answer_b")]
        winner = "tie" if ok[0] == ok[1] else ("a" if ok[0] else "b")
        return Outcome(a=a, b=b, winner=winner, reason="oracle", meta=dict(meta or {}))


async def test_judge_kind_from_module_attribute() -> None:
    world = SimWorld(seed=11, p=0.4)
    OracleJudge.calls = 0
    cfg = sim_config("rem_moa", 3, 3, reviewer=ReviewerConfig(judge=f"{__name__}:OracleJudge",
                                                               budget="all_pairs"))
    result = await MoAEngine(cfg, clients=_sim_clients(world, reviewer=False)).run(world.question(4))
    flags = [world.correct(world.question(4), r.answer) for r in result.ranking]
    assert any(flags) and not all(flags) and flags == sorted(flags, reverse=True)
    asked = sum(s.comparisons - s.skipped_comparisons for s in result.layers)
    assert OracleJudge.calls == asked > 0 and world.calls["reviewer"] == 0
    for spec, message in [("no_such_module_xyz:J", "cannot import"), (f"{__name__}:Nope", "no attribute"),
                          ("veriforge.moa.reviewers:known_outcome", "no judge")]:
        with pytest.raises(MoAConfigError, match=message):
            MoAEngine(cfg.replace(reviewer={"judge": spec}), clients=_sim_clients(world))


class FlakyJudge:
    """Refuses some pairs with a veriforge error and answers others with the wrong type."""

    def __init__(self, wrong_type: bool) -> None:
        self.wrong_type = wrong_type

    async def judge(self, question: str, response_a: str, response_b: str, **ids: object) -> object:
        if self.wrong_type:
            return "a"
        raise LLMRequestError("judge server down", retryable=False, kind="test")


def broken_judge() -> FlakyJudge:
    return FlakyJudge(wrong_type=True)


def down_judge() -> FlakyJudge:
    return FlakyJudge(wrong_type=False)


async def test_judge_errors_are_failed_outcomes_and_judge_bugs_propagate() -> None:
    world = SimWorld(seed=1)
    cfg = sim_config("rem_moa", 1, 3, reviewer=ReviewerConfig(judge=f"{__name__}:down_judge", skip_known=False))
    result = await MoAEngine(cfg, clients=_sim_clients(world, reviewer=False)).run(world.question(0))
    assert result.layers[0].failed_comparisons == result.layers[0].comparisons == 3
    assert all("judge server down" in o.reason for o in result.memory.outcomes)
    with pytest.raises(TypeError, match=r"not a veriforge\.rank\.Outcome"):
        await MoAEngine(cfg.replace(reviewer={"judge": f"{__name__}:broken_judge", "skip_known": False}),
                        clients=_sim_clients(world, reviewer=False)).run(world.question(0))


# ------------------------------------------------------------------------------------ skipping
def test_known_outcomes() -> None:
    assert known_outcome(_trace("a", "same", None, False), _trace("b", "same", None, False)) == "identical responses"
    assert known_outcome(_trace("a", "x\nAnswer: 4", "4"), _trace("b", "y\nAnswer: 4", "4")) == "identical answers"
    assert known_outcome(_trace("a", "x", "4"), _trace("b", "y", "5")) is None
    assert known_outcome(_trace("a", "x", None, False), _trace("b", "y", None, False)) is None  # unparsed: ask


async def test_equal_answers_are_ties_without_requests_and_counted() -> None:
    questions = range(6)
    runs = {}
    for skip in (True, False):
        world = SimWorld(seed=2)
        cfg = sim_config("rem_moa", 3, 3, reviewer=ReviewerConfig(model=REVIEWER_MODEL, skip_known=skip))
        engine = MoAEngine(cfg, clients=world.clients())
        results = [await engine.run(world.question(i)) for i in questions]
        runs[skip] = (world.calls["reviewer"], results)
    calls, results = runs[True]
    comparisons = sum(s.comparisons for r in results for s in r.layers)
    skipped = sum(s.skipped_comparisons for r in results for s in r.layers)
    assert 0 < skipped < comparisons
    assert calls == 2 * (comparisons - skipped)  # both orders of every pair actually judged, none of the rest
    for r in results:
        for o in r.memory.outcomes:
            if o.meta.get("skipped"):
                ta, tb = r.memory[o.a], r.memory[o.b]
                assert o.winner == "tie" and not o.judgements and ta.answer == tb.answer and ta.parsed
            else:
                assert len(o.judgements) == 2
    calls_off, results_off = runs[False]
    assert sum(s.skipped_comparisons for r in results_off for s in r.layers) == 0
    assert calls_off == 2 * sum(s.comparisons for r in results_off for s in r.layers) > calls
    # the sim reviewer ties equal answers too, so skipping changes no outcome, only the bill
    assert [r.answer for r in results] == [r.answer for r in results_off]


# ----------------------------------------------------------------------------------------- CLI
def _http_reply(body: dict, index: int) -> str:
    last = body["messages"][-1]["content"]
    if "Which response is better" in last:
        return "A reads better.\n[[A]]"
    return f"Thinking about it (seed {body.get('seed')}, sample {index}).\nAnswer: {body.get('seed', 0) % 3}"


@pytest.fixture
def cli_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # no stray ./veriforge.toml
    return tmp_path


def test_cli_reviewer_option_selects_the_backend(cli_dir: Path, reward_dir: Path) -> None:
    from veriforge.cli.moa_cmd import app

    with FakeOpenAIServer(replies=_http_reply, models=["agent", "judge"]) as server:
        (cli_dir / "moa.toml").write_text(
            f"depth = 2\nwidth = 3\n[[proposers]]\nmodel = 'agent@{server.base_url}'\n"
            "[reviewer]\nbudget = 'all_pairs'\nskip_known = false\n"
        )

        def judged_by() -> list[str]:
            return [r.body["model"] for r in server.chat_requests
                    if "Which response is better" in r.body["messages"][-1]["content"]]

        ask = ["ask", "What is the number?", "--config", "moa.toml", "--json"]
        plain = CliRunner().invoke(app, ask)
        assert plain.exit_code == 0, plain.output
        assert judged_by() and set(judged_by()) == {"agent"}  # default: the aggregator's model

        server.reset()
        other = CliRunner().invoke(app, [*ask, "--reviewer", f"judge@{server.base_url}"])
        assert other.exit_code == 0, other.output
        assert judged_by() and set(judged_by()) == {"judge"}

        server.reset()
        reward = CliRunner().invoke(app, [*ask, "--reviewer", f"reward:{reward_dir}"])
        assert reward.exit_code == 0, reward.output
        data = json.loads(reward.output)
        assert judged_by() == [] and sum(x["comparisons"] for x in data["layers"]) == 15
        assert "reviewer" not in data["account"]["roles"]

        server.reset()
        bad = CliRunner().invoke(app, [*ask, "--reviewer", f"reward:{cli_dir / 'missing'}"])
        assert bad.exit_code == 2 and str(cli_dir / "missing") in bad.output
        assert bad.output.strip().count("\n") == 0 and server.chat_requests == []
        bench = CliRunner().invoke(app, ["bench", "--suite", "gsm8k", "--limit", "1", "--methods", "rem_moa",
                                         "--config", "moa.toml", "--out", "o", "--no-plots",
                                         "--reviewer", f"reward:{cli_dir / 'missing'}"])
        assert bench.exit_code == 2 and str(cli_dir / "missing") in bench.output
        assert server.chat_requests == []


def test_bench_with_a_reward_reviewer_makes_no_judge_requests_and_names_it_in_the_export(
    cli_dir: Path, reward_dir: Path
) -> None:
    from veriforge.cli.moa_cmd import app
    from veriforge.moa.distill import read_judgements

    with FakeOpenAIServer(replies=_http_reply, models=["agent"]) as server:
        (cli_dir / "moa.toml").write_text(f"[[proposers]]\nmodel = 'agent@{server.base_url}'\n"
                                          "[reviewer]\nbudget = 'all_pairs'\nskip_known = false\n")
        result = CliRunner().invoke(app, ["bench", "--suite", "gsm8k", "--limit", "2", "--depth", "2", "--width",
                                          "2", "--methods", "rem_moa", "--config", "moa.toml", "--out", "out",
                                          "--no-plots", "--export-distill", "distill",
                                          "--reviewer", f"reward:{reward_dir}"])
        assert result.exit_code == 0, result.output
        assert not any("Which response is better" in r.body["messages"][-1]["content"]
                       for r in server.chat_requests)
    judged = read_judgements(cli_dir / "distill" / "judgements.jsonl")
    assert len(judged) == 2 * 6  # two items, all pairs of 2 layers x 2 agents
    assert {j.teacher for j in judged} == {f"reward:{reward_dir}"}
    assert all(j.reason.startswith("reward ") for j in judged)


def test_reward_reviewer_keeps_the_end_of_an_over_long_response(reward_dir: Path) -> None:
    """Texts are cut from the left: the final answer (at the end) is what gets scored."""
    from veriforge.moa.distill import RewardReviewer

    reviewer = RewardReviewer.from_pretrained(reward_dir, max_length=16)
    tail = "\nAnswer: 117" * 8
    long_a, long_b = "I worked it out. " * 20 + tail, "adopted a reference (draw 987). " * 20 + tail
    a, b = reviewer.scores([long_a, long_b], batch_size=1)
    assert a == pytest.approx(b)  # same last 16 tokens, same score
    c, d = reviewer.scores([tail + "I worked it out. " * 20, tail + "Answer: 100 " * 20], batch_size=1)
    assert c != pytest.approx(d)  # different ends are scored differently
    assert reviewer.tokenizer.truncation_side == "right"  # restored for training
