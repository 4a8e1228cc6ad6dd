"""cudaperf.toml: every mistake that would waste a training run fails when the file is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from veriforge.cudaperf.config import CudaPerfConfigError, apply_overrides, from_dict, load_config
from veriforge.errors import ConfigError

EXAMPLES = Path(__file__).parents[2] / "examples" / "cudaperf"
BASE = {"tasks": {"ids": ["c2cuda/vector_add"]}}


def _bad(data: dict, *needles: str) -> str:
    with pytest.raises(CudaPerfConfigError) as info:
        from_dict(data)
    text = str(info.value)
    for needle in needles:
        assert needle in text, text
    return text


def test_defaults_follow_kevin_and_trl() -> None:
    cfg = from_dict(BASE)
    assert cfg.rollout.gamma == 0.4 and cfg.rollout.turns >= 2
    assert cfg.train.num_generations >= 2 and cfg.train.loss_type == "dapo"
    assert cfg.model.is_tiny and not cfg.vllm.enabled
    assert cfg.reward.reward_config().compile_error == -0.5  # the veriforge preset
    assert cfg.batch_size == cfg.train.num_generations * cfg.train.prompts_per_step


def test_unknown_keys_are_refused_with_their_path() -> None:
    _bad({**BASE, "rollout": {"turn": 3}}, "rollout.turn", "unknown key")
    _bad({**BASE, "learning_rate": 1e-5}, "learning_rate", "unknown key")
    _bad({**BASE, "vllm": {"enable": True}}, "vllm.enable")


@pytest.mark.parametrize(("section", "values", "field"), [
    ("rollout", {"turns": 0}, "rollout.turns"),
    ("rollout", {"gamma": 1.5}, "rollout.gamma"),
    ("rollout", {"gamma": -0.1}, "rollout.gamma"),
    ("train", {"num_generations": 1}, "train.num_generations"),
    ("train", {"learning_rate": 0}, "train.learning_rate"),
    ("train", {"steps": 0}, "train.steps"),
    ("rollout", {"max_completion_tokens": 0}, "rollout.max_completion_tokens"),
    ("reward", {"executor": "mpi"}, "reward.executor"),
    ("vllm", {"mode": "remote"}, "vllm.mode"),
])
def test_out_of_range_values(section: str, values: dict, field: str) -> None:
    _bad({**BASE, section: values}, field)


def test_every_error_is_listed_at_once() -> None:
    text = _bad({**BASE, "rollout": {"turns": 0, "gamma": 2}, "train": {"num_generations": 1}})
    assert "rollout.turns" in text and "rollout.gamma" in text and "train.num_generations" in text


def test_tasks_must_be_named_and_categories_known() -> None:
    _bad({}, "tasks")
    _bad({"tasks": {}}, "name the tasks")
    _bad({"tasks": {"ids": ["x"], "categories": ["nonsense"]}}, "unknown categories")


def test_reward_weights_keep_the_reward_invariants() -> None:
    _bad({**BASE, "reward": {"weights": {"correct": 0.05}}}, "being wrong pays more")
    _bad({**BASE, "reward": {"weights": {"corect": 0.5}}}, "unknown reward weights", "corect")
    cfg = from_dict({**BASE, "reward": {"preset": "kevin"}})
    assert cfg.reward.reward_config().shape == "kevin"
    cfg = from_dict({**BASE, "reward": {"weights": {"speed": 0.3}}})
    assert cfg.reward.reward_config().speed == 0.3


def test_inconsistent_sections() -> None:
    _bad({**BASE, "vllm": {"enabled": True}}, "tiny-random")
    _bad({**BASE, "model": {"name": "Qwen/Qwen2.5-0.5B-Instruct"},
          "vllm": {"enabled": True, "max_model_length": 512}}, "cannot hold a whole rollout")
    _bad({**BASE, "reward": {"backend": "gpu", "executor": "ray"}}, "ray_num_gpus")
    _bad({**BASE, "train": {"extra": {"learning_rate": 1.0}}}, "train.extra")


def test_set_overrides_are_typed_and_validated(tmp_path: Path) -> None:
    path = tmp_path / "cudaperf.toml"
    path.write_text('[tasks]\nids = ["vector_add"]\n[rollout]\nturns = 2\n')
    cfg = load_config(path, ["rollout.turns=3", "rollout.gamma=0.9", 'tasks.ids=["saxpy", "vector_add"]',
                             "model.name=my/model", "train.save_model=false"])
    assert cfg.rollout.turns == 3 and cfg.rollout.gamma == 0.9
    assert cfg.tasks.ids == ["saxpy", "vector_add"] and cfg.model.name == "my/model"
    assert cfg.train.save_model is False
    with pytest.raises(CudaPerfConfigError, match=r"rollout\.turns"):
        load_config(path, ["rollout.turns=0"])
    with pytest.raises(CudaPerfConfigError, match="KEY=VALUE"):
        load_config(path, ["rollout.turns"])
    with pytest.raises(CudaPerfConfigError, match="not a section"):
        apply_overrides({"seed": 1}, ["seed.x=2"])


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(CudaPerfConfigError, match="no such config file"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[rollout\nturns = 2")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(bad)
    wrapped = tmp_path / "wrapped.toml"
    wrapped.write_text('[cudaperf.tasks]\nids = ["vector_add"]\n[cudaperf.rollout]\nturns = 1\n')
    assert load_config(wrapped, ["rollout.gamma=0"]).rollout.turns == 1


def test_shipped_examples_validate() -> None:
    tiny = load_config(EXAMPLES / "tiny.toml")
    assert tiny.model.is_tiny and tiny.rollout.turns == 2 and tiny.train.num_generations == 2
    big = load_config(EXAMPLES / "vllm.toml")
    assert big.vllm.enabled and not big.model.is_tiny and big.reward.executor == "ray"
