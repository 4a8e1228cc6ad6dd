"""Reviewer distillation: learn a cheap Reviewer from a stronger model's pairwise judgements.

Pipeline (``veriforge moa distill --teacher MODEL --data traces.jsonl --base-model PATH --out DIR``):

1. **Pairs** — traces (reasoning texts) are grouped by question and paired within a question
   (all pairs, or at most ``max_pairs_per_question`` seeded ones).
2. **Teacher judgements** — :class:`veriforge.rank.PairwiseJudge` over each pair, in both orders (so
   the teacher's position bias cancels); written as JSONL, one line per pair: ``question``,
   ``response_a``, ``response_b``, ``verdict`` (``a``/``b``/``tie``), ``domain``, ids, ``consistent``,
   ``failed``, ``reason``. Failed judgements are kept in the file (visible) and never trained on.
3. **Split by question** — held-out *questions*, so agreement measures transfer to new questions,
   not memorised pairs.
4. **Training — a reward model** (TRL ``RewardTrainer``, Bradley–Terry loss
   ``-log σ(r(chosen) - r(rejected))``) on the decisive verdicts (ties carry no preference and are
   skipped). We chose a reward model over SFT on verdict text because a scalar scorer judges each
   response on its own: it has *no position bias by construction* (so one forward pass per response
   replaces two generations per pair), its output is directly a rating for Bradley–Terry, and a pair
   with n responses costs n forward passes instead of n(n−1) generations. Pairs longer than
   ``max_length`` tokens are dropped and *counted* in the report, never truncated silently.
5. **Agreement before and after** — the student judges each held-out pair (reward difference, a tie
   when below ``tie_margin``) and :func:`veriforge.rank.judgement_agreement` compares it with the
   teacher: the fraction of pairs with the same verdict and, on pairs the teacher decided, how often
   the student picked the same winner. *Before* is the same model with its untrained reward head (same
   seed), *after* is the trained one.

The ``train`` extra (torch, transformers, trl, datasets) is imported only inside the functions that
need it. Tests use a tiny random Qwen2 with a byte-level BPE trained in milliseconds.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from veriforge.errors import ConfigError, VeriforgeError

if TYPE_CHECKING:
    from veriforge.rank import Agreement, Outcome, PairwiseJudge

__all__ = [
    "DistillError",
    "DistillReport",
    "JudgedPair",
    "RewardReviewer",
    "TracePair",
    "TrainResult",
    "agreement_with_teacher",
    "collect_teacher_judgements",
    "distill",
    "format_for_reward",
    "load_traces",
    "main_cli",
    "make_pairs",
    "read_judgements",
    "split_by_question",
    "train_reward_reviewer",
    "write_judgements",
]


class DistillError(VeriforgeError):
    """Reviewer distillation cannot proceed (bad trace file, nothing decisive to train on, ...)."""


class DistillConfigError(DistillError, ConfigError):
    """A distillation input or option is invalid (the message says which)."""


# ------------------------------------------------------------------------------------------ traces
@dataclass(frozen=True)
class TracePair:
    """Two responses to one question, to be judged."""

    question_id: str
    question: str
    a_id: str
    response_a: str
    b_id: str
    response_b: str
    domain: str = ""


def load_traces(path: str | Path) -> dict[str, dict[str, Any]]:
    """Traces grouped by question: ``{question_id: {"question", "domain", "responses": {trace_id: text}}}``.

    Each JSONL line is one trace — ``question`` and ``response`` (or ``reasoning``/``text``/``output``),
    optional ``question_id``, ``id``/``trace_id``, ``domain`` — or one question with a list under
    ``responses``. Questions are identified by ``question_id`` or else their text.
    """
    p = Path(path)
    if not p.is_file():
        raise DistillConfigError(f"{p}: no such traces file")
    groups: dict[str, dict[str, Any]] = {}
    for lineno, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DistillConfigError(f"{p}:{lineno}: not valid JSON ({exc.msg})") from None
        if not isinstance(rec, dict) or not isinstance(rec.get("question"), str):
            raise DistillConfigError(f"{p}:{lineno}: a trace needs a 'question' string")
        qid = str(rec.get("question_id") or rec["question"])
        group = groups.setdefault(
            qid, {"question": rec["question"], "domain": str(rec.get("domain") or ""), "responses": {}}
        )
        if isinstance(rec.get("responses"), list):
            texts = [str(t) for t in rec["responses"]]
            ids = [f"{qid[:40]}#{len(group['responses']) + i}" for i in range(len(texts))]
        else:
            text = next(
                (rec[k] for k in ("response", "reasoning", "text", "output") if isinstance(rec.get(k), str)),
                None,
            )
            if text is None:
                raise DistillConfigError(
                    f"{p}:{lineno}: a trace needs 'response' (or 'reasoning'/'text'/'output')"
                )
            texts = [text]
            ids = [str(rec.get("id") or rec.get("trace_id") or f"{qid[:40]}#{len(group['responses'])}")]
        for tid, text in zip(ids, texts, strict=True):
            if tid in group["responses"]:
                raise DistillConfigError(f"{p}:{lineno}: duplicate trace id {tid!r} for one question")
            group["responses"][tid] = text
    return groups


def make_pairs(
    groups: Mapping[str, Mapping[str, Any]], *, max_pairs_per_question: int | None = None, seed: int = 0
) -> list[TracePair]:
    """Pairs of distinct responses within each question (identical texts are not paired)."""
    rng = random.Random(seed)
    out: list[TracePair] = []
    for qid, group in groups.items():
        items = list(group["responses"].items())
        pairs = [(x, y) for i, x in enumerate(items) for y in items[i + 1 :] if x[1] != y[1]]
        if max_pairs_per_question is not None and len(pairs) > max_pairs_per_question:
            pairs = rng.sample(pairs, max_pairs_per_question)
        for (a_id, a_text), (b_id, b_text) in pairs:
            if rng.random() < 0.5:  # random frame, so "a" is not always the earlier trace
                (a_id, a_text), (b_id, b_text) = (b_id, b_text), (a_id, a_text)
            out.append(TracePair(qid, group["question"], a_id, a_text, b_id, b_text, group.get("domain", "")))
    return out


# ------------------------------------------------------------------------------- teacher judgements
@dataclass(frozen=True)
class JudgedPair:
    """One line of the distillation dataset: a pair and the teacher's verdict on it."""

    question_id: str
    question: str
    a_id: str
    response_a: str
    b_id: str
    response_b: str
    verdict: str  # "a" | "b" | "tie"
    domain: str = ""
    teacher: str = ""
    consistent: bool | None = None
    failed: bool = False
    reason: str = ""

    def outcome(self, source: str = "reviewer") -> Outcome:
        """This verdict as a :class:`veriforge.rank.Outcome` (for agreement and ratings)."""
        from veriforge.rank import Outcome

        return Outcome(
            a=self.a_id,
            b=self.b_id,
            winner=self.verdict,
            source=source,
            failed=self.failed,  # type: ignore[arg-type]
            reason=self.reason,
            meta={"question_id": self.question_id},
        )

    @property
    def decisive(self) -> bool:
        return not self.failed and self.verdict in ("a", "b")


