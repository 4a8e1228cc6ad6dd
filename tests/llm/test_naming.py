"""The model-string forms parse to the right back-end, address and key variable."""

from __future__ import annotations

import pytest

from veriforge.llm import LLMConfigError, parse_model

CASES = [
    # text, kind, provider, model, base_url, api_key_env
    ("openai:gpt-4o-mini", "http", "openai", "gpt-4o-mini", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    ("vllm:Qwen/Qwen2.5-7B-Instruct", "http", "vllm", "Qwen/Qwen2.5-7B-Instruct", "http://localhost:8000/v1", None),
    ("sglang:meta-llama/Llama-3.1-8B", "http", "sglang", "meta-llama/Llama-3.1-8B", "http://localhost:30000/v1",
     None),
    ("ollama:llama3.1:8b", "http", "ollama", "llama3.1:8b", "http://localhost:11434/v1", None),
    ("llamacpp:", "http", "llamacpp", "default", "http://localhost:8080/v1", None),
    ("llamacpp:qwen-gguf", "http", "llamacpp", "qwen-gguf", "http://localhost:8080/v1", None),
    ("vllm:Qwen/Qwen2.5-7B@http://gpu-node:9000/v1", "http", "vllm", "Qwen/Qwen2.5-7B", "http://gpu-node:9000/v1",
     None),
    ("my-model@http://127.0.0.1:1234/v1/", "http", "endpoint", "my-model", "http://127.0.0.1:1234/v1", None),
    ("org/m:tag@https://api.example.com/v1", "http", "endpoint", "org/m:tag", "https://api.example.com/v1", None),
    ("hf:/models/tiny", "hf", "hf", "/models/tiny", None, None),
    ("hf:./relative/dir", "hf", "hf", "./relative/dir", None, None),
    ("scripted:replies.jsonl", "scripted", "scripted", "replies.jsonl", None, None),
    ("scripted:data/replies", "scripted", "scripted", "data/replies", None, None),
    ("scripted:mypkg.replies:answer", "scripted", "scripted", "mypkg.replies:answer", None, None),
]


@pytest.mark.parametrize(("text", "kind", "provider", "model", "base_url", "key_env"), CASES)
def test_model_string_forms(text, kind, provider, model, base_url, key_env):
    spec = parse_model(text)
    assert (spec.kind, spec.provider, spec.model, spec.base_url, spec.api_key_env) == (
        kind, provider, model, base_url, key_env)
    assert spec.text == text.strip()


def test_scripted_file_vs_callable():
    assert parse_model("scripted:replies.jsonl").script == "file"
    assert parse_model("scripted:pkg.mod:fn").script == "callable"
    assert parse_model("scripted:pkg.mod:Class.method").script == "callable"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (None, "no language model configured"),
        ("", "no language model configured"),
        ("gpt-4o", "unrecognised model string"),
        ("http://localhost:8000/v1", "a URL alone"),
        ("@http://localhost:8000/v1", "before '@'"),
        ("vllm:", "name the model"),
        ("hf:", "local model directory"),
        ("scripted:", "replies file"),
    ],
)
def test_bad_model_strings_explain_themselves(text, needle):
    with pytest.raises(LLMConfigError) as info:
        parse_model(text)
    assert needle in str(info.value)


def test_missing_model_message_says_how_to_configure():
    with pytest.raises(LLMConfigError) as info:
        parse_model(None)
    msg = str(info.value)
    assert "--model" in msg and "VERIFORGE_LLM__MODEL" in msg and "veriforge.toml" in msg
