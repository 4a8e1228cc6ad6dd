"""``veriforge cudaperf train``: GRPO with multi-turn refinement, from a ``cudaperf.toml``.

:func:`train` builds everything from one :class:`~veriforge.cudaperf.config.TrainConfig`:

* **the policy** — ``model.name = "tiny-random"``: a random 2-layer Qwen2 and a byte-level BPE
  tokenizer trained on the task prompts in milliseconds (real transformers/TRL code paths on a CPU,
  nothing downloaded; it writes garbage, which the reward scores as a failure); otherwise any
  causal LM from the Hub or a folder, generating with transformers or a vLLM server/colocated
  engine through TRL;
* **the prompts** — :func:`veriforge.cudaperf.feedback.task_prompt` of each selected task (one
  wording for training and inference), tasks whose prompt exceeds ``max_prompt_tokens`` left out
  and reported;
* **the evaluation farm** (:class:`EvaluationFarm`) — every attempt is compiled, verified and
  scored by the unified reward concurrently (threads over the CPU back-end's subprocess-isolated
  evaluations, a process pool, or Ray workers with GPUs), cached by content hash so duplicate
  attempts — common once a policy converges — are evaluated once and never wait on a queue;
* **the trainer** — TRL's GRPOTrainer with :class:`~veriforge.cudaperf.rollout.MultiTurnRollout`
  as ``rollout_func`` (per-turn returns, feedback masked from the loss);
* **the log** — ``train_log.jsonl`` (TRL's metrics per step: loss, reward = G_1, per-turn reward,
  return and correctness rate, grad norm), ``rollouts.jsonl`` (every attempt, its outcome, reward,
  return and the feedback it got), ``config.json`` and ``summary.json`` in ``output_dir``.

:func:`verl_rows` / :func:`export_verl` write the same tasks in verl's RL parquet layout for cluster
scale (docs/cudaperf-train.md).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from veriforge.cudaperf.config import CudaPerfConfigError, RewardSection, TasksSection, TrainConfig
from veriforge.cudaperf.rollout import Generate, MultiTurnRollout, Rollout, Scored, prompt_key, return_reward
from veriforge.errors import VeriforgeError

__all__ = [
    "TINY_CHAT_TEMPLATE",
    "EvaluationFarm",
    "TrainError",
    "TrainResult",
    "VerlInteraction",
    "build_policy",
    "evaluate_attempt",
    "export_verl",
    "resolve_tasks",
    "task_ref",
    "train",
    "verl_compute_score",
    "verl_rows",
]

#: A minimal chat template for the tiny random tokenizer (it has none): role headers, EOS after
#: every message, so feedback turns are framed exactly as for a real instruct model.
TINY_CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}<|endoftext|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


class TrainError(VeriforgeError, RuntimeError):
    """Training cannot start or continue (no usable task, a model that cannot be loaded, ...)."""


# ------------------------------------------------------------------------------------------ tasks
def task_ref(spec: Any) -> str:
    """How the dataset, the farm and verl's ``ground_truth`` name a task: ``family/id`` for a
    bundled task (portable to every worker), else the task folder's absolute path."""
    from veriforge.cuda.tasks.load import bundled_root

    folder = Path(spec.folder).resolve() if spec.folder is not None else None
    root = bundled_root().resolve()
    if folder is not None and folder.parent.parent == root:
        return f"{spec.family}/{spec.id}"
    return str(folder) if folder is not None else spec.id


def _dataset_folders(section: TasksSection) -> list[Path]:
    root = Path(str(section.dataset))
    if not root.is_dir():
        raise CudaPerfConfigError(f"tasks.dataset: {root} is not a directory")
    from veriforge.cuda.tasks.load import iter_tasks

    split_dir = root / section.split
    if split_dir.is_dir():
        return list(iter_tasks(split_dir))
    # data/<split>.jsonl is what `veriforge cudaperf dataset build` exports (task_dir relative to DIR)
    for name in (f"data/{section.split}.jsonl", f"{section.split}.jsonl", f"splits/{section.split}.jsonl"):
        listing = root / name
        if listing.is_file():
            out = []
            for n, line in enumerate(listing.read_text(encoding="utf-8").splitlines(), 1):
                if not line.strip():
                    continue
                row = json.loads(line)
                rel = row.get("task_dir") or row.get("folder") or row.get("path")
                if not rel:
                    raise CudaPerfConfigError(f"{listing}:{n}: a row needs task_dir (the task folder)")
                out.append(root / rel)
            return out
    raise CudaPerfConfigError(f"tasks.dataset: {root} has no split {section.split!r} (looked for {split_dir}/ and "
                              f"{section.split}.jsonl)")