async def collect_teacher_judgements(
    judge: PairwiseJudge, pairs: Sequence[TracePair], *, teacher: str = "", concurrency: int = 4
) -> list[JudgedPair]:
    """Ask ``judge`` (the teacher) about every pair, ``concurrency`` at a time, in both orders.

    An LLM failure after retries becomes a failed judgement (kept, not trained on), as in tournaments.
    """
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(p: TracePair) -> JudgedPair:
        async with gate:
            try:
                o = await judge.judge(p.question, p.response_a, p.response_b, a=p.a_id, b=p.b_id)
            except VeriforgeError as exc:
                return JudgedPair(
                    **asdict(p),
                    verdict="tie",
                    teacher=teacher,
                    failed=True,
                    reason=f"{type(exc).__name__}: {exc}",
                )
        return JudgedPair(
            **asdict(p),
            verdict=o.winner,
            teacher=teacher,
            consistent=o.consistent,
            failed=o.failed,
            reason=o.reason,
        )

    return list(await asyncio.gather(*(one(p) for p in pairs)))


def write_judgements(path: str | Path, judged: Iterable[JudgedPair]) -> Path:
    """Write the dataset as JSONL (one pair per line)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("".join(json.dumps(asdict(j), ensure_ascii=False) + "\n" for j in judged), encoding="utf-8")
    return p


def read_judgements(path: str | Path) -> list[JudgedPair]:
    """Read what :func:`write_judgements` wrote (unknown keys are an error: the file is ours)."""
    out = []
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append(JudgedPair(**json.loads(line)))
            except (TypeError, json.JSONDecodeError) as exc:
                raise DistillConfigError(f"{path}:{lineno}: not a judgement record ({exc})") from None
    return out


def split_by_question(
    judged: Sequence[JudgedPair], test_fraction: float = 0.25, seed: int = 0
) -> tuple[list[JudgedPair], list[JudgedPair]]:
    """``(train, test)`` with whole questions held out (at least one each when there are two or more)."""
    qids = sorted({j.question_id for j in judged})
    random.Random(seed).shuffle(qids)
    n_test = min(max(1, round(len(qids) * test_fraction)), len(qids) - 1) if len(qids) > 1 else 0
    held = set(qids[:n_test])
    return [j for j in judged if j.question_id not in held], [j for j in judged if j.question_id in held]


# ---------------------------------------------------------------------------------- the student
def format_for_reward(question: str, response: str) -> str:
    """The text a reward model scores: question, then response (one layout for training and use)."""
    return f"Question:\n{question}\n\nResponse:\n{response}"


class RewardReviewer:
    """A Reviewer backed by a scalar reward model: ``score(question, response)``; a pair's winner is the
    higher score (a tie when the scores differ by less than ``tie_margin``). Position-free by design."""

    def __init__(self, model: Any, tokenizer: Any, *, tie_margin: float = 0.0, max_length: int = 512) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.tie_margin = tie_margin
        self.max_length = max_length

    @classmethod
    def from_pretrained(cls, path: str | Path, **options: Any) -> RewardReviewer:
        """Load a local model directory (never downloads) with a one-output scoring head."""
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        p = Path(path)
        if not (p / "config.json").is_file():
            raise DistillConfigError(
                f"{p}: not a local model directory (no config.json); nothing is downloaded"
            )
        tok = AutoTokenizer.from_pretrained(p, local_files_only=True)
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        model = AutoModelForSequenceClassification.from_pretrained(p, num_labels=1, local_files_only=True)
        model.config.pad_token_id = tok.pad_token_id
        return cls(model, tok, **options)

    def scores(self, texts: Sequence[str], batch_size: int = 16) -> list[float]:
        """Reward of each text (eval mode, no gradients).

        A text over ``max_length`` tokens keeps its *end*: a response's final answer comes last and is
        what a correctness reviewer must see (training drops over-long pairs instead, and counts them).
        """
        import torch

        was_training = self.model.training
        self.model.eval()
        out: list[float] = []
        side = getattr(self.tokenizer, "truncation_side", "right")
        self.tokenizer.truncation_side = "left"
        try:
            with torch.no_grad():
                for i in range(0, len(texts), batch_size):
                    batch = self.tokenizer(
                        list(texts[i : i + batch_size]),
                        return_tensors="pt",
                        padding=True,
                        truncation=True,
                        max_length=self.max_length,
                    )
                    batch = {k: v.to(self.model.device) for k, v in batch.items()}
                    out.extend(float(x) for x in self.model(**batch).logits.squeeze(-1).tolist())
        finally:
            self.model.train(was_training)
            self.tokenizer.truncation_side = side
        return out

    def score(self, question: str, response: str) -> float:
        return self.scores([format_for_reward(question, response)])[0]

    def judge_pairs(self, pairs: Sequence[TracePair | JudgedPair]) -> list[Outcome]:
        """The student's verdicts on ``pairs`` as ``reviewer`` outcomes (one forward pass per response)."""
        from veriforge.rank import Outcome

        texts = [format_for_reward(p.question, r) for p in pairs for r in (p.response_a, p.response_b)]
        s = self.scores(texts)
        out = []
        for k, p in enumerate(pairs):
            diff = s[2 * k] - s[2 * k + 1]
            winner = "tie" if abs(diff) <= self.tie_margin else ("a" if diff > 0 else "b")
            out.append(
                Outcome(
                    a=p.a_id,
                    b=p.b_id,
                    winner=winner,
                    reason=f"reward difference {diff:+.4f}",
                    meta={"question_id": p.question_id},
                )
            )
        return out


