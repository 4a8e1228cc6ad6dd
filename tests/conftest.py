"""Shared test fixtures.

Every test gets its own VERIFORGE_HOME so run stores, settings and caches never leak between tests
or into the user's own cache. The exception is the content-addressed *build* caches (the CPU
runtime and the programs it compiles, compiled C references and their outputs, nvcc's cubins and
resource reports): their entries are keyed by a hash of everything that goes into them, so sharing
one folder per session is safe, and rebuilding the runtime (or re-running ptxas on the same bundled
implementation) in every test would dominate the suite's time. Tests of the caching itself point
VERIFORGE_HOME (or the cache argument) somewhere fresh.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# The suite starts hundreds of Python processes (pytest-xdist workers, `python -m veriforge` for the
# CLI and README tests, evaluation servers, sandboxed harnesses); with PYTHONDONTWRITEBYTECODE set
# (some CI images set it) each of them compiles every veriforge and test module it imports from
# source, and pytest rewrites every test module's asserts again in every worker: collection alone
# took 16 s per worker instead of 5.5 s. The suite writes bytecode (into the ignored __pycache__
# folders), whatever the environment says; veriforge itself still honours the variable.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

#: build caches shared by the whole session (content-addressed, safe to share). ``nvcc``: the key
#: covers the source, the user headers it includes, flags, defines, arch, output kind, file name and
#: nvcc's version (veriforge.cuda.toolchain.compiler.compile).
SHARED_BUILD_CACHES = ("cpu-runtime", "c-ref", "c-ref-out", "nvcc")


@pytest.fixture(scope="session")
def session_build_home(tmp_path_factory) -> str:
    """A VERIFORGE_HOME whose build caches every test shares (for module/session fixtures too).

    Under pytest-xdist every worker's base temp dir sits in the run's own one: the workers share
    its home, so the runtime and each program are built once per run, not once per worker (the
    caches publish atomically under file locks; the signing key is created once, by whoever is first).
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    home = root / "vf-shared-build-home"
    for name in SHARED_BUILD_CACHES:
        (home / "cache" / name).mkdir(parents=True, exist_ok=True)
    key_path = home / "secret.key"
    if not key_path.exists():
        staged = home / f"secret.key.{os.getpid()}"
        fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(os.urandom(32))
        try:
            os.link(staged, key_path)  # atomic: the first worker's key wins, complete or absent
        except FileExistsError:
            pass
        finally:
            os.unlink(staged)
    return str(home)


@pytest.fixture(scope="session")
def link_build_caches(session_build_home):
    """``link(home)``: point ``home``'s build caches at the session's (module fixtures with their own home)."""

    def link(home) -> None:
        # The shared caches are signed (core.integrity): every test home gets the session's key.
        key = os.path.join(home, "secret.key")
        if not os.path.exists(key):
            shutil.copy2(os.path.join(session_build_home, "secret.key"), key)
            os.chmod(key, 0o600)
        for name in SHARED_BUILD_CACHES:
            target = os.path.join(home, "cache", name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if not os.path.exists(target):
                os.symlink(os.path.join(session_build_home, "cache", name), target)

    return link


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch, link_build_caches):
    home = tmp_path_factory.mktemp("vfhome")
    monkeypatch.setenv("VERIFORGE_HOME", str(home))
    for var in ("VERIFORGE_MODEL", "VERIFORGE_CONFIG", "VERIFORGE_NVCC", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    link_build_caches(home)
    yield home


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto`` (the README's command): one worker per core, plus one. Many tests wait -- on a
    sandboxed program's time limit, a CLI subprocess, a server, the lock of a build another worker
    is running -- and the extra worker fills those gaps: on 2 cores, 2026-12-03, 3 workers took
    678 s against 704 s for 2 (same commit, back to back; 907 s against 954 s on 2026-12-02)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cpus + 1


def _suite_cpu():
    """tests/suite_cpu.py (the tests folder is not a package under --import-mode=importlib)."""
    spec = importlib.util.spec_from_file_location("veriforge_suite_cpu", Path(__file__).with_name("suite_cpu.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


_RUN_START: dict = {}
_WORKER_CPU: list[tuple[float, float]] = []


def pytest_configure(config):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        module = _suite_cpu()
        _RUN_START["cpu"] = (module, module.snapshot(), module.process_cpu(children=False))


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: report its CPU to the controller
        workeroutput["suite_cpu"] = _suite_cpu().process_cpu()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    cpu = getattr(node, "workeroutput", {}).get("suite_cpu")
    if cpu:
        _WORKER_CPU.append(tuple(cpu))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The run's CPU beside its wall time (tests/suite_cpu.py says why)."""
    if "cpu" in _RUN_START:
        module, start, own = _RUN_START["cpu"]
        if _WORKER_CPU:  # the session process alone at the start, as at the end
            start = module.Snapshot(start.wall, *own, start.steal)
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        terminalreporter.write_line(module.summary(start, module.snapshot(_WORKER_CPU), cores))


def _has_gpu() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _suite_order():
    """tests/suite_order.py (the tests folder is not a package under --import-mode=importlib)."""
    spec = importlib.util.spec_from_file_location("veriforge_suite_order", Path(__file__).with_name("suite_order.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pytest_collection_modifyitems(config, items):
    # Slowest files first (tests/suite_order.py): with --dist loadfile --no-loadscope-reorder the
    # long single-test files no longer run last on one worker while the other idles.
    order = _suite_order()
    items[:] = order.slowest_files_first(items, lambda item: item.nodeid, order.load_durations())
    gpu = _has_gpu()
    nvcc = shutil.which("nvcc") is not None
    for item in items:
        if "gpu" in item.keywords and not gpu:
            item.add_marker(pytest.mark.skip(reason="no NVIDIA GPU on this machine"))
        if "nvcc" in item.keywords and not nvcc:
            item.add_marker(pytest.mark.skip(reason="nvcc not found"))