def resolve_tasks(section: TasksSection) -> list[Any]:
    """The TaskSpecs the config selects: ids, then the dataset split, filtered, sorted, limited."""
    from veriforge.cuda.tasks.load import find_task, load_task
    from veriforge.cuda.tasks.schema import TaskFormatError

    folders: list[Path] = []
    for ref in section.ids:
        try:
            folders.append(find_task(ref))
        except TaskFormatError as exc:
            raise CudaPerfConfigError(f"tasks.ids: {exc}") from None
    if section.dataset:
        folders += _dataset_folders(section)
    specs, seen = [], set()
    for folder in folders:
        key = str(Path(folder).resolve())
        if key in seen:
            continue
        seen.add(key)
        try:
            spec = load_task(folder)
        except TaskFormatError as exc:
            raise CudaPerfConfigError(f"tasks: {exc}") from None
        if section.family and spec.family != section.family:
            continue
        if section.categories and spec.category not in section.categories:
            continue
        if section.match and not (fnmatch.fnmatch(spec.id, section.match)
                                  or fnmatch.fnmatch(f"{spec.family}/{spec.id}", section.match)):
            continue
        specs.append(spec)
    if section.ids:  # the order the user wrote, then the dataset's tasks by id
        named = len(section.ids)
        specs = specs[:named] + sorted(specs[named:], key=lambda s: (s.family, s.id))
    else:
        specs.sort(key=lambda s: (s.family, s.id))
    if section.limit:
        specs = specs[: section.limit]
    if not specs:
        raise CudaPerfConfigError("the [tasks] selection is empty (check ids, dataset/split and the filters)")
    return specs


# ----------------------------------------------------------------------------------- the farm
def evaluate_attempt(task: str, source: str, language: str, backend: str, config: Any, gpu: str,
                     baseline: Any, timeout: float | None) -> tuple[Any, Any]:
    """One farm job (module level, so process pools and Ray can ship it): evaluate a candidate with
    the harness and score it with the unified reward. Text the harness cannot even take (it raised)
    is a compile failure, as in the reward's own adapters, so a hostile completion never kills a
    rollout."""
    from veriforge.core.types import Candidate, Verdict
    from veriforge.cuda.evaluate import evaluate
    from veriforge.cuda.evaluate.result import EvalResult
    from veriforge.cudaperf.reward import reward

    try:
        res = evaluate(task, Candidate(source=source, language=language), backend=backend, timeout=timeout)
    except Exception as exc:
        res = EvalResult(verdict=Verdict.compile_failed(f"{type(exc).__name__}: {exc}"[:500]), task_id=task,
                         backend=backend, details={"candidate_source": source})
    return res, reward(res, baseline, config=config, gpu=gpu)


def evaluate_baseline(task: str, backend: str, timeout: float | None) -> Any:
    """The speed baseline of a task: its first implementation, evaluated like any candidate."""
    from veriforge.cuda.evaluate import evaluate
    from veriforge.cuda.evaluate.harness import resolve_task

    spec = resolve_task(task)
    if not spec.implementations or spec.folder is None:
        return None  # no baseline: the speed term is not scored
    return evaluate(spec, Path(spec.folder) / spec.implementations[0].file, backend=backend, timeout=timeout)


def _timeout_result(task: str, source: str, backend: str, why: str) -> Any:
    from veriforge.core.types import Verdict
    from veriforge.cuda.evaluate.result import EvalResult

    return EvalResult(verdict=Verdict(compiled=True, correct=False, reason=f"timeout: {why}"), task_id=task,
                      backend=backend, details={"status": "timeout", "candidate_source": source})