def agreement_with_teacher(student: Sequence[Outcome], teacher: Sequence[JudgedPair]) -> Agreement:
    """:func:`veriforge.rank.judgement_agreement` of the student's outcomes with the teacher's verdicts.

    Trace ids are qualified by question so equal ids under different questions never collide.
    """
    from veriforge.rank import judgement_agreement

    def qualify(o: Outcome) -> Outcome:
        q = str(o.meta.get("question_id", ""))
        return o.model_copy(update={"a": f"{q}::{o.a}", "b": f"{q}::{o.b}"})

    return judgement_agreement([qualify(o) for o in student], [qualify(j.outcome()) for j in teacher])


# ---------------------------------------------------------------------------------------- training
@dataclass
class TrainResult:
    """What training did: per-step losses, pairs used and pairs skipped (ties, failures, too long)."""

    losses: list[float]
    steps: int
    n_pairs: int
    skipped_ties: int
    skipped_failed: int
    skipped_too_long: int
    output_dir: str


def _preference_rows(judged: Sequence[JudgedPair], tokenizer: Any, max_length: int) -> tuple[list[dict], int]:
    rows, too_long = [], 0
    eos = tokenizer.eos_token or ""
    for j in judged:
        if not j.decisive:
            continue
        chosen, rejected = (j.response_a, j.response_b) if j.verdict == "a" else (j.response_b, j.response_a)
        ids = [
            tokenizer(format_for_reward(j.question, r) + eos, add_special_tokens=False)["input_ids"]
            for r in (chosen, rejected)
        ]
        if max(len(x) for x in ids) > max_length:
            too_long += 1
            continue
        rows.append({"chosen_ids": ids[0], "rejected_ids": ids[1]})
    return rows, too_long


