"""Red team for PyTorch→CUDA candidates: escapes and cheats past the static scan.

The static scan is switched off here (``scan_torch`` returns nothing), so every verdict below comes
from containment (the confined candidate process) and the dynamic checks across the trust
boundary. Each entry: candidate text → expected outcome (correct or not) and a reason substring;
escapes are also checked on the host.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from veriforge.cuda.evaluate.harness import evaluate
from veriforge.sandbox import Policy, planned_isolation

TASKS = Path(__file__).parents[1] / "tasks" / "data"
RELU = TASKS / "torch2cuda" / "relu_rows"
ROOT = os.geteuid() == 0
pytestmark = pytest.mark.skipif(not ROOT or not planned_isolation(Policy())["filesystem"],
                                reason="full isolation needs root and mount namespaces")

HEAD = '''
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

_ext = load_cuda("redteam_relu", r"""
__global__ void k(const float* x, const float* s, float* y, int rows, int cols) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) { float v = x[i]; y[i] = (v > 0.f ? v : 0.f) * s[i % cols]; }
}
extern "C" void relu_scale(const float* x, const float* s, float* y, int rows, int cols) {
    k<<<(rows * cols + 127) / 128, 128>>>(x, s, y, rows, cols);
}
""")
# PRELUDE


class ModelNew(nn.Module):
    def __init__(self, dim_in):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim_in))

    def forward(self, x):
# BODY
'''
HONEST_BODY = '''        y = torch.empty_like(x)
        _ext.relu_scale(x.contiguous(), self.scale, y, x.size(0), x.size(1))
        return y
'''


def candidate(body: str = HONEST_BODY, prelude: str = "") -> str:
    return HEAD.replace("# PRELUDE", prelude).replace("# BODY", body)


@pytest.fixture
def no_static_scan(monkeypatch):
    from veriforge.cuda.evaluate import anticheat_torch

    monkeypatch.setattr(anticheat_torch, "scan_torch", lambda *a, **k: [])


def _eval(src: str):
    return evaluate(RELU, src, configs=["small"])


CHEATS = {
    # The reference Model, imported from the task folder (readable: tasks are public) and called.
    "reference model": (candidate(
        prelude="import importlib.util as _u, glob as _g\n"
                "_spec = _u.spec_from_file_location('r', _g.glob('" + str(RELU) + "/reference.py')[0])\n"
                "_ref = _u.module_from_spec(_spec); _spec.loader.exec_module(_ref)\n",
        body="        m = _ref.Model(x.size(1)); m.scale = self.scale\n        return m(x)\n"),
        # (where the checkout itself is hidden, e.g. under /root, the file is simply not there)
        ("pytorch compute operators", "list index out of range")),
    # torch compute hidden in a helper outside forward, spelled through getattr.
    "helper fallback": (candidate(
        prelude="def _h(t, s):\n    return getattr(torch, 'cl' + 'amp')(t, min=0) * s\n",
        body="        return _h(x, self.scale)\n"), "pytorch compute operators"),
    # torch.ops.aten directly.
    "aten direct": (candidate(body="        return torch.ops.aten.mul(torch.ops.aten.relu(x), self.scale)\n"),
                    "pytorch compute operators"),
    # The harness's reference outputs, looked for where the harness keeps its temp files.
    "cached reference outputs": (candidate(
        prelude="import glob, numpy\n",
        body="        hits = sorted(glob.glob('/tmp/vf-torch-ref-*/0/out0.npy'))\n"
             "        if hits:\n"
             "            return torch.from_numpy(numpy.load(hits[0]))\n"
             "        return torch.zeros_like(x)\n"), ("wrong on config", "never called the candidate's cuda")),
    # The reference model object, searched for in the process's memory.
    "gc walk": (candidate(
        prelude="import gc\n",
        body="        for o in gc.get_objects():\n"
             "            if type(o).__name__ == 'Model' and o is not self:\n"
             "                y = torch.empty_like(x)\n"
             "                return o(x)\n"
             "        return torch.zeros_like(x)\n"), ("wrong on config", "never called the candidate's cuda")),
    # Output that aliases the input (the kernel writes in place).
    "aliasing": (candidate(
        body="        _ext.relu_scale(x, self.scale, x, x.size(0), x.size(1))\n        return x\n"), "aliases input"),
    # Forging the result file: write answers and leave before the harness's runner does.
    "forged result": (candidate(
        prelude="import json, os, numpy\n"
                "os.makedirs('0', exist_ok=True)\n"
                "numpy.save('0/out0.npy', numpy.zeros((4, 4), numpy.float32))\n"
                "open('result.json', 'w').write(json.dumps({'status': 'ok', 'cases': [{'seconds': 0.0, "
                "'problems': [], 'outputs': [{'dtype': 'float32', 'shape': [4, 4]}]}] * 4}))\n"
                "os._exit(0)\n"), "the reference"),
    # A result file that is a link to a secret.
    "symlinked result": (candidate(
        prelude="import os\n",
        body="        y = torch.empty_like(x)\n"
             "        _ext.relu_scale(x.contiguous(), self.scale, y, x.size(0), x.size(1))\n"
             "        os.makedirs('0', exist_ok=True)\n"
             "        try:\n"
             "            os.symlink('/etc/shadow', '0/out0.npy')\n"
             "        except FileExistsError:\n"
             "            pass\n"
             "        return y\n"), ""),
    # Rewriting its own report: patch json.dumps so the problems found in this process vanish.
    "report patching": (candidate(
        prelude="import json as _j\n_orig = _j.dumps\n"
                "def _clean(r, **k):\n"
                "    if isinstance(r, dict) and 'cases' in r:\n"
                "        r = dict(r, patched=[], cases=[dict(c, problems=[]) for c in r['cases']])\n"
                "    return _orig(r, **k)\n"
                "_j.dumps = _clean\n",
        body="        return torch.relu(x) * self.scale\n"), "pytorch compute operators"),
    # Faking a fast time: the forward-time figures are written by the candidate's own process.
    "timing forgery": (candidate(
        prelude="import time as _t\n_real = _t.perf_counter\n_calls = [0]\n"
                "def _fake():\n    _calls[0] += 1\n    return _real() + (1000.0 if _calls[0] % 2 == 0 else 0.0)\n"
                "_t.perf_counter = _fake\n"), "tamper"),
    # Numbers computed with NumPy (outside the dispatcher), then returned as a tensor: never handed to the
    # candidate's CUDA code.
    "numpy compute": (candidate(
        prelude="import numpy as _np\n",
        body="        y = torch.empty_like(x)\n"
             "        _ext.relu_scale(x.contiguous(), self.scale, y, x.size(0), x.size(1))\n"
             "        v = x.detach().numpy()\n"
             "        return torch.from_numpy(_np.maximum(v, 0) * self.scale.detach().numpy())\n"),
        "never handed"),
    # Constant answers (memorised for some inputs) are caught by fresh inputs per trial.
    "constant": (candidate(body="        return torch.full_like(x, 0.5)\n"), ""),
}


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_cheat_is_not_accepted(name: str, no_static_scan) -> None:
    src, reason = CHEATS[name]
    res = _eval(src)
    assert not res.verdict.correct, f"{name}: accepted! {res.verdict.reason}"
    reasons = (reason,) if isinstance(reason, str) else reason
    assert any(r.lower() in res.verdict.reason.lower() for r in reasons), res.verdict.reason
    assert "root:" not in (res.log or "") and "root:" not in res.verdict.reason  # no /etc/shadow content


def test_honest_candidate_passes_confined_and_says_so() -> None:
    res = _eval(candidate())
    assert res.verdict.correct, res.verdict.reason
    iso = res.details["isolation"]
    assert iso["full"] is True and iso["filesystem"] is True and iso["network"] is True
    assert iso["dropped_root"] is True


ESCAPES = {
    "secrets": "print(open('/etc/shadow').read()[:50])\n",
    "environment": "import os\nprint({k: v for k, v in os.environ.items() if 'KEY' in k or 'TOKEN' in k})\n",
    "kill the fork server": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n",
    "kill everything": "import os, signal\nos.kill(-1, signal.SIGKILL)\n",
    "daemon": "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(120)\n    os._exit(0)\n",
    "write the store": "import os\nfor p in [os.environ.get('VERIFORGE_HOME', ''), '/root/.cache/veriforge']:\n"
                       "    try:\n        open(os.path.join(p, 'runs.sqlite'), 'w').write('')\n"
                       "    except Exception as e:\n        print('denied', type(e).__name__)\n",
    "network": "import socket\ntry:\n    socket.create_connection(('127.0.0.1', 22), timeout=1)\n"
               "    print('CONNECTED')\nexcept Exception as e:\n    print('blocked', e)\n",
}


def _live_processes_of(uid: int) -> list[int]:
    """Processes of ``uid`` that still run (zombies are dead; they only wait to be reaped)."""
    from veriforge.sandbox._confine import uid_processes

    return uid_processes(uid)


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_escape_at_import_time_is_contained(name: str, no_static_scan, monkeypatch, tmp_path) -> None:
    from veriforge.core.store import RunStore
    from veriforge.sandbox.identity import UID_BASE, UID_SPAN

    monkeypatch.setenv("OPENAI_API_KEY", "sk-redteam-9913")
    store = RunStore(tmp_path / "runs.sqlite")
    store.put_record("redteam", "k", {"v": 1})
    res = _eval(candidate(prelude=ESCAPES[name]))
    # The harness is alive, the store intact, the secret nowhere, no sandbox process left.
    assert store.get_record("redteam", "k") == {"v": 1}
    text = (res.log or "") + res.verdict.reason
    assert "sk-redteam-9913" not in text and "CONNECTED" not in text and "root:" not in text
    uid = res.details["isolation"]["uid"]
    assert UID_BASE <= uid < UID_BASE + UID_SPAN
    left = _live_processes_of(uid)
    assert not left, f"{name}: sandbox processes left behind: {left}"
    # The probe itself does no harm to the answer: the kernel still runs (or the run is a failure).
    assert res.verdict.correct or res.verdict.reason