class EvaluationFarm:
    """Evaluates attempts concurrently and caches them by content: the rollouts' :class:`Scorer`.

    ``executor``: "threads" (default; the CPU back-end already isolates every candidate in its own
    subprocess, so the harness process only waits), "processes" (a process pool) or "ray"
    (:class:`~veriforge.cuda.evaluate.executor.RayExecutor`; ``ray_num_gpus`` per job for GPU
    back-ends). Identical attempts (same task, language and source hash) share one job — in
    flight or finished — so a batch full of duplicates costs one evaluation.
    """

    def __init__(self, *, backend: str = "cpu", reward_config: Any = "veriforge", gpu: str = "H100-SXM",
                 executor: str = "threads", jobs: int = 2, ray_address: str = "local", ray_num_gpus: float = 0.0,
                 timeout_s: float | None = None) -> None:
        from veriforge.cuda.evaluate.executor import LocalExecutor, RayExecutor, ThreadExecutor

        self.backend, self.reward_config, self.gpu, self.timeout = backend, reward_config, gpu, timeout_s
        if executor == "threads":
            self._executor: Any = ThreadExecutor(max_workers=jobs)
        elif executor == "processes":
            self._executor = LocalExecutor(max_workers=jobs)
        elif executor == "ray":
            self._executor = RayExecutor(ray_address, num_cpus=jobs, num_gpus=ray_num_gpus, timeout=timeout_s)
        else:
            raise CudaPerfConfigError(f"unknown reward.executor {executor!r}: threads, processes or ray")
        self.executor_name = executor
        self._lock = threading.Lock()
        self._jobs: dict[tuple[str, str, str], Future] = {}
        self._baselines: dict[str, Future] = {}
        self._families: dict[str, str] = {}
        self.requests = 0
        self.hits = 0

    @classmethod
    def from_config(cls, section: RewardSection) -> EvaluationFarm:
        return cls(backend=section.backend, reward_config=section.reward_config(), gpu=section.gpu,
                   executor=section.executor, jobs=section.jobs, ray_address=section.ray_address,
                   ray_num_gpus=section.ray_num_gpus, timeout_s=section.timeout_s)

    def family(self, task: str) -> str:
        with self._lock:
            if task in self._families:
                return self._families[task]
        from veriforge.cuda.evaluate.harness import resolve_task

        fam = str(resolve_task(task).family)
        with self._lock:
            self._families[task] = fam
        return fam

    def _baseline(self, task: str) -> Future:
        with self._lock:
            fut = self._baselines.get(task)
            if fut is None:
                fut = self._executor.submit(evaluate_baseline, task, self.backend, self.timeout)
                self._baselines[task] = fut
        return fut

    def submit(self, task: str, text: str) -> tuple[str, Future]:
        """Start scoring a completion's candidate; returns ``(source, future of (result, reward))``."""
        from veriforge.cudaperf.feedback import extract_candidate

        family = self.family(task)
        source = extract_candidate(text, family)
        language = "cuda" if family == "c2cuda" else "python"
        key = (task, language, hashlib.sha256(source.encode()).hexdigest())
        with self._lock:
            self.requests += 1
            fut = self._jobs.get(key)
            if fut is not None:
                self.hits += 1
                return source, fut
        try:
            baseline = self._baseline(task).result()
        except Exception:  # a baseline that cannot be evaluated only costs the speed term
            baseline = None
        with self._lock:
            fut = self._jobs.get(key)
            if fut is None:
                fut = self._executor.submit(evaluate_attempt, task, source, language, self.backend,
                                            self.reward_config, self.gpu, baseline, self.timeout)
                self._jobs[key] = fut
            else:
                self.hits += 1
        return source, fut

    def score_many(self, tasks: Sequence[str], texts: Sequence[str]) -> list[Scored]:
        """Score every ``(task, completion text)`` pair; jobs run concurrently, results in order."""
        from veriforge.cudaperf.reward import reward

        for task in dict.fromkeys(tasks):  # all baselines in flight at once
            self._baseline(task)
        started = [self.submit(t, x) for t, x in zip(tasks, texts, strict=True)]
        out = []
        for task, (source, fut) in zip(tasks, started, strict=True):
            try:
                res, rew = fut.result()
            except Exception as exc:  # the job itself died or timed out (Ray): score as a timeout
                res = _timeout_result(task, source, self.backend, f"{type(exc).__name__}: {exc}"[:300])
                rew = reward(res, None, config=self.reward_config, gpu=self.gpu)
            out.append(Scored(source=source, result=res, reward=rew))
        return out

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"executor": self.executor_name, "requests": self.requests, "cache_hits": self.hits,
                    "evaluations": len(self._jobs), "baselines": len(self._baselines)}

    def close(self) -> None:
        self._executor.shutdown()


