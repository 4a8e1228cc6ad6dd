"""Settings: precedence overrides > environment > TOML file > defaults, and loud errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from veriforge.core.config import Price, Settings, find_config_file, load_settings
from veriforge.errors import ConfigError


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch, tmp_path):
    for name in list(os.environ):
        if name.startswith("VERIFORGE_") and name != "VERIFORGE_HOME":
            monkeypatch.delenv(name)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)  # no stray ./veriforge.toml
    return work


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_defaults_without_any_source():
    s = load_settings()
    assert s.config_file is None
    assert s.store.path is None
    assert (s.llm.model, s.llm.cache, s.llm.max_concurrency, s.llm.max_retries) == (None, True, 8, 5)
    assert (s.llm.timeout_s, s.llm.trace, s.llm.prices, s.llm.extra) == (120.0, True, {}, {})
    assert (s.sandbox.timeout_s, s.sandbox.cpu_s, s.sandbox.memory_mb, s.sandbox.file_size_mb) == \
        (60.0, 60, 4096, 256)
    assert (s.sandbox.max_procs, s.sandbox.max_output_bytes, s.sandbox.network) == (64, 1_000_000, False)
    assert (s.cuda.arch, s.cuda.nvcc, s.cuda.cpu_threads) == ("sm_90", None, None)


def test_precedence_overrides_over_env_over_file_over_defaults(tmp_path, monkeypatch):
    cfg = _write(tmp_path / "v.toml", """
