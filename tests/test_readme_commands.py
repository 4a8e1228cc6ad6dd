"""Every ``veriforge …`` command in README.md's code blocks runs, as written, with the offline
defaults (issue 19, part 8).

The commands are read from README.md itself, so the README cannot drift from what works. They run
in README order as real processes (``python -m veriforge``) in one scratch folder that holds the
files the README names (``kernel.cu``, ``program.cu``, ``my_tasks/``, ``path/to/research-repo``,
...), with ``VERIFORGE_OPTIML__BUDGET=2`` so every search is small (the README says the budget is
the ``optiml.budget`` setting). Optional parts written ``[--json]`` are left out.

A command whose README comment says it ``needs a model server`` runs against a local
OpenAI-compatible server (:class:`veriforge.llm.testing.FakeOpenAIServer`, real HTTP): its
``--model``/``--teacher`` gets ``@<server URL>``, ``llm.model`` points there, and ``moa.toml`` names
it. The server answers a CUDA request with the kernel the prompt shows (or, with none, a bundled
softmax kernel), a D3-Gym agent with a small program, a pairwise review with ``A`` and anything else
with a worked answer -- enough for every command to do its whole job, not to judge a model.

Skipped, with the reason: a command whose README comment says it ``needs network``, ``a base
model`` or ``the distilled reviewer`` (a trained model directory), and ``needs nvcc`` where nvcc is
absent. Commands that take longer than ~15 s here are marked
``expensive`` (run them with ``-m expensive``): the rest took 198 s here on two cores, ~75 s of
it building the CPU runtime, which a whole-suite run builds once for every test.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"

#: Commands (by prefix) slower than ~15 s on two cores, measured with the settings above.
SLOW = {
    "veriforge optimize row_sum.cu": "emulates a 4096x1024 kernel to probe its run time (39 s)",
    "veriforge cudaperf train": "a real GRPO step on a tiny model (48 s)",
    "veriforge cudaperf rank pairs": "evaluates every implementation of two tasks (20 s)",
    "veriforge cudaperf rank train": "needs the pairs of `cudaperf rank pairs`",
}

#: README comments that mean a command cannot run here (what it needs is not a server we can start).
_NEEDS = ("needs network", "a base model", "the distilled reviewer")
MODEL_SERVER = "needs a model server"
_MODEL_OPTIONS = ("--model", "-m", "--teacher")

_COMMENT = re.compile(r"\s{2,}#\s?(.*)$")
_OPTIONAL = re.compile(r"\s\[[^\]]*\]")


def readme_commands(text: str) -> list[tuple[str, str]]:
    """``(command, comment)`` for every line of a fenced code block that runs ``veriforge``.

    ``.venv/bin/veriforge`` (the install line) counts as ``veriforge``; a line's trailing comment
    (two spaces, ``#``) is returned apart; ``[optional]`` parts are dropped.
    """
    out: list[tuple[str, str]] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("```"):
            inside = not inside
            continue
        if not inside:
            continue
        comment = ""
        m = _COMMENT.search(line)
        if m:
            comment, line = m.group(1), line[: m.start()]
        for part in line.split("&&"):
            part = part.strip().replace(".venv/bin/veriforge", "veriforge")
            if part.startswith("veriforge"):
                out.append((_OPTIONAL.sub("", part).strip(), comment))
    return out


def test_readme_commands_are_found():
    cmds = [c for c, _ in readme_commands(README.read_text())]
    assert "veriforge optimize" in cmds  # the install line's demo
    assert "veriforge tasks list" in cmds  # "[--family c2cuda]" dropped
    assert len(cmds) >= 30


def _params() -> list:
    params = []
    for cmd, comment in readme_commands(README.read_text()):
        marks = []
        if any(why in comment for why in _NEEDS):
            marks.append(pytest.mark.skip(reason=f"README: {comment}"))
        elif "needs nvcc" in comment and shutil.which("nvcc") is None:
            marks.append(pytest.mark.skip(reason="needs nvcc (README), not on PATH"))
        slow = next((why for prefix, why in SLOW.items() if cmd.startswith(prefix)), None)
        if slow:
            marks.append(pytest.mark.expensive)
        params.append(pytest.param(cmd, marks=marks, id=cmd[:70]))
    return params


_SCALE = """\
__global__ void scale(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 2.0f * x[i];
}
"""

_PROGRAM = """\
#include <cstdio>
__global__ void fill(int* a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = i * i;
}
int main() {
    int* d; int h[64];
    cudaMalloc(&d, sizeof h);
    fill<<<2, 32>>>(d, 64);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("%d %d\\n", h[3], h[63]);
    cudaFree(d);
    return 0;
}
"""

_COMMON_H = "#pragma once\nint checksum(const int* a, int n);\n"
_KERN = """\
#include "common.h"
__global__ void iota(int* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] = i; }
void launch_iota(int* d, int n) { iota<<<(n + 31) / 32, 32>>>(d, n); }
"""
_IO = """\
#include "common.h"
int checksum(const int* a, int n) { int s = 0; for (int i = 0; i < n; ++i) s += a[i]; return s; }
"""
_MAIN = """\
#include <cstdio>
#include "common.h"
void launch_iota(int* d, int n);
int main(int argc, char** argv) {
    int* d; int h[LEN];
    cudaMalloc(&d, sizeof h);
    launch_iota(d, LEN);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("%s %d\\n", argc > 1 ? argv[1] : "-", checksum(h, LEN));
    return 0;
}
"""

_PROG = """\
#include <cstdio>
__global__ void count(const unsigned char* in, int n, int* total) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(total, in[i]);
}
int main(int argc, char** argv) {
    FILE* f = fopen(argv[1], "rb");
    unsigned char buf[256]; int n = (int)fread(buf, 1, sizeof buf, f); fclose(f);
    unsigned char* d; int* t; int h = 0;
    cudaMalloc(&d, n); cudaMalloc(&t, sizeof(int));
    cudaMemcpy(d, buf, n, cudaMemcpyHostToDevice); cudaMemcpy(t, &h, sizeof h, cudaMemcpyHostToDevice);
    count<<<(n + 63) / 64, 64>>>(d, n, t);
    cudaMemcpy(&h, t, sizeof h, cudaMemcpyDeviceToHost);
    printf("%d bytes, sum %d\\n", n, h);
    return 0;
}
"""


def _scenario(root: Path) -> Path:
    """The files the README's commands name, under ``root``; returns the folder they run in."""
    from veriforge.cuda.tasks import find_task

    work = root / "work"
    for d in (work / "build", root / "Common", root / "data", work / "path" / "to"):
        d.mkdir(parents=True)
    (work / "kernel.cu").write_text(_SCALE)
    (work / "program.cu").write_text(_PROGRAM)
    (root / "Common" / "common.h").write_text(_COMMON_H)
    (work / "kern.cu").write_text(_KERN)
    (work / "io.cpp").write_text(_IO)
    (work / "main.cu").write_text(_MAIN)
    (work / "build" / "compile_commands.json").write_text(
        "[" + ",".join(
            f'{{"directory": "{work}", "file": "{work / f}", '
            f'"arguments": ["nvcc", "-I{root / "Common"}", "-DLEN=64", "-c", "{work / f}"]}}'
            for f in ("main.cu", "kern.cu", "io.cpp")) + "]")
    (work / "prog.cu").write_text(_PROG)
    (root / "data" / "in.bmp").write_bytes(bytes(range(200)))
    shutil.copytree(find_task("c2cuda/vector_add"), work / "my_tasks" / "vector_add")
    shutil.copy(find_task("c2cuda/softmax_rows") / "impls" / "warp_shuffle.cu", work / "my_softmax.cu")
    shutil.copy(find_task("c2cuda/softmax_rows") / "impls" / "naive.cu", work / "my_kernel.cu")
    shutil.copy(REPO / "benchmarks" / "user_kernels" / "row_sum.cu", work / "row_sum.cu")
    shutil.copytree(REPO / "tests" / "discovery" / "fixtures" / "numpy_sim", work / "path" / "to" / "research-repo")
    shutil.copytree(REPO / "examples", work / "examples")
    return work