# ---------------------------------------------------------------------------------- the policy
def build_policy(config: TrainConfig, prompts: Sequence[list[dict[str, str]]]) -> tuple[Any, Any]:
    """``(model, tokenizer)``: the tiny random Qwen2 (tokenizer trained on ``prompts``) or a
    pretrained causal LM. The tiny model's context is sized to hold a whole rollout."""
    import torch

    if config.model.is_tiny:
        from transformers import Qwen2ForCausalLM

        from veriforge.llm.testing import tiny_qwen2_config, tiny_tokenizer

        texts = [m["content"] for p in prompts for m in p]
        texts += ["```cuda\n__global__ void k(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; }\n```",
                  "Attempt 1 of 2: compile error. Fix the problem and answer with the whole file again."]
        tok = tiny_tokenizer(texts, vocab_size=config.model.tiny_vocab_size, full_byte_alphabet=True)
        tok.chat_template = TINY_CHAT_TEMPLATE
        torch.manual_seed(config.seed)
        heads = max(1, config.model.tiny_hidden_size // 16)
        cfg = tiny_qwen2_config(tok, hidden_size=config.model.tiny_hidden_size,
                                num_hidden_layers=config.model.tiny_layers, num_attention_heads=heads,
                                num_key_value_heads=1, intermediate_size=2 * config.model.tiny_hidden_size,
                                max_position_embeddings=config.rollout.max_context_tokens + 64)
        return Qwen2ForCausalLM(cfg), tok
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(config.model.name, trust_remote_code=config.model.trust_remote_code)
        dtype = {"auto": "auto", "float32": torch.float32, "bfloat16": torch.bfloat16,
                 "float16": torch.float16}[config.model.dtype]
        model = AutoModelForCausalLM.from_pretrained(config.model.name, dtype=dtype,
                                                     trust_remote_code=config.model.trust_remote_code)
    except (OSError, ValueError) as exc:
        raise TrainError(f"model.name {config.model.name!r} could not be loaded: {exc}") from None
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    if not getattr(tok, "chat_template", None):
        raise TrainError(f"{config.model.name}: the tokenizer has no chat template; multi-turn feedback needs one "
                         "(use an instruct model)")
    return model, tok


def grpo_args(config: TrainConfig) -> Any:
    """TRL ``GRPOConfig`` from the run config (vLLM options passed through)."""
    import torch
    from trl import GRPOConfig

    t, r, v = config.train, config.rollout, config.vllm
    use_cpu = t.use_cpu if t.use_cpu is not None else not torch.cuda.is_available()
    bf16 = (not use_cpu) and config.model.dtype in ("auto", "bfloat16") and torch.cuda.is_available() and \
        torch.cuda.is_bf16_supported()
    kwargs: dict[str, Any] = dict(
        output_dir=config.output_dir, seed=config.seed, max_steps=t.steps, learning_rate=t.learning_rate,
        per_device_train_batch_size=config.batch_size, gradient_accumulation_steps=t.gradient_accumulation_steps,
        num_generations=t.num_generations, max_completion_length=r.max_completion_tokens,
        temperature=r.temperature, top_p=r.top_p, beta=t.beta, epsilon=t.epsilon, loss_type=t.loss_type,
        scale_rewards=t.scale_rewards, use_cpu=use_cpu, bf16=bf16, logging_steps=t.logging_steps,
        save_strategy="steps" if t.save_steps else "no", report_to="none", remove_unused_columns=False,
        disable_tqdm=True, dataloader_num_workers=0, lr_scheduler_type="constant", warmup_steps=0,
        shuffle_dataset=True,
    )
    known = set(GRPOConfig.__dataclass_fields__)
    # explicit either way (TRL defaults it on); transformers 5 renamed it, use the installed version's name
    kwargs["activation_checkpointing" if "activation_checkpointing" in known else "gradient_checkpointing"] = \
        t.gradient_checkpointing
    if t.save_steps:
        kwargs["save_steps"] = t.save_steps
    if v.enabled:
        kwargs.update(use_vllm=True, vllm_mode=v.mode, vllm_server_host=v.server_host, vllm_server_port=v.server_port,
                      vllm_server_timeout=v.server_timeout, vllm_gpu_memory_utilization=v.gpu_memory_utilization,
                      vllm_tensor_parallel_size=v.tensor_parallel_size,
                      vllm_importance_sampling_correction=v.importance_sampling_correction,
                      vllm_max_model_length=v.max_model_length or r.max_context_tokens)
        if v.server_base_url:
            kwargs["vllm_server_base_url"] = v.server_base_url
    unknown = sorted(set(t.extra) - known)
    if unknown:
        raise CudaPerfConfigError(f"train.extra: {unknown} are not GRPOConfig fields of the installed TRL")
    kwargs.update(t.extra)
    try:
        with warnings.catch_warnings():  # TRL's defaults still use transformers' deprecated names
            warnings.filterwarnings("ignore", category=FutureWarning, message=".*gradient_checkpointing.*")
            return GRPOConfig(**kwargs)
    except (ValueError, TypeError) as exc:
        raise CudaPerfConfigError(f"TRL refused the training settings: {exc}") from None


# ------------------------------------------------------------------------------------- logging
def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return None
    return value


class _RunLog:
    """Appends TRL's per-step metrics and every rollout to JSONL files in the output directory."""

    def __init__(self, out: Path) -> None:
        self.log_path = out / "train_log.jsonl"
        self.rollouts_path = out / "rollouts.jsonl"
        for p in (self.log_path, self.rollouts_path):
            p.write_text("")
        self.history: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def metrics(self, step: int, logs: Mapping[str, Any]) -> None:
        row = {"step": step, **{k: _jsonable(v) for k, v in logs.items()}}
        with self._lock:
            self.history.append(row)
            with self.log_path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")

    def rollouts(self, rollouts: list[Rollout], trainer: Any) -> None:
        step = int(getattr(getattr(trainer, "state", None), "global_step", 0) or 0)
        with self._lock, self.rollouts_path.open("a", encoding="utf-8") as fh:
            for r in rollouts:
                fh.write(json.dumps({"step": step, **r.to_dict()}) + "\n")

    def callback(self) -> Any:
        from transformers import TrainerCallback

        log = self

        class JsonlLogCallback(TrainerCallback):
            def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kw: Any) -> None:
                if logs and state.is_world_process_zero:
                    log.metrics(int(state.global_step), logs)

        return JsonlLogCallback()