[llm]
model = "from-file"
max_retries = 1
timeout_s = 30
[sandbox]
cpu_s = 10
""")
    monkeypatch.setenv("VERIFORGE_LLM__MODEL", "from-env")
    monkeypatch.setenv("VERIFORGE_LLM__TIMEOUT_S", "5")
    s = load_settings(cfg, overrides={"llm": {"model": "from-cli"}})
    assert s.llm.model == "from-cli"          # overrides beat env and file
    assert s.llm.timeout_s == 5.0             # env beats file
    assert s.llm.max_retries == 1             # file beats defaults
    assert s.sandbox.cpu_s == 10
    assert s.sandbox.memory_mb == 4096        # untouched default
    assert s.config_file == cfg

    monkeypatch.delenv("VERIFORGE_LLM__MODEL")
    assert load_settings(cfg).llm.model == "from-file"
    assert load_settings(cfg, overrides={"llm": {"model": None}}).llm.model == "from-file"


def test_overrides_merge_key_by_key_not_section_by_section(tmp_path):
    cfg = _write(tmp_path / "v.toml", '[llm]\nmodel = "m"\ncache = false\n')
    s = load_settings(cfg, overrides={"llm": {"max_concurrency": 2}})
    assert (s.llm.model, s.llm.cache, s.llm.max_concurrency) == ("m", False, 2)


def test_config_file_discovery_order(tmp_path, monkeypatch, _clean_env):
    local = _write(_clean_env / "veriforge.toml", '[cuda]\narch = "sm_80"\n')
    assert find_config_file() == local
    assert load_settings().cuda.arch == "sm_80"

    from_env = _write(tmp_path / "env.toml", '[cuda]\narch = "sm_86"\n')
    monkeypatch.setenv("VERIFORGE_CONFIG", str(from_env))
    assert load_settings().cuda.arch == "sm_86"            # $VERIFORGE_CONFIG beats ./veriforge.toml

    explicit = _write(tmp_path / "explicit.toml", '[cuda]\narch = "sm_89"\n')
    assert load_settings(explicit).cuda.arch == "sm_89"    # explicit path beats both


def test_missing_explicit_file_is_an_error(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "nope.toml")
    monkeypatch.setenv("VERIFORGE_CONFIG", str(tmp_path / "gone.toml"))
    with pytest.raises(ConfigError, match="VERIFORGE_CONFIG"):
        load_settings()


def test_unknown_key_in_file_is_named(tmp_path):
    cfg = _write(tmp_path / "v.toml", '[llm]\nmodle = "typo"\n[sandboxx]\nx = 1\n')
    with pytest.raises(ConfigError) as err:
        load_settings(cfg)
    assert "'llm.modle'" in str(err.value) and "'sandboxx'" in str(err.value)
    assert str(cfg) in str(err.value)


def test_invalid_value_names_field_path_and_source(tmp_path, monkeypatch):
    cfg = _write(tmp_path / "v.toml", '[sandbox]\nmemory_mb = "lots"\n')
    with pytest.raises(ConfigError) as err:
        load_settings(cfg)
    assert "sandbox.memory_mb" in str(err.value) and str(cfg) in str(err.value)

    monkeypatch.setenv("VERIFORGE_LLM__MAX_CONCURRENCY", "0")
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert "llm.max_concurrency" in str(err.value) and "VERIFORGE_LLM__MAX_CONCURRENCY" in str(err.value)

    with pytest.raises(ConfigError, match=r"cuda\.arch.*command-line"):
        load_settings(overrides={"cuda": {"arch": "volta"}})


def test_unknown_keys_from_env_and_overrides_are_errors(monkeypatch):
    with pytest.raises(ConfigError, match=r"'llm\.bogus'"):
        load_settings(overrides={"llm": {"bogus": 1}})
    monkeypatch.setenv("VERIFORGE_SANDBOX__NETWROK", "1")
    with pytest.raises(ConfigError, match=r"sandbox\.netwrok.*VERIFORGE_SANDBOX__NETWROK"):
        load_settings()


def test_invalid_toml_syntax_is_a_config_error(tmp_path):
    cfg = _write(tmp_path / "v.toml", "[llm\nmodel = 1\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_settings(cfg)


def test_env_complex_values_are_json(monkeypatch):
    monkeypatch.setenv("VERIFORGE_LLM__PRICES", '{"gpt-4o": [2.5, 10.0]}')
    monkeypatch.setenv("VERIFORGE_SANDBOX__NETWORK", "true")
    monkeypatch.setenv("VERIFORGE_STORE__PATH", "/tmp/somewhere/runs.sqlite")
    s = load_settings()
    assert s.llm.prices["gpt-4o"] == Price(input=2.5, output=10.0)
    assert s.sandbox.network is True
    assert s.store.path == Path("/tmp/somewhere/runs.sqlite")


def test_prices_cost_accounting(tmp_path):
    cfg = _write(tmp_path / "v.toml", '[llm.prices]\n"openai/gpt-4o" = {input = 2.5, output = 10}\n'
                                      'local = [0, 0]\n')
    s = load_settings(cfg)
    price = s.llm.price_for("openai/gpt-4o")
    assert price is not None and price.cost(1_000_000, 500_000) == pytest.approx(7.5)
    assert s.llm.price_for("http://host:8000/v1/gpt-4o") is None
    assert s.llm.price_for("local") == Price(input=0, output=0)
    with pytest.raises(ConfigError):
        load_settings(overrides={"llm": {"prices": {"x": [1.0]}}})
    with pytest.raises(ConfigError):
        load_settings(overrides={"llm": {"prices": {"x": {"input": -1, "output": 1}}}})


def test_dump_toml_roundtrips_non_default_settings(tmp_path):
    s = load_settings(overrides={
        "store": {"path": str(tmp_path / "runs.sqlite")},
        "llm": {"model": 'http://127.0.0.1:8000/v1#qwen "7b"\nx', "cache": False, "trace_path": "t.jsonl",
                "prices": {"vendor/model.v2": [1.5, 3.0]},
                "extra": {"top_k": 20, "stop": ["</s>", "\\n"], "nested": {"a b": 1}}},
        "sandbox": {"network": True, "timeout_s": 2.5},
        "cuda": {"arch": "sm_90a", "cpu_threads": 3},
    })
    text = s.dump_toml()
    assert "[llm]" in text and "# api_key_env = unset" in text
    path = _write(tmp_path / "dumped.toml", text)
    back = load_settings(path)
    assert back.model_dump() == s.model_dump()


def test_default_dump_roundtrips_to_defaults(tmp_path):
    path = _write(tmp_path / "d.toml", Settings().dump_toml())
    assert load_settings(path).model_dump() == Settings().model_dump()


def test_settings_without_loader_read_env(monkeypatch):
    monkeypatch.setenv("VERIFORGE_LLM__MODEL", "env-only")
    assert Settings().llm.model == "env-only"
