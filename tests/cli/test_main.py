"""The top-level command: help, version, global options, doctor's truthfulness, config show."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import socket
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from veriforge import __version__
from veriforge.cli.main import app, main, parse_overrides

runner = CliRunner()


def test_help_lists_command_groups():
    res = runner.invoke(app, ["--help"])
    assert res.exit_code == 0
    for word in ("doctor", "config", "cuda"):
        assert word in res.output


def test_version():
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0
    assert res.output.strip() == f"veriforge {__version__}"


def test_console_script_runs_in_subprocess():
    """The installed entry point works as a process (what users type), not just in-process."""
    exe = shutil.which("veriforge")
    cmd = [exe, "--version"] if exe else [sys.executable, "-m", "veriforge.cli.main", "--version"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    assert __version__ in out.stdout


def test_parse_overrides_nested_and_rejects_garbage():
    assert parse_overrides(["llm.model=x", "sandbox.timeout_s=5", "llm.cache=false"]) == {
        "llm": {"model": "x", "cache": "false"},
        "sandbox": {"timeout_s": "5"},
    }
    import typer

    with pytest.raises(typer.BadParameter):
        parse_overrides(["novalue"])


def _doctor_json(*extra: str) -> dict:
    res = runner.invoke(app, [*extra, "doctor", "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_doctor_reports_this_machine_truthfully():
    rep = _doctor_json()
    assert rep["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert rep["cxx"]["ok"] == any(shutil.which(c) for c in ("g++", "c++", "clang++"))
    nvcc_on_path = shutil.which("nvcc") is not None
    if nvcc_on_path:  # found on PATH ⇒ doctor must find it (it may also find a wheel when PATH has none)
        assert rep["nvcc"]["ok"] is True
        assert rep["nvcc"]["version"]
    has_smi = shutil.which("nvidia-smi") is not None
    if not has_smi:
        assert rep["gpu"]["present"] is False
    for dist, ver in rep["extras"]["train"]["packages"].items():
        try:
            real = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            real = None
        assert ver == real
    # no model configured in the test environment: doctor says so and how to fix it
    assert rep["models"]["configured"] == []
    assert "llm.model" in rep["models"]["detail"]
    assert "network_isolation" in rep["sandbox"]


def test_doctor_pings_configured_model_endpoint():
    from veriforge.llm.testing import FakeOpenAIServer

    with FakeOpenAIServer(replies=["hi"], models=["tiny"]) as server:
        rep = _doctor_json("--set", f"llm.model=tiny@{server.base_url}")
        wrong = _doctor_json("--set", f"llm.model=other@{server.base_url}")
    [m] = rep["models"]["configured"]
    assert m["ok"] is True, m
    [w] = wrong["models"]["configured"]
    assert w["ok"] is False and "tiny" in w["detail"]  # the server answers but does not serve that model


def test_doctor_reports_dead_endpoint():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rep = _doctor_json("--set", f"llm.model=tiny@http://127.0.0.1:{port}/v1")
    [m] = rep["models"]["configured"]
    assert m["ok"] is False
    assert m["detail"]


def test_doctor_table_renders():
    res = runner.invoke(app, ["doctor"])
    assert res.exit_code == 0, res.output
    for word in ("Python", "nvcc", "GPU", "sandbox"):
        assert word in res.output


def test_config_show_reflects_set_override(tmp_path, monkeypatch):
    cfg = tmp_path / "veriforge.toml"
    cfg.write_text('[sandbox]\ntimeout_s = 7\n[llm]\nmodel = "from-file"\n')
    res = runner.invoke(app, ["--config", str(cfg), "--set", "llm.model=from-flag", "config", "show", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["llm"]["model"] == "from-flag"
    assert data["sandbox"]["timeout_s"] == 7


def test_bad_setting_is_a_clear_error_not_a_traceback(capsys):
    rc = main(["--set", "sandbox.timeout_s=notanumber", "config", "show"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "timeout_s" in err
    assert "Traceback" not in err


def test_exit_codes_propagate_through_main(tmp_path, capsys):
    """main() must return the command's own exit code (a failed compile is not a success)."""
    assert main(["--version"]) == 0
    assert main(["no-such-command"]) == 2
    bad = tmp_path / "bad.cu"
    bad.write_text("int main() { return undefined_name; }\n")
    rc = main(["cuda", "run", str(bad)])
    captured = capsys.readouterr()
    assert rc == 1, captured
    assert "bad.cu:1" in captured.out + captured.err


def test_console_script_reports_config_error_with_exit_2(tmp_path):
    exe = shutil.which("veriforge")
    cmd = [exe] if exe else [sys.executable, "-m", "veriforge"]
    out = subprocess.run([*cmd, "--set", "sandbox.timeout_s=x", "config", "show"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "sandbox.timeout_s" in out.stderr
    assert "Traceback" not in out.stderr