_STATE: dict[str, Path] = {}  # the scenario folder, for the stand-in model


def _fake_reply(body: dict, _k: int) -> str:
    """What the stand-in model answers (see the module docstring)."""
    from veriforge.cuda.tasks.load import find_task

    text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
    if re.search(r"Response A|response A|\[\[A\]\]", text):
        return "A"
    code = [c for c in re.findall(r"```[\w+]*\n(.*?)```", text, re.S) if "__global__" in c]
    if code:
        return "A faithful version:\n```cuda\n" + code[-1] + "```"
    if "softmax" in text.lower() and "pred_results" not in text:
        kernel = (find_task("c2cuda/softmax_rows") / "impls" / "warp_shuffle.cu").read_text()
        return "```cuda\n" + kernel + "```"
    if "pred_results" in text:  # a D3-Gym agent: the stand-in knows the gold program of the task asked
        for tj in sorted(_STATE.get("work", Path("/nonexistent")).glob("tasks/*/task.json")):
            task = json.loads(tj.read_text())
            if task["task_inst"][:200] in text:
                gold = (tj.parent / "gold_program" / task["gold_program_name"]).read_text()
                return f"```python\n{gold}```"
        return "```python\nprint('no idea')\n```"
    return "60 km/h for 3 h is 180 km.\nAnswer: 180"