@dataclass
class TrainResult:
    """What a run did: its files, steps, per-step metrics and the evaluation farm's counters."""

    output_dir: str
    steps: int
    tasks: list[str]
    log_path: str
    rollouts_path: str
    model_dir: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    skipped_tasks: dict[str, str] = field(default_factory=dict)
    farm: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def step_logs(self) -> list[dict[str, Any]]:
        """Per-step metrics (TRL's final ``train_runtime`` summary row left out)."""
        return [h for h in self.history if "loss" in h]

    def summary(self) -> str:
        last = self.step_logs[-1] if self.step_logs else {}
        parts = [f"{self.steps} step(s) on {len(self.tasks)} task(s) in {self.seconds:.1f} s"]
        for key in ("loss", "reward", "correct_rate"):
            if last.get(key) is not None:
                parts.append(f"{key} {last[key]:.4g}")
        parts.append(f"evaluations {self.farm.get('evaluations', 0)} (cache hits {self.farm.get('cache_hits', 0)})")
        return "; ".join(parts) + f"\nlog: {self.log_path}"


# --------------------------------------------------------------------------------------- train
def _prompt_rows(config: TrainConfig, specs: Sequence[Any], tokenizer: Any | None
                 ) -> tuple[list[dict[str, Any]], dict[str, str]]:
    from veriforge.cudaperf.feedback import task_prompt

    rows, skipped = [], {}
    for spec in specs:
        ref = task_ref(spec)
        messages = task_prompt(spec)
        if tokenizer is not None:
            n = len(tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True,
                                                  return_dict=False))
            if n > config.rollout.max_prompt_tokens:
                skipped[ref] = f"prompt is {n} tokens > rollout.max_prompt_tokens ({config.rollout.max_prompt_tokens})"
                continue
        rows.append({"prompt": messages, "task_id": ref})
    keys = [prompt_key(r["prompt"]) for r in rows]
    if len(set(keys)) != len(keys):
        raise TrainError("two selected tasks have the same prompt: the policy could not tell them apart")
    return rows, skipped


