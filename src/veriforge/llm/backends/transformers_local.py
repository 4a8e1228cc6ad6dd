"""A local ``transformers`` causal LM, loaded from a directory or handed over in memory.

For small local models and, later, the RL policy being trained (given as model + tokenizer
objects, so samples come from the current weights). ``torch`` and ``transformers`` are imported
only when this back-end is first used. Nothing is ever downloaded: paths are loaded with
``local_files_only=True`` and a path that is not a directory is a configuration error.

Prompt: the tokenizer's chat template when it has one (with the generation prompt appended),
otherwise the plain format of :func:`plain_prompt`. Sampling follows the OpenAI conventions:
``temperature=None`` samples at 1.0, ``temperature=0`` is greedy. With a ``seed``, sample ``i``
is generated alone under seed ``seed + i``, so it is identical whether produced alone or with
others; without one, all samples come from one batched ``generate`` call. Logprobs are the
model's own log-softmax at each generated position (before temperature/top-p), for the tokens of
the returned text (the end-of-sequence token is not listed).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from veriforge.llm.errors import LLMConfigError, LLMRequestError
from veriforge.llm.types import ChatRequest, ChatResponse, Completion, Message, TokenLogprob, TopLogprob, Usage

#: ``max_new_tokens`` when the request gives no ``max_tokens``.
DEFAULT_MAX_NEW_TOKENS = 512


def plain_prompt(messages: list[Message]) -> str:
    """The prompt for tokenizers without a chat template::

        System: <content>

        User: <content>

        Assistant:
    """
    parts = [f"{m.role.capitalize()}: {m.content}" for m in messages]
    return "\n\n".join([*parts, "Assistant:"])


class TransformersBackend:
    """Generate with a local causal LM.

    Give ``model_path`` (a local directory, loaded lazily on first use) or ``model`` and
    ``tokenizer`` objects. In-memory models are not cacheable by default (their weights change
    while training); pass ``cacheable=True`` for a frozen one. ``generate_kwargs`` (and each
    request's ``extra``) are passed to ``model.generate`` (e.g. ``top_k``, ``repetition_penalty``).
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        model: Any = None,
        tokenizer: Any = None,
        name: str | None = None,
        device: str | None = None,
        dtype: str | None = None,
        generate_kwargs: dict[str, Any] | None = None,
        cacheable: bool | None = None,
    ) -> None:
        if model_path is None and (model is None or tokenizer is None):
            raise LLMConfigError("TransformersBackend needs a local model path, or both model and tokenizer")
        self.path = Path(model_path).expanduser().resolve() if model_path is not None else None
        self.model = model
        self.tokenizer = tokenizer
        self.device = device
        self.dtype = dtype
        self.generate_kwargs = dict(generate_kwargs or {})
        if self.path is not None:
            self.name = name or str(model_path)
            self.identity = f"hf:{self.path}"
        else:
            self.name = name or str(getattr(getattr(model, "config", None), "_name_or_path", "") or "in-memory")
            self.identity = f"hf-memory:{self.name}:{id(model):x}"
        self.cacheable = cacheable if cacheable is not None else self.path is not None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ loading

    def _ensure_loaded(self) -> None:
        if self.model is not None and self.tokenizer is not None:
            return
        assert self.path is not None
        if not self.path.is_dir():
            raise LLMConfigError(
                f"local model directory not found: {self.path} (hf: models are never downloaded)"
            )
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise LLMConfigError(
                "the hf: back-end needs torch and transformers (pip install 'veriforge[train]')"
            ) from exc
        try:
            tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
            kwargs: dict[str, Any] = {"local_files_only": True}
            if self.dtype:
                kwargs["dtype"] = self.dtype
            model = AutoModelForCausalLM.from_pretrained(self.path, **kwargs)
        except (OSError, ValueError) as exc:
            raise LLMConfigError(f"cannot load a transformers model from {self.path}: {exc}") from exc
        model.eval()
        if self.device:
            model.to(self.device)
        else:
            import torch

            if torch.cuda.is_available():
                model.to("cuda")
        self.model, self.tokenizer = model, tokenizer

    # --------------------------------------------------------------- generation

    async def chat(self, request: ChatRequest) -> ChatResponse:
        return await asyncio.to_thread(self._chat_sync, request)

    def _chat_sync(self, request: ChatRequest) -> ChatResponse:
        with self._lock:  # one generate at a time: the model and torch's RNG are shared state
            self._ensure_loaded()
            try:
                return self._generate(request)
            except LLMConfigError:
                raise
            except (RuntimeError, ValueError, TypeError) as exc:
                raise LLMRequestError(f"{self.name}: generation failed: {exc}", kind="generate") from exc

    def _prompt_ids(self, messages: list[Message]) -> Any:
        tok = self.tokenizer
        if getattr(tok, "chat_template", None):
            text = tok.apply_chat_template([m.model_dump() for m in messages], add_generation_prompt=True,
                                           tokenize=False)
            return tok(text, return_tensors="pt", add_special_tokens=False).input_ids
        return tok(plain_prompt(messages), return_tensors="pt").input_ids

    def _generate(self, request: ChatRequest) -> ChatResponse:
        import torch

        model, tok = self.model, self.tokenizer
        device = next(model.parameters()).device
        prompt = self._prompt_ids(request.messages).to(device)
        eos = model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if tok.eos_token_id is not None:
            eos_ids.add(tok.eos_token_id)
        pad = tok.pad_token_id if tok.pad_token_id is not None else (min(eos_ids) if eos_ids else 0)
        max_new = request.max_tokens or DEFAULT_MAX_NEW_TOKENS
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_new,
            "pad_token_id": pad,
            "return_dict_in_generate": True,
            "output_logits": request.logprobs,
            "attention_mask": torch.ones_like(prompt),
        }
        if request.temperature == 0:
            kwargs["do_sample"] = False
        else:
            kwargs["do_sample"] = True
            kwargs["temperature"] = 1.0 if request.temperature is None else request.temperature
            if request.top_p is not None:
                kwargs["top_p"] = request.top_p
        if request.stop:
            kwargs["stop_strings"] = list(request.stop)
            kwargs["tokenizer"] = tok
        kwargs.update(self.generate_kwargs)
        kwargs.update(request.extra)

        indices = request.indices()
        rows: list[tuple[Any, list[Any] | None]] = []  # (generated ids, per-step logits or None)
        with torch.no_grad():
            if not kwargs["do_sample"]:
                # Greedy decoding is deterministic: one generation serves every sample.
                out = model.generate(prompt, num_return_sequences=1, **kwargs)
                rows = [_row(out, 0, prompt.shape[1], request.logprobs)] * len(indices)
            elif request.seed is not None:
                devices = [device.index or 0] if device.type == "cuda" else []
                for index in indices:
                    with torch.random.fork_rng(devices=devices):
                        torch.manual_seed(request.seed + index)
                        out = model.generate(prompt, num_return_sequences=1, **kwargs)
                    rows.append(_row(out, 0, prompt.shape[1], request.logprobs))
            else:
                out = model.generate(prompt, num_return_sequences=len(indices), **kwargs)
                rows = [_row(out, r, prompt.shape[1], request.logprobs) for r in range(len(indices))]

        completions = []
        completion_tokens = 0
        for index, (ids, logits) in zip(indices, rows, strict=True):
            ids = ids.tolist()
            n_used, hit_eos = _generated_length(ids, eos_ids, pad)
            completion_tokens += n_used
            n_text = n_used - 1 if hit_eos else n_used
            text = tok.decode(ids[:n_text], skip_special_tokens=True)
            finish = "stop" if hit_eos else ("length" if n_used >= max_new else "stop")
            for s in request.stop or []:
                if s and s in text:
                    text, finish = text[: text.index(s)], "stop"
            lps = _logprobs(tok, ids[:n_text], logits, request.top_logprobs or 0) if logits is not None else None
            completions.append(Completion(index=index, text=text, finish_reason=finish, logprobs=lps))
        usage = Usage(prompt_tokens=int(prompt.shape[1]), completion_tokens=completion_tokens)
        return ChatResponse(model=self.name, completions=completions, usage=usage)