def train_reward_reviewer(
    reviewer: RewardReviewer,
    judged: Sequence[JudgedPair],
    output_dir: str | Path,
    *,
    steps: int = 100,
    learning_rate: float = 1e-5,
    batch_size: int = 8,
    seed: int = 0,
    use_cpu: bool | None = None,
    save: bool = True,
) -> TrainResult:
    """Train ``reviewer.model`` in place with TRL's ``RewardTrainer`` on the teacher's decisive verdicts."""
    from datasets import Dataset
    from transformers import PrinterCallback
    from trl import RewardConfig, RewardTrainer

    rows, too_long = _preference_rows(judged, reviewer.tokenizer, reviewer.max_length)
    if not rows:
        raise DistillError("no decisive teacher verdicts to train on (all ties, failures or over max_length)")
    if use_cpu is None:
        import torch

        use_cpu = not torch.cuda.is_available()
    out = Path(output_dir)
    config = RewardConfig(
        output_dir=str(out),
        max_steps=steps,
        learning_rate=learning_rate,
        per_device_train_batch_size=batch_size,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=use_cpu,
        bf16=False,
        seed=seed,
        max_length=None,
        lr_scheduler_type="constant",
        warmup_steps=0,
        dataloader_num_workers=0,
        disable_tqdm=True,
        remove_unused_columns=False,
    )
    trainer = RewardTrainer(
        model=reviewer.model,
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=reviewer.tokenizer,
    )
    trainer.remove_callback(PrinterCallback)  # losses are returned, not printed to the caller's stdout
    trainer.train()
    losses = [float(h["loss"]) for h in trainer.state.log_history if "loss" in h]
    if save:
        trainer.save_model(str(out / "reviewer"))
        reviewer.tokenizer.save_pretrained(str(out / "reviewer"))
    return TrainResult(
        losses=losses,
        steps=trainer.state.global_step,
        n_pairs=len(rows),
        skipped_ties=sum(1 for j in judged if not j.failed and j.verdict == "tie"),
        skipped_failed=sum(1 for j in judged if j.failed),
        skipped_too_long=too_long,
        output_dir=str(out),
    )


# ---------------------------------------------------------------------------------- end to end
@dataclass
class DistillReport:
    """Agreement with the teacher on held-out questions before and after training, and what was used."""

    teacher: str
    dataset: str
    n_pairs: int
    n_train: int
    n_test: int
    teacher_failed: int
    before: dict[str, float]
    after: dict[str, float]
    train: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        def fmt(d: Mapping[str, float]) -> str:
            return (
                f"agreement {d['value']:.3f} (n={int(d['n'])}), decisive {d['decisive_value']:.3f} "
                f"(n={int(d['decisive_n'])})"
            )

        return (
            f"teacher {self.teacher}: {self.n_pairs} pairs judged ({self.teacher_failed} failed), "
            f"{self.n_train} train / {self.n_test} held-out\n"
            f"before: {fmt(self.before)}\nafter:  {fmt(self.after)}"
        )


def _agreement_dict(a: Agreement) -> dict[str, float]:
    return {"value": a.value, "n": a.n, "decisive_value": a.decisive_value, "decisive_n": a.decisive_n}