def train(config: TrainConfig, *, generate_factory: Callable[[Any], Generate] | None = None,
          progress: Callable[[str], None] | None = None) -> TrainResult:
    """Run GRPO with multi-turn refinement as ``config`` describes; returns what it did.

    ``generate_factory(trainer) -> generate``: replace the trainer's generation (a scripted policy
    replaying recorded attempts, or a test forcing a correct attempt into a group); None uses the
    trainer's own (transformers or vLLM)."""
    from datasets import Dataset
    from transformers import PrinterCallback

    from veriforge.cudaperf.rollout import multi_turn_trainer_class

    say = progress or (lambda _msg: None)
    started = time.monotonic()
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config.dump(), indent=2) + "\n")
    specs = resolve_tasks(config.tasks)
    say(f"{len(specs)} task(s) selected")
    from veriforge.cudaperf.feedback import task_prompt

    model, tokenizer = build_policy(config, [task_prompt(s) for s in specs])
    rows, skipped = _prompt_rows(config, specs, tokenizer)
    if not rows:
        raise TrainError(f"no task fits rollout.max_prompt_tokens ({config.rollout.max_prompt_tokens}): "
                         + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    log = _RunLog(out)
    farm = EvaluationFarm.from_config(config.reward)
    try:
        rollout = MultiTurnRollout(tokenizer, farm, turns=config.rollout.turns, gamma=config.rollout.gamma,
                                   max_feedback_tokens=config.rollout.max_feedback_tokens,
                                   task_of_prompt={prompt_key(r["prompt"]): r["task_id"] for r in rows},
                                   generate_factory=generate_factory, on_rollouts=log.rollouts)
        args = grpo_args(config)
        trainer_cls = multi_turn_trainer_class()
        with warnings.catch_warnings():
            # TRL's own notices, not the user's to act on: rollout_func is "experimental", and it calls
            # transformers' gradient-checkpointing helpers under their deprecated names
            warnings.filterwarnings("ignore", message=".*rollout_func.*experimental.*")
            warnings.filterwarnings("ignore", category=FutureWarning, message=".*gradient_checkpointing.*")
            trainer = trainer_cls(model=model, reward_funcs=[return_reward], args=args,
                                  train_dataset=Dataset.from_list(rows * config.tasks.repeat),
                                  processing_class=tokenizer, rollout_func=rollout, callbacks=[log.callback()])
            trainer.cudaperf_advantage = config.rollout.advantage
            trainer.remove_callback(PrinterCallback)  # metrics go to the JSONL log, not the caller's stdout
            say(f"training: {config.train.steps} step(s), {config.batch_size} rollout(s) of "
                f"{config.rollout.turns} turn(s) per step")
            trainer.train()
        model_dir = None
        if config.train.save_model:
            model_dir = str(out / "model")
            trainer.save_model(model_dir)
            tokenizer.save_pretrained(model_dir)
        result = TrainResult(output_dir=str(out), steps=int(trainer.state.global_step),
                             tasks=[r["task_id"] for r in rows], log_path=str(log.log_path),
                             rollouts_path=str(log.rollouts_path), model_dir=model_dir, history=log.history,
                             skipped_tasks=skipped, farm=farm.stats(), seconds=time.monotonic() - started)
    finally:
        farm.close()
    (out / "summary.json").write_text(json.dumps({k: v for k, v in result.to_dict().items() if k != "history"},
                                                 indent=2) + "\n")
    return result


# ---------------------------------------------------------------------------------- verl export
def verl_rows(config: TrainConfig, *, split: str = "train") -> list[dict[str, Any]]:
    """The selected tasks in verl's RL dataset layout: ``data_source``, ``prompt`` (chat messages),
    ``ability``, ``reward_model = {"style": "rule", "ground_truth": task}``, ``extra_info`` (what
    :func:`veriforge.cudaperf.reward.compute_score` reads: backend, preset, gpu)."""
    from veriforge.cudaperf.feedback import task_prompt

    rows = []
    for i, spec in enumerate(resolve_tasks(config.tasks)):
        ref = task_ref(spec)
        rows.append({
            "data_source": f"cudaperf/{spec.family}",
            "prompt": task_prompt(spec),
            "ability": "cuda",
            "reward_model": {"style": "rule", "ground_truth": ref},
            "extra_info": {"index": i, "split": split, "task_id": ref, "family": spec.family,
                           "backend": config.reward.backend, "preset": config.reward.preset,
                           "gpu": config.reward.gpu, "gamma": config.rollout.gamma,
                           # read by VerlInteraction.start_interaction (verl multi-turn rollouts)
                           "interaction_kwargs": {"name": "cudaperf", "task_id": ref,
                                                  "turns": config.rollout.turns}},
        })
    return rows


def export_verl(config: TrainConfig, path: str | Path, *, split: str = "train") -> Path:
    """Write :func:`verl_rows` as a parquet file for verl's ``data.train_files``."""
    from datasets import Dataset

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    Dataset.from_list(verl_rows(config, split=split)).to_parquet(str(p))
    return p


class VerlInteraction:
    """A verl multi-turn *interaction* (``actor_rollout_ref.rollout.multi_turn.interaction_config_path``):
    after each assistant turn it evaluates the attempt, returns the same feedback message the TRL
    rollouts use and the turn's unified reward as verl's turn score (verl collects them in
    ``extra_info["turn_scores"]``; :func:`verl_compute_score` turns them into Kevin's return).

    Duck-typed to verl's ``BaseInteraction`` (async ``start_interaction``, ``generate_response``,
    ``calculate_score``, ``finalize_interaction``), so importing it needs no verl. ``config`` may
    set ``backend``, ``preset``, ``gpu``, ``jobs``, ``executor``. Not run here (verl is not installed).
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        cfg = dict(config or {})
        self.config, self.name = cfg, str(cfg.get("name", "cudaperf"))
        from veriforge.cudaperf.reward import PRESETS

        self.farm = EvaluationFarm(backend=str(cfg.get("backend", "cpu")),
                                   reward_config=PRESETS[str(cfg.get("preset", "veriforge"))],
                                   gpu=str(cfg.get("gpu", "H100-SXM")), executor=str(cfg.get("executor", "threads")),
                                   jobs=int(cfg.get("jobs", 2)))
        self._episodes: dict[str, dict[str, Any]] = {}

    async def start_interaction(self, instance_id: str | None = None, **kwargs: Any) -> str:
        import uuid

        iid = instance_id or str(uuid.uuid4())
        self._episodes[iid] = {"task": str(kwargs["task_id"]), "turns": int(kwargs.get("turns", 4)), "turn": 0,
                               "scores": []}
        return iid

    async def generate_response(self, instance_id: str, messages: list[dict[str, Any]], **kwargs: Any
                                ) -> tuple[bool, str, float, dict[str, Any]]:
        import asyncio

        from veriforge.cudaperf.feedback import feedback_message

        ep = self._episodes[instance_id]
        ep["turn"] += 1
        text = next((str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "assistant"), "")
        scored = (await asyncio.to_thread(self.farm.score_many, [ep["task"]], [text]))[0]
        rew = scored.reward
        ep["scores"].append(float(rew.value))
        done = ep["turn"] >= ep["turns"]
        msg = feedback_message(scored.result, rew, turn=ep["turn"], turns=ep["turns"],
                               family=self.farm.family(ep["task"]), source=scored.source)
        return done, msg, float(rew.value), {"outcome": rew.outcome, "correct": bool(rew.correct)}

    async def calculate_score(self, instance_id: str | None = None, **kwargs: Any) -> float:
        ep = self._episodes.get(instance_id or "", {})
        return float(ep["scores"][-1]) if ep.get("scores") else 0.0

    async def finalize_interaction(self, instance_id: str | None = None, **kwargs: Any) -> None:
        self._episodes.pop(instance_id or "", None)


def verl_compute_score(data_source: str, solution_str: str, ground_truth: str,
                       extra_info: Mapping[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    """verl ``custom_reward_function`` for multi-turn runs: Kevin's return of the first turn,
    ``sum_k gamma^k r_k``, from the per-turn scores :class:`VerlInteraction` produced
    (``extra_info["turn_scores"]``, ``extra_info["gamma"]``); without them (single-turn runs) the
    unified reward of the last attempt, as :func:`veriforge.cudaperf.reward.compute_score`."""
    from veriforge.cudaperf.reward import compute_score
    from veriforge.cudaperf.rollout import discounted_returns

    info = dict(extra_info or {})
    scores = info.get("turn_scores")
    if scores is not None and len(scores) > 0:
        returns = discounted_returns([float(x) for x in scores], float(info.get("gamma", 0.4)))
        return {"score": returns[0], "turns": len(returns), "last_turn_reward": float(scores[-1])}
    return compute_score(data_source, solution_str, ground_truth, info)
