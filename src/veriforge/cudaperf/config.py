"""``cudaperf.toml``: the one configuration of a CudaPerf GRPO run, from a tiny CPU model to vLLM on GPUs.

Why one validated tree: a GRPO run is minutes to days of accelerator time, so a typo (``turn = 3``),
an impossible group (``num_generations = 1`` gives every sample a zero advantage) or a reward
weight that lets a policy profit from being wrong must fail when the file is read, with the field's
path in the message, not an hour into training. Every section forbids unknown keys. The same file
scales by changing values only: ``model.name``, ``train.num_generations``, ``vllm.enabled`` and
``reward.executor = "ray"`` move a run from the tiny random model on CPU to a served policy with an
evaluation farm (docs/cudaperf-train.md)::

    output_dir = "runs/cudaperf-tiny"
    seed = 0

    [model]
    name = "tiny-random"          # or an HF id / local path

    [tasks]
    ids = ["c2cuda/vector_add", "c2cuda/saxpy"]

    [rollout]
    turns = 2
    gamma = 0.4

    [train]
    num_generations = 2
    steps = 1

    [reward]
    preset = "veriforge"
    executor = "threads"

``--set section.key=value`` overrides (:func:`apply_overrides`) are applied before validation, so
they are checked exactly like the file.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from veriforge.errors import ConfigError

__all__ = [
    "TINY_RANDOM",
    "CudaPerfConfigError",
    "ModelSection",
    "RewardSection",
    "RolloutSection",
    "TasksSection",
    "TrainConfig",
    "TrainSection",
    "VLLMSection",
    "apply_overrides",
    "from_dict",
    "load_config",
]

#: ``model.name`` for a randomly initialised 2-layer Qwen2 with a tokenizer trained on the task
#: prompts (veriforge.llm.testing): real TRL code paths on the CPU in seconds, nothing downloaded.
TINY_RANDOM = "tiny-random"

_FAMILIES = ("c2cuda", "torch2cuda")


class CudaPerfConfigError(ConfigError, ValueError):
    """A ``cudaperf.toml`` (or a ``--set`` override) that cannot describe a run."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelSection(_Section):
    """The policy. ``name``: ``"tiny-random"``, a Hugging Face id or a local checkpoint folder.

    ``dtype`` "auto" is float32 on CPU and bfloat16 on GPUs. ``tiny_*`` size the tiny random model
    only (its context must hold the prompt plus every turn).
    """

    name: str = TINY_RANDOM
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    trust_remote_code: bool = False
    tiny_hidden_size: int = Field(default=32, ge=8)
    tiny_layers: int = Field(default=2, ge=1)
    tiny_vocab_size: int = Field(default=600, ge=300)

    @field_validator("name")
    @classmethod
    def _named(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("model.name is empty: use 'tiny-random', a Hugging Face id or a checkpoint folder")
        return v.strip()

    @property
    def is_tiny(self) -> bool:
        return self.name == TINY_RANDOM


class TasksSection(_Section):
    """Which tasks become prompts.

    ``ids``: bundled ids (``vector_add``, ``c2cuda/saxpy``) or task folders. ``dataset``: a built
    CudaPerf dataset directory, of which ``split`` is used (``DIR/<split>/`` holding task folders,
    or ``DIR/<split>.jsonl`` whose rows name task folders). Filters apply to both: ``family``,
    ``categories``, ``match`` (a glob on the task id), then ``limit`` (first N, sorted by id).
    ``repeat`` puts each task that many times in the training set (one pass = one epoch).
    """

    ids: list[str] = Field(default_factory=list)
    dataset: str | None = None
    split: str = "train"
    family: Literal["c2cuda", "torch2cuda"] | None = None
    categories: list[str] = Field(default_factory=list)
    match: str | None = None
    limit: int | None = Field(default=None, ge=1)
    repeat: int = Field(default=1, ge=1)

    @model_validator(mode="after")
    def _some_tasks(self) -> TasksSection:
        if not self.ids and not self.dataset:
            raise ValueError("name the tasks: tasks.ids (bundled ids or task folders) or tasks.dataset (a built "
                             "dataset directory)")
        from veriforge.cuda.tasks.schema import CATEGORIES

        bad = [c for c in self.categories if c not in CATEGORIES]
        if bad:
            raise ValueError(f"unknown categories {bad}; known: {', '.join(CATEGORIES)}")
        return self


class RolloutSection(_Section):
    """Multi-turn refinement: ``turns`` attempts per rollout, each followed by the harness's feedback.

    Turn t's action is trained on the discounted return ``G_t = sum_{k>=t} gamma^(k-t) r_k`` (Kevin:
    gamma = 0.4). ``advantage = "turn"`` normalises G_t within the group per turn and gives each
    turn's tokens its own advantage; ``"trajectory"`` gives every token the group-normalised G_1.
    Token limits: ``max_prompt_tokens`` (tasks whose prompt is longer are left out, and reported),
    ``max_completion_tokens`` per turn, ``max_feedback_tokens`` per feedback message (cut, marked).
    """

    turns: int = Field(default=4, ge=1)
    gamma: float = Field(default=0.4, ge=0.0, le=1.0)
    max_prompt_tokens: int = Field(default=2048, ge=16)
    max_completion_tokens: int = Field(default=1024, ge=1)
    max_feedback_tokens: int = Field(default=512, ge=16)
    temperature: float = Field(default=1.0, gt=0.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    advantage: Literal["turn", "trajectory"] = "turn"

    @property
    def max_context_tokens(self) -> int:
        """The longest prompt + completion a rollout can build (what the model's context must hold)."""
        # each later turn adds the feedback plus a few chat-template tokens around it
        return self.max_prompt_tokens + self.turns * self.max_completion_tokens + \
            (self.turns - 1) * (self.max_feedback_tokens + 16)


class TrainSection(_Section):
    """The optimiser and GRPO settings (passed to TRL's ``GRPOConfig``).

    ``num_generations`` is the GRPO group size (rollouts per task per step; >= 2, or every
    advantage is zero); ``prompts_per_step`` distinct tasks per step. ``extra`` is passed verbatim
    to ``GRPOConfig`` (checked against its fields when the trainer is built).
    """

    num_generations: int = Field(default=8, ge=2)
    prompts_per_step: int = Field(default=1, ge=1)
    learning_rate: float = Field(default=1e-6, gt=0.0)
    steps: int = Field(default=100, ge=1)
    gradient_accumulation_steps: int = Field(default=1, ge=1)
    beta: float = Field(default=0.0, ge=0.0)
    epsilon: float = Field(default=0.2, gt=0.0)
    loss_type: Literal["dapo", "grpo", "dr_grpo", "bnpo", "cispo"] = "dapo"
    scale_rewards: Literal["group", "batch", "none"] = "group"
    use_cpu: bool | None = None  # None: CPU when no GPU is visible
    gradient_checkpointing: bool = False
    logging_steps: int = Field(default=1, ge=1)
    save_steps: int | None = Field(default=None, ge=1)  # None: save only at the end
    save_model: bool = True
    extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("extra")
    @classmethod
    def _no_shadowing(cls, v: dict[str, Any]) -> dict[str, Any]:
        owned = {"output_dir", "seed", "num_generations", "learning_rate", "max_steps", "use_vllm", "vllm_mode",
                 "max_completion_length", "temperature", "beta", "loss_type", "per_device_train_batch_size"}
        clash = sorted(owned & set(v))
        if clash:
            raise ValueError(f"train.extra may not set {clash}: they have their own cudaperf.toml keys")
        return v


class RewardSection(_Section):
    """The unified reward (veriforge.cudaperf.reward) and the evaluation farm that computes it.

    ``preset`` "veriforge" | "kevin" | "kernelgym"; ``weights`` overrides fields of its
    ``RewardConfig`` (the config refuses weights that would let a policy gain by being wrong).
    ``backend`` "cpu" (the CPU runtime, estimated times) or "gpu" (measured). ``executor``:
    "threads" (each evaluation is already an isolated subprocess on the CPU back-end), "processes"
    or "ray" (``ray_address`` "local" or a cluster, ``ray_num_gpus`` per evaluation job).
    """

    preset: Literal["veriforge", "kevin", "kernelgym"] = "veriforge"
    weights: dict[str, float] = Field(default_factory=dict)
    structure_weights: dict[str, float] | None = None
    backend: Literal["cpu", "gpu"] = "cpu"
    gpu: str = "H100-SXM"
    executor: Literal["threads", "processes", "ray"] = "threads"
    jobs: int = Field(default=2, ge=1)
    ray_address: str = "local"
    ray_num_gpus: float = Field(default=0.0, ge=0.0)
    timeout_s: float | None = Field(default=None, gt=0.0)

    @model_validator(mode="after")
    def _buildable(self) -> RewardSection:
        self.reward_config()  # raises on unknown keys or weights that break the reward's invariants
        return self

    def reward_config(self) -> Any:
        """The :class:`~veriforge.cudaperf.reward.RewardConfig` these settings describe."""
        from dataclasses import fields, replace

        from veriforge.cudaperf.reward import PRESETS, RewardError

        base = PRESETS[self.preset]
        known = {f.name for f in fields(base)} - {"shape", "structure_weights"}
        unknown = sorted(set(self.weights) - known)
        if unknown:
            raise ValueError(f"unknown reward weights {unknown}; known: {', '.join(sorted(known))}")
        changes: dict[str, Any] = dict(self.weights)
        if self.structure_weights is not None:
            changes["structure_weights"] = dict(self.structure_weights)
        try:
            return replace(base, **changes) if changes else base
        except RewardError as exc:
            raise ValueError(str(exc)) from None


class VLLMSection(_Section):
    """Generation with vLLM, passed through to TRL (``use_vllm``, ``vllm_mode``, ``vllm_*``).

    ``mode = "server"``: a ``trl vllm-serve`` process on other GPUs (``server_base_url``, or
    ``server_host``/``server_port``); ``"colocate"``: vLLM inside the training processes
    (``gpu_memory_utilization`` of each GPU). Untested on this machine (no GPU).
    """

    enabled: bool = False
    mode: Literal["server", "colocate"] = "server"
    server_base_url: str | None = None
    server_host: str = "0.0.0.0"
    server_port: int = Field(default=8000, ge=1, le=65535)
    server_timeout: float = Field(default=240.0, gt=0.0)
    gpu_memory_utilization: float = Field(default=0.3, gt=0.0, le=1.0)
    tensor_parallel_size: int = Field(default=1, ge=1)
    max_model_length: int | None = Field(default=None, ge=64)
    importance_sampling_correction: bool = True


class TrainConfig(_Section):
    """A whole ``veriforge cudaperf train`` run (see the module docstring for the file layout)."""

    output_dir: str = "runs/cudaperf"
    seed: int = 0
    model: ModelSection = Field(default_factory=ModelSection)
    tasks: TasksSection
    rollout: RolloutSection = Field(default_factory=RolloutSection)
    train: TrainSection = Field(default_factory=TrainSection)
    reward: RewardSection = Field(default_factory=RewardSection)
    vllm: VLLMSection = Field(default_factory=VLLMSection)

    @model_validator(mode="after")
    def _consistent(self) -> TrainConfig:
        if self.vllm.enabled and self.model.is_tiny:
            raise ValueError("vllm.enabled needs a model on disk or on the Hub; 'tiny-random' exists only in memory")
        if self.vllm.enabled and self.vllm.max_model_length is not None and \
                self.vllm.max_model_length < self.rollout.max_context_tokens:
            raise ValueError(f"vllm.max_model_length ({self.vllm.max_model_length}) cannot hold a whole rollout "
                             f"({self.rollout.max_context_tokens} tokens: prompt + turns x (completion + feedback))")
        if self.reward.backend == "gpu" and self.reward.executor == "ray" and self.reward.ray_num_gpus == 0:
            raise ValueError("reward.backend = 'gpu' with the Ray executor needs reward.ray_num_gpus > 0, or the "
                             "evaluations would be scheduled on machines without a GPU")
        return self

    @property
    def batch_size(self) -> int:
        """Rollouts per optimisation step on one device: group size x distinct prompts."""
        return self.train.num_generations * self.train.prompts_per_step

    def dump(self) -> dict[str, Any]:
        """The validated config as plain data (written next to the run's log)."""
        return self.model_dump(mode="json")


# ------------------------------------------------------------------------------------------ loading
def _parse_value(text: str) -> Any:
    """A ``--set`` value as TOML (``3``, ``0.4``, ``true``, ``["a", "b"]``), else the raw string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_overrides(data: Mapping[str, Any], overrides: Sequence[str] | Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with ``--set`` overrides applied: ``["rollout.turns=3", "model.name=Qwen/Qwen2.5-0.5B"]``
    or a mapping of dotted keys to values. Returns a new nested dict (``data`` is not changed)."""
    out: dict[str, Any] = _deepcopy(data)
    items: list[tuple[str, Any]]
    if isinstance(overrides, Mapping):
        items = list(overrides.items())
    else:
        items = []
        for item in overrides:
            key, sep, value = str(item).partition("=")
            if not sep or not key.strip():
                raise CudaPerfConfigError(f"--set expects KEY=VALUE (e.g. rollout.turns=3), got {item!r}")
            items.append((key, _parse_value(value.strip())))
    for key, value in items:
        parts = [p.strip() for p in str(key).split(".")]
        if any(not p for p in parts):
            raise CudaPerfConfigError(f"bad --set key {key!r}")
        node = out
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise CudaPerfConfigError(f"--set {key}: {part!r} is a value, not a section")
            node = child
        node[parts[-1]] = value
    return out


def _deepcopy(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _deepcopy(v) if isinstance(v, Mapping) else (list(v) if isinstance(v, list) else v)
            for k, v in data.items()}


def _describe(exc: ValidationError, where: str) -> str:
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key (check the spelling; docs/cudaperf-train.md lists every key)"
        lines.append(f"  {loc}: {msg}")
    return f"{where}: invalid CudaPerf training config:\n" + "\n".join(lines)


def from_dict(data: Mapping[str, Any], *, where: str = "cudaperf config") -> TrainConfig:
    """Validate a config tree (a ``[cudaperf]`` table around it is accepted too)."""
    if set(data) == {"cudaperf"} and isinstance(data["cudaperf"], Mapping):
        data = data["cudaperf"]
    try:
        return TrainConfig.model_validate(dict(data))
    except ValidationError as exc:
        raise CudaPerfConfigError(_describe(exc, where)) from None


def load_config(path: str | Path | None = None, overrides: Sequence[str] | Mapping[str, Any] = (),
                ) -> TrainConfig:
    """Read ``cudaperf.toml`` (``path``; None: only ``overrides``), apply ``--set`` overrides, validate."""
    data: dict[str, Any] = {}
    where = "--set overrides"
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise CudaPerfConfigError(f"{p}: no such config file")
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise CudaPerfConfigError(f"{p}: invalid TOML: {exc}") from None
        where = str(p)
    if overrides:
        if set(data) == {"cudaperf"}:
            data = dict(data["cudaperf"])
        data = apply_overrides(data, overrides)
    return from_dict(data, where=where)
