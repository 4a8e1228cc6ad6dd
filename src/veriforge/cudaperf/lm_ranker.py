"""A language-model pairwise ranker: TRL ``RewardTrainer`` on (chosen = faster, rejected = slower).

The model is any Hugging Face sequence-classification model with one output (a reward model);
its score of a program is the logit, trained with ``−log σ(r_chosen − r_rejected)``. It reads the
comment-free program (:func:`~veriforge.cudaperf.rank_features.normalise_source`): comments name
strategies, and a ranker that rewarded prose would teach a policy to write prose.

``base_model="tiny"`` builds a randomly initialised 2-layer Qwen2 with a byte-level BPE tokenizer
trained on the training programs in milliseconds (tests, smoke runs; it ranks near chance — it
has seen a few hundred pairs and knows no CUDA). Any other value is a local path or hub id loaded
with ``AutoModelForSequenceClassification`` (``num_labels=1``) and its tokenizer.

Programs longer than ``max_length`` tokens are truncated (keeping the head: the kernels come
first in C→CUDA sources and in the normalised torch2cuda text), never dropped — TRL's own length
filter would silently remove every long program from training.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from veriforge.cudaperf.rank_features import normalise_source
from veriforge.cudaperf.ranker import FORMAT, RankerError

__all__ = ["LMRanker"]

_META = "ranker.json"


class LMRanker:
    """A trained reward-model ranker; ``score(sources)`` gives one float per program."""

    def __init__(self, model: Any, tokenizer: Any, *, max_length: int = 512, base_model: str = "",
                 log_history: list[dict[str, Any]] | None = None, n_pairs: int = 0) -> None:
        self.model, self.tokenizer, self.max_length = model, tokenizer, max_length
        self.base_model, self.n_pairs = base_model, n_pairs
        self.log_history = list(log_history or [])

    @staticmethod
    def text(source: str) -> str:
        """What the model reads for one program."""
        return normalise_source(source)

    # --------------------------------------------------------------------------------- training

    @classmethod
    def train(cls, pairs: Sequence[Any], *, base_model: str = "tiny", output_dir: str | Path,
              max_steps: int = -1, epochs: float = 1.0, batch_size: int = 4, learning_rate: float = 1e-4,
              max_length: int = 512, seed: int = 0, use_margin: bool = False,
              tiny_overrides: dict[str, Any] | None = None, model: Any = None, tokenizer: Any = None) -> LMRanker:
        """Train on :class:`~veriforge.cudaperf.pairs.PairRecord` s with TRL's ``RewardTrainer``.

        ``max_steps`` > 0 overrides ``epochs``. ``use_margin`` passes ``log(speedup)`` as TRL's
        margin (a 3× win must be separated more than a 1.1× one). Runs on the CPU unless a GPU is
        visible. ``model`` and ``tokenizer`` (both) replace ``base_model`` with objects already built
        (the model is trained in place). Returns the trained ranker (not yet saved: call :meth:`save`).
        """
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        from datasets import Dataset
        from trl import RewardConfig, RewardTrainer

        if not pairs:
            raise RankerError("no pairs to train on")
        chosen = [cls.text(p.faster.source) for p in pairs]
        rejected = [cls.text(p.slower.source) for p in pairs]
        if (model is None) != (tokenizer is None):
            raise RankerError("pass both model and tokenizer, or neither")
        if model is None:
            model, tok = _load_base(base_model, chosen + rejected, max_length, seed, dict(tiny_overrides or {}))
        else:
            tok = tokenizer

        def ids(text: str) -> list[int]:
            out = tok(text, truncation=True, max_length=max_length, add_special_tokens=True)["input_ids"]
            eos = tok.eos_token_id
            if eos is not None and (not out or out[-1] != eos):
                out = (out[: max_length - 1] if len(out) >= max_length else out) + [eos]
            return out

        rows: dict[str, list[Any]] = {"chosen_ids": [ids(t) for t in chosen],
                                      "rejected_ids": [ids(t) for t in rejected]}
        if use_margin:
            rows["margin"] = [math.log(max(1.0, p.speedup)) for p in pairs]
        dataset = Dataset.from_dict(rows)
        use_cpu = not torch.cuda.is_available()
        args = RewardConfig(output_dir=str(output_dir), per_device_train_batch_size=batch_size,
                            num_train_epochs=epochs, max_steps=max_steps, learning_rate=learning_rate,
                            logging_steps=1, report_to="none", save_strategy="no", use_cpu=use_cpu,
                            bf16=False, fp16=False, activation_checkpointing=False, max_length=None, seed=seed,
                            dataloader_num_workers=0, disable_tqdm=True)
        trainer = RewardTrainer(model=model, args=args, train_dataset=dataset, processing_class=tok)
        trainer.train()
        return cls(trainer.model, tok, max_length=max_length, base_model=base_model,
                   log_history=list(trainer.state.log_history), n_pairs=len(pairs))

    # --------------------------------------------------------------------------------- scoring

    def score(self, sources: Sequence[str], *, task: Any = None, config: str | None = None,
              batch_size: int = 8) -> list[float]:
        """The model's reward for each program (``task``/``config`` are accepted for interface
        compatibility and unused: the model reads only the text)."""
        import torch

        if not sources:
            return []
        self.model.eval()
        device = next(self.model.parameters()).device
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        out: list[float] = []
        with torch.no_grad():
            for start in range(0, len(sources), batch_size):
                chunk = [self.text(s) for s in sources[start:start + batch_size]]
                enc = [self.tokenizer(t, truncation=True, max_length=self.max_length)["input_ids"] or [pad]
                       for t in chunk]
                width = max(len(e) for e in enc)
                # Right padding: sequence-classification models read the last non-pad token.
                ids = torch.tensor([e + [pad] * (width - len(e)) for e in enc], device=device)
                mask = torch.tensor([[1] * len(e) + [0] * (width - len(e)) for e in enc], device=device)
                logits = self.model(input_ids=ids, attention_mask=mask).logits
                out += [float(v) for v in logits.reshape(len(enc), -1)[:, 0].tolist()]
        return out

    # --------------------------------------------------------------------------------- persistence

    def save(self, path: str | Path) -> Path:
        """Model, tokenizer and ``ranker.json`` (metadata, training log) in one directory."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(path)
        self.tokenizer.save_pretrained(path)
        (path / _META).write_text(json.dumps({
            "format": FORMAT, "kind": "lm", "base_model": self.base_model, "max_length": self.max_length,
            "tokenizer": "generic-fast" if self.base_model == "tiny" else "auto", "n_pairs": self.n_pairs,
            "log_history": self.log_history}, indent=1, default=str) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path) -> LMRanker:
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        path = Path(path)
        try:
            meta = json.loads((path / _META).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise RankerError(f"{path} is not an LM ranker directory ({_META}: {exc})") from exc
        if meta.get("format") != FORMAT or meta.get("kind") != "lm":
            raise RankerError(f"{path}: not an LM ranker (format {meta.get('format')!r}, kind {meta.get('kind')!r})")
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        model = AutoModelForSequenceClassification.from_pretrained(path)
        if meta.get("tokenizer") == "generic-fast":
            # AutoTokenizer would pick the model type's tokenizer class (Qwen2Tokenizer), whose
            # pre-tokenisation differs from the generic BPE the tiny ranker was trained with.
            from transformers import PreTrainedTokenizerFast

            tok = PreTrainedTokenizerFast.from_pretrained(path)
        else:
            tok = AutoTokenizer.from_pretrained(path)
        return cls(model, tok, max_length=int(meta.get("max_length", 512)), base_model=meta.get("base_model", ""),
                   log_history=meta.get("log_history"), n_pairs=int(meta.get("n_pairs", 0)))


def _load_base(base_model: str, texts: Sequence[str], max_length: int, seed: int,
               overrides: dict[str, Any]) -> tuple[Any, Any]:
    """(model with one output, tokenizer with a pad token) for ``base_model``."""
    import torch

    if base_model == "tiny":
        from transformers import Qwen2ForSequenceClassification

        from veriforge.llm.testing import tiny_qwen2_config, tiny_tokenizer

        tok = tiny_tokenizer(texts, vocab_size=int(overrides.pop("vocab_size", 600)), full_byte_alphabet=True)
        torch.manual_seed(seed)
        cfg = tiny_qwen2_config(tok, num_labels=1, max_position_embeddings=max(512, max_length), **overrides)
        model = Qwen2ForSequenceClassification(cfg)
        return model, tok
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(base_model)
        model = AutoModelForSequenceClassification.from_pretrained(base_model, num_labels=1)
    except Exception as exc:  # a missing model is a configuration error, said plainly
        raise RankerError(f"cannot load base model {base_model!r}: {type(exc).__name__}: {exc}") from exc
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    model.config.pad_token_id = tok.pad_token_id
    return model, tok