@pytest.fixture(scope="module")
def model_server():
    from veriforge.llm.testing import FakeOpenAIServer

    server = FakeOpenAIServer(_fake_reply, models=["Qwen/Qwen2.5-Coder-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct",
                                                   "gpt-4o-mini", "gpt-4o", "stand-in"]).start()
    yield server
    server.close()


def _with_server(argv: list[str], url: str) -> list[str]:
    """``--model vllm:X`` -> ``--model vllm:X@URL`` (the README's model, served here)."""
    out = list(argv)
    for i, arg in enumerate(out[:-1]):
        if arg in _MODEL_OPTIONS and "@" not in out[i + 1]:
            out[i + 1] = f"{out[i + 1]}@{url}"
    return out


@pytest.fixture(scope="module")
def scenario(tmp_path_factory, link_build_caches, model_server):
    # The programs run in the current folder, which the sandbox user must reach: not under
    # pytest's private temp folder.
    root = Path(tempfile.mkdtemp(prefix="vf-readme-"))
    root.chmod(0o755)
    home = tmp_path_factory.mktemp("readme-home")
    link_build_caches(str(home))
    url = model_server.base_url
    env = {**os.environ, "VERIFORGE_HOME": str(home), "VERIFORGE_OPTIML__BUDGET": "2", "COLUMNS": "120",
           "VERIFORGE_LLM__MODEL": f"vllm:stand-in@{url}", "OPENAI_API_KEY": "not-a-key"}
    env.pop("VERIFORGE_CONFIG", None)
    work = _scenario(root)
    _STATE["work"] = work
    (work / "moa.toml").write_text(
        f'method = "rem_moa"\ndepth = 2\nwidth = 2\n\n[[proposers]]\nname = "careful"\n'
        f'model = "vllm:Qwen/Qwen2.5-7B-Instruct@{url}"\n\n[aggregator]\n'
        f'model = "vllm:Qwen/Qwen2.5-7B-Instruct@{url}"\n')
    (work / "gsm8k_test.jsonl").write_text(
        '{"question": "What is 2+3?", "answer": "#### 5"}\n'
        '{"question": "A train goes 60 km/h for 3 h. How far?", "answer": "#### 180"}\n')
    yield work, env, url
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("command", _params())
def test_readme_command_runs(command, scenario):
    work, env, url = scenario
    argv = [sys.executable, "-m", "veriforge", *_with_server(shlex.split(command)[1:], url)]
    res = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    out = res.stdout + res.stderr
    assert res.returncode == 0, f"{command}\n{out[-4000:]}"
    assert "Traceback" not in out, out[-4000:]