async def distill(
    judge: PairwiseJudge | None,
    traces: str | Path | None,
    reviewer: RewardReviewer,
    out_dir: str | Path,
    *,
    teacher_name: str = "",
    max_pairs_per_question: int | None = None,
    test_fraction: float = 0.25,
    steps: int = 100,
    learning_rate: float = 1e-5,
    batch_size: int = 8,
    seed: int = 0,
    concurrency: int = 4,
    use_cpu: bool | None = None,
    save: bool = True,
    judgements: str | Path | None = None,
) -> DistillReport:
    """Collect teacher judgements, train the student reviewer, and measure agreement before and after.

    With ``judgements`` (a JudgedPair JSONL, e.g. the Reviewer's comparisons exported by
    ``moa bench --export-distill``) no teacher is asked: those verdicts are the dataset, and
    ``judge``/``traces`` may be ``None``. Writes ``judgements.jsonl``, ``report.json`` and
    (``save=True``) ``reviewer/`` under ``out_dir``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if judgements is not None:
        judged = read_judgements(judgements)
        if not judged:
            raise DistillError(f"{judgements}: no judgements to train on")
    else:
        if judge is None or traces is None:
            raise DistillConfigError("distill needs a teacher and traces, or given judgements")
        pairs = make_pairs(load_traces(traces), max_pairs_per_question=max_pairs_per_question, seed=seed)
        if not pairs:
            raise DistillError(f"{traces}: no question has two different responses to compare")
        judged = await collect_teacher_judgements(judge, pairs, teacher=teacher_name, concurrency=concurrency)
    dataset = write_judgements(out / "judgements.jsonl", judged)
    train, test = split_by_question(judged, test_fraction, seed)
    if not test:
        raise DistillError("need at least two questions: one to train on and one held out")
    before = agreement_with_teacher(reviewer.judge_pairs(test), test)
    result = train_reward_reviewer(
        reviewer,
        train,
        out,
        steps=steps,
        learning_rate=learning_rate,
        batch_size=batch_size,
        seed=seed,
        use_cpu=use_cpu,
        save=save,
    )
    after = agreement_with_teacher(reviewer.judge_pairs(test), test)
    report = DistillReport(
        teacher=teacher_name,
        dataset=str(dataset),
        n_pairs=len(judged),
        n_train=len(train),
        n_test=len(test),
        teacher_failed=sum(j.failed for j in judged),
        before=_agreement_dict(before),
        after=_agreement_dict(after),
        train=asdict(result),
    )
    (out / "report.json").write_text(json.dumps(_finite(report.to_dict()), indent=2, allow_nan=False))
    return report


def _finite(x: Any) -> Any:
    """NaN (agreement with nothing to compare) becomes ``null``: strict JSON has no NaN."""
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    return x


def main_cli(
    teacher: str | None,
    data: str | Path | None,
    base_model: str | Path,
    out: str | Path,
    *,
    steps: int = 100,
    learning_rate: float = 1e-5,
    batch_size: int = 8,
    max_pairs_per_question: int | None = None,
    test_fraction: float = 0.25,
    seed: int = 0,
    concurrency: int = 4,
    tie_margin: float = 0.0,
    max_length: int = 512,
    judgements: str | Path | None = None,
) -> DistillReport:
    """``veriforge moa distill --teacher MODEL --data traces.jsonl --base-model PATH --out DIR``.

    ``teacher`` is a model string for :func:`veriforge.llm.create_client` (e.g. ``vllm:Qwen/...``);
    ``base_model`` a local transformers directory. With ``judgements`` (``--judgements FILE``) the
    given verdicts are trained on and no teacher is asked. Returns the report (also written to
    ``out/report.json``).
    """
    from veriforge.llm import create_client
    from veriforge.rank import PairwiseJudge

    if judgements is None and (not teacher or data is None):
        raise DistillConfigError("pass --data traces.jsonl and a teacher model, or --judgements FILE")
    reviewer = RewardReviewer.from_pretrained(base_model, tie_margin=tie_margin, max_length=max_length)
    judge = PairwiseJudge(create_client(teacher)) if judgements is None and teacher else None
    return asyncio.run(
        distill(
            judge,
            data,
            reviewer,
            out,
            teacher_name=f"given judgements ({judgements})" if judgements is not None else str(teacher),
            max_pairs_per_question=max_pairs_per_question,
            test_fraction=test_fraction,
            steps=steps,
            learning_rate=learning_rate,
            batch_size=batch_size,
            seed=seed,
            concurrency=concurrency,
            judgements=judgements,
        )
    )
