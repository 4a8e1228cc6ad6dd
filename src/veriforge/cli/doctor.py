"""``veriforge doctor``: what this machine can do for veriforge, told truthfully.

Each check runs independently and reports what it found, never raising: a missing compiler is a
finding, not a crash. The JSON form is for scripts (CI, bug reports); the table for people.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import json
import platform
import shutil
import subprocess
import sys
from typing import Annotated, Any

import typer

#: Optional extras and the distributions that make each one usable.
EXTRAS: dict[str, list[str]] = {
    "train": ["torch", "transformers", "trl", "datasets", "accelerate"],
    "dist": ["ray"],
    "cuda": ["nvidia-cuda-nvcc", "nvidia-cuda-runtime"],
}


def _run(cmd: list[str], timeout: float = 15.0) -> tuple[int, str]:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as exc:
        return -1, str(exc)
    return proc.returncode, (proc.stdout + proc.stderr).strip()


def check_python() -> dict[str, Any]:
    ok = sys.version_info >= (3, 11)
    return {
        "ok": ok,
        "version": platform.python_version(),
        "executable": sys.executable,
        "detail": "" if ok else "veriforge needs Python 3.11 or newer",
    }


def check_cxx() -> dict[str, Any]:
    """The system C++ compiler: the CPU CUDA runtime compiles kernels with it."""
    for name in ("g++", "c++", "clang++"):
        path = shutil.which(name)
        if path:
            rc, out = _run([path, "--version"])
            first = out.splitlines()[0] if out else ""
            return {"ok": rc == 0, "path": path, "version": first, "detail": ""}
    return {
        "ok": False,
        "path": None,
        "version": None,
        "detail": "no C++ compiler found; install g++ (e.g. `apt-get install g++`) to run CUDA on the CPU",
    }


def check_nvcc() -> dict[str, Any]:
    from veriforge.cuda import toolchain

    info = dict(toolchain.describe())
    info.setdefault("ok", bool(info.get("found")))
    return info


def check_gpu() -> dict[str, Any]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return {"ok": False, "present": False, "gpus": [], "detail": "no nvidia-smi: no NVIDIA GPU/driver visible"}
    rc, out = _run([smi, "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"])
    if rc != 0:
        return {"ok": False, "present": False, "gpus": [], "detail": f"nvidia-smi failed: {out[:200]}"}
    gpus = [dict(zip(("name", "memory", "driver"), (p.strip() for p in line.split(",")), strict=False))
            for line in out.splitlines() if line.strip()]
    return {"ok": bool(gpus), "present": bool(gpus), "gpus": gpus, "detail": ""}


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def check_extras() -> dict[str, Any]:
    extras: dict[str, Any] = {}
    for extra, dists in EXTRAS.items():
        versions = {d: _dist_version(d) for d in dists}
        extras[extra] = {"installed": all(v is not None for v in versions.values()), "packages": versions}
    torch_v = extras["train"]["packages"].get("torch")
    if torch_v:
        extras["train"]["torch_build"] = "cpu" if "+cpu" in torch_v else "default (may include CUDA)"
    return extras


def check_models(settings) -> dict[str, Any]:
    """Configured model endpoints and whether they answer (a short ping, never a generation)."""
    model = settings.llm.model
    if not model:
        return {
            "configured": [],
            "detail": "no model configured: set llm.model in veriforge.toml, VERIFORGE_LLM__MODEL, "
            "or --set llm.model=… (see docs/llm.md for the model-string forms)",
        }
    from veriforge.llm import ping

    try:
        ok, detail = asyncio.run(ping(model, timeout=5.0))
    except Exception as exc:  # a ping must never crash doctor
        ok, detail = False, f"{type(exc).__name__}: {exc}"
    return {"configured": [{"model": model, "ok": ok, "detail": detail}], "detail": ""}


def check_sandbox() -> dict[str, Any]:
    from veriforge.sandbox import capabilities
    from veriforge.sandbox.policy import strict_default

    return {**capabilities(), "strict_mode": strict_default()}


def collect(settings) -> dict[str, Any]:
    """Every check, each isolated so one failing check cannot hide the others."""
    from veriforge import __version__

    checks = {
        "python": check_python,
        "cxx": check_cxx,
        "nvcc": check_nvcc,
        "gpu": check_gpu,
        "extras": check_extras,
        "models": lambda: check_models(settings),
        "sandbox": check_sandbox,
    }
    report: dict[str, Any] = {"veriforge": __version__, "platform": platform.platform()}
    for name, fn in checks.items():
        try:
            report[name] = fn()
        except Exception as exc:
            report[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    return report


def _mark(ok: bool | None) -> str:
    return {True: "[green]✓[/]", False: "[red]✗[/]", None: "[yellow]?[/]"}[ok]


def render(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    table = Table(title=f"veriforge {report['veriforge']} doctor", show_lines=False)
    table.add_column("check")
    table.add_column("", width=2)
    table.add_column("finding", overflow="fold")

    py = report["python"]
    table.add_row("Python", _mark(py.get("ok")), f"{py.get('version')} ({py.get('executable')})")
    cxx = report["cxx"]
    cxx_text = cxx.get("version") or cxx.get("detail") or cxx.get("error", "")
    table.add_row("C++ compiler", _mark(cxx.get("ok")), escape(cxx_text))
    nv = report["nvcc"]
    if nv.get("ok"):
        table.add_row("nvcc", _mark(True), f"{nv.get('version')} at {nv.get('nvcc')}")
    else:
        table.add_row("nvcc", _mark(False), str(nv.get("install_hint") or nv.get("detail") or nv.get("error", "")))
    gpu = report["gpu"]
    gpu_text = ", ".join(g.get("name", "?") for g in gpu.get("gpus", [])) or gpu.get("detail", "")
    table.add_row("GPU", _mark(True if gpu.get("present") else None), gpu_text)
    for extra, info in report["extras"].items():
        label = escape(f"extra [{extra}]")
        if not isinstance(info, dict) or "packages" not in info:
            table.add_row(label, _mark(False), escape(str(info)))
            continue
        pk = ", ".join(f"{k} {v}" if v else f"{k} missing" for k, v in info["packages"].items())
        note = f" · torch build: {info['torch_build']}" if "torch_build" in info else ""
        # extras are optional: missing is a note (?), not a failure
        table.add_row(label, _mark(True if info["installed"] else None), escape(pk + note))
    models = report["models"]
    if models.get("configured"):
        for m in models["configured"]:
            table.add_row("model", _mark(m["ok"]), escape(f"{m['model']}: {m['detail']}"))
    else:
        table.add_row("model", _mark(None), escape(models.get("detail") or models.get("error", "")))
    sb = report["sandbox"]
    if "error" in sb:
        table.add_row("sandbox", _mark(False), escape(sb["error"]))
    else:
        net = sb.get("network_isolation")
        table.add_row("sandbox network", _mark(net), escape(str(sb.get("network_detail", ""))))
        fs_ok = bool(sb.get("strict_possible"))
        table.add_row("sandbox filesystem", _mark(fs_ok), escape(str(sb.get("filesystem", ""))))
        for key, label in (("process_cleanup", "sandbox cleanup"), ("process_limit", "sandbox processes"),
                           ("user", "sandbox user"), ("rlimits", "sandbox rlimits")):
            if key in sb:
                table.add_row(label, "", escape(str(sb[key])))
        strict = sb.get("strict_mode")
        table.add_row("sandbox strict", _mark(fs_ok if strict else None),
                      "on: untrusted code runs only with every layer" if strict else
                      ("off (full isolation is available here)" if fs_ok else
                       "off: runs proceed with the layers above and say which were missing"))
    console.print(table)


def doctor(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Check what this machine offers: Python, C++ compiler, nvcc, GPU, extras, model endpoints, sandbox."""
    from veriforge.cli.main import state

    report = collect(state(ctx).settings())
    if as_json:
        typer.echo(json.dumps(report, indent=2, default=str))
    else:
        render(report)