def _row(out: Any, r: int, prompt_len: int, want_logits: bool) -> tuple[Any, list[Any] | None]:
    ids = out.sequences[r, prompt_len:]
    logits = [step[r] for step in out.logits] if want_logits and out.logits is not None else None
    return ids, logits


def _generated_length(ids: list[int], eos_ids: set[int], pad: int) -> tuple[int, bool]:
    """How many tokens this sample really generated, and whether it ended with end-of-sequence.

    Batched generation pads finished rows; the first EOS ends a row, otherwise trailing padding
    (when padding differs from EOS) is not part of the sample.
    """
    for j, t in enumerate(ids):
        if t in eos_ids:
            return j + 1, True
    n = len(ids)
    if pad not in eos_ids:
        while n and ids[n - 1] == pad:
            n -= 1
    return n, False


def _logprobs(tok: Any, ids: list[int], logits: list[Any], top: int) -> list[TokenLogprob]:
    import torch

    out = []
    for t, token_id in enumerate(ids):
        logp = torch.log_softmax(logits[t].float(), dim=-1)
        alts: list[TopLogprob] = []
        if top:
            values, idx = torch.topk(logp, k=min(top, logp.shape[-1]))
            alts = [TopLogprob(token=tok.decode([int(i)]), logprob=float(v)) for v, i in zip(values, idx, strict=True)]
        out.append(TokenLogprob(token=tok.decode([token_id]), logprob=float(logp[token_id]), top_logprobs=alts))
    return out
