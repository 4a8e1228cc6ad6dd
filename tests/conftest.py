"""Shared test fixtures: every test gets its own VERIFORGE_HOME so nothing leaks between tests
or into the user's cache."""

from __future__ import annotations

import shutil
import subprocess

import pytest


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("vfhome")
    monkeypatch.setenv("VERIFORGE_HOME", str(home))
    for var in ("VERIFORGE_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    yield home


def _has_gpu() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def pytest_collection_modifyitems(config, items):
    gpu = _has_gpu()
    nvcc = shutil.which("nvcc") is not None
    for item in items:
        if "gpu" in item.keywords and not gpu:
            item.add_marker(pytest.mark.skip(reason="no NVIDIA GPU on this machine"))
        if "nvcc" in item.keywords and not nvcc:
            item.add_marker(pytest.mark.skip(reason="nvcc not found"))
