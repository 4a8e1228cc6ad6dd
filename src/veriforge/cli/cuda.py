"""``veriforge cuda``: compile a ``.cu`` file with nvcc, or run a whole CUDA program on the CPU.

``compile`` is the quick answer to "what does ptxas think of my kernel": registers, shared
memory, stack, spills and barriers per kernel, or the compiler's errors as
``file:line:col: error: message`` lines (exit 1). ``run`` executes a program with ``main()`` on
the CPU runtime, so CUDA code can be tried on a machine without a GPU.

Exit codes: 0 success; 1 the code did not compile / used an unsupported feature / faulted;
2 no toolchain or bad arguments; ``run`` otherwise exits with the program's own return code
(124 when it ran past ``--timeout``, like ``timeout(1)``).

Heavy modules (the toolchain, the CPU runtime, rich) are imported inside the commands so that
``veriforge --help`` stays fast.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from veriforge.cuda.toolchain import CompileResult

app = typer.Typer(
    help="Compile CUDA with nvcc (per-kernel resources, mapped errors) or run CUDA programs on the CPU.",
    no_args_is_help=True,
)

EXIT_FAILED = 1
EXIT_SETUP = 2
EXIT_TIMEOUT = 124


def _echo_err(text: str) -> None:
    typer.echo(text, err=True)


def _parse_defines(items: list[str]) -> dict[str, str | None]:
    defines: dict[str, str | None] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not name.strip():
            _echo_err(f"error: -D expects NAME or NAME=VALUE, got {item!r}")
            raise typer.Exit(EXIT_SETUP)
        defines[name.strip()] = value if sep else None
    return defines


def _split_flags(items: list[str]) -> list[str]:
    """``--flag '-Xptxas -O3'`` is two nvcc arguments, as a shell would split them."""
    try:
        return [part for item in items for part in shlex.split(item)]
    except ValueError as exc:
        _echo_err(f"error: --flag {items!r}: {exc}")
        raise typer.Exit(EXIT_SETUP) from exc


def _read_source(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        _echo_err(f"error: {file} is not UTF-8 text: {exc}")
        raise typer.Exit(EXIT_SETUP) from exc


def _fmt_bytes(n: int) -> str:
    return str(n) if n < 10_000 else f"{n / 1024:.1f} KiB"


def _resources_table(result: CompileResult, title: str) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column, justify in [
        ("kernel", "left"),
        ("regs", "right"),
        ("smem (static)", "right"),
        ("stack", "right"),
        ("spill st/ld", "right"),
        ("barriers", "right"),
        ("cmem", "right"),
    ]:
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    short_names = [k.short_name for k in result.resources.values()]
    for k in sorted(result.resources.values(), key=lambda k: k.short_name):
        # Overloads share a short name; show their full signature so the rows can be told apart.
        label = k.short_name if short_names.count(k.short_name) == 1 else k.name
        regs = str(k.registers)
        spills = f"{k.spill_store_bytes}/{k.spill_load_bytes}"
        if k.spills:
            spills = f"[bold red]{spills}[/]"
        cmem = ", ".join(f"c[{bank}]={size}" for bank, size in sorted(k.cmem.items())) or "-"
        table.add_row(
            label,
            regs,
            _fmt_bytes(k.smem_static_bytes),
            _fmt_bytes(k.stack_frame_bytes),
            spills,
            str(k.barriers),
            cmem,
        )
    return table


@app.command("compile")
def compile_cmd(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True, help="CUDA source (.cu).")],
    arch: Annotated[str, typer.Option("--arch", "-a", help="Target architecture: sm_75 … sm_120.")] = "sm_90",
    ptx: Annotated[bool, typer.Option("--ptx", help="Produce PTX instead of a cubin.")] = False,
    flag: Annotated[
        list[str] | None,
        typer.Option("--flag", "-f", help="Extra nvcc flag(s), repeatable: --flag=-O3, --flag '-Xptxas -O3'."),
    ] = None,
    define: Annotated[list[str] | None, typer.Option("-D", help="Macro NAME or NAME=VALUE, repeatable.")] = None,
    include: Annotated[
        list[Path] | None, typer.Option("-I", help="Include directory, repeatable (the file's folder is added).")
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the cubin/PTX here.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON report instead of a table.")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Recompile even if the result is cached.")] = False,
) -> None:
    """Compile FILE with nvcc and show per-kernel resources (registers, shared memory, spills, …)."""
    from veriforge.cuda import toolchain
    from veriforge.errors import CudaError, ToolchainNotFoundError

    source = _read_source(file)
    includes = [file.parent.resolve(), *(include or [])]
    try:
        result = toolchain.compile(
            source,
            arch=arch,
            output="ptx" if ptx else "cubin",
            flags=_split_flags(flag or []),
            filename=str(file),
            defines=_parse_defines(define or []),
            include_dirs=includes,
            force=no_cache,
        )
    except ToolchainNotFoundError as exc:
        if as_json:
            typer.echo(json.dumps({"ok": False, "error": str(exc), "kind": "toolchain"}, indent=2))
        else:
            _echo_err(f"error: {exc}")
        raise typer.Exit(EXIT_SETUP) from exc
    except toolchain.NvccCompileError as exc:
        if as_json:
            payload = {"ok": False, "error": str(exc), "kind": "compile", "log": exc.log}
            payload["diagnostics"] = [d.to_dict() for d in exc.diagnostics]
            typer.echo(json.dumps(payload, indent=2))
        else:
            for d in exc.diagnostics:
                _echo_err(str(d))
            if not exc.errors:  # nothing parseable: show the raw log so nothing is hidden
                _echo_err(exc.log.rstrip() or str(exc))
        raise typer.Exit(EXIT_FAILED) from exc
    except (toolchain.InvalidArchError, toolchain.InvalidFlagsError) as exc:
        _echo_err(f"error: {exc}")
        raise typer.Exit(EXIT_SETUP) from exc
    except CudaError as exc:
        _echo_err(f"error: {exc}")
        raise typer.Exit(EXIT_FAILED) from exc

    if out is not None:
        out.write_bytes(result.artifact)
    if as_json:
        typer.echo(json.dumps({"ok": True, "file": str(file), **result.to_dict()}, indent=2))
        return
    from rich.console import Console

    for d in result.warnings:
        _echo_err(str(d))
    title = f"{file} · {result.arch} · {result.output} · nvcc {result.compiler_version}"
    caps = {k.max_registers for k in result.resources.values() if k.max_registers}
    if caps:
        title += f" · register cap {', '.join(map(str, sorted(caps)))}"
    title += " · cached" if result.cached else f" · {result.duration_s:.2f} s"
    console = Console(highlight=False)
    if not console.is_terminal:  # piped or captured: do not squeeze kernel names into 80 columns
        console.width = max(console.width, 160)
    console.print(_resources_table(result, title))
    if result.device_functions:
        names = ", ".join(
            f"{f.name} (stack {f.stack_frame_bytes}, spills {f.spill_store_bytes}/{f.spill_load_bytes})"
            for f in result.device_functions.values()
        )
        console.print(f"non-inlined device functions: {names}", markup=False)
    if not result.resources:
        console.print("no kernels (__global__ functions) in this file", markup=False)
    if out is not None:
        console.print(f"wrote {out}", markup=False)


def _write(data: bytes | str | None, err: bool) -> None:
    if not data:
        return
    typer.echo(data, nl=False, err=err)


@app.command(
    "run",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def run_cmd(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True, help="CUDA program (.cu).")],
    args: Annotated[list[str] | None, typer.Argument(help="Arguments for the program (after --).")] = None,
    stdin: Annotated[Path | None, typer.Option("--stdin", help="File to feed to the program's stdin.")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Wall-clock limit in seconds.")] = 60.0,
    define: Annotated[list[str] | None, typer.Option("-D", help="Macro NAME or NAME=VALUE, repeatable.")] = None,
    sanitize: Annotated[
        bool, typer.Option("--sanitize", help="Check out-of-bounds accesses (slower; reports the source line).")
    ] = False,
) -> None:
    """Run a whole CUDA program (with main()) on the CPU runtime; exits with its return code.

    The program runs in the current directory, like ``./a.out`` would.
    """
    from veriforge.errors import (
        CompileError,
        CudaError,
        KernelTimeoutError,
        ToolchainNotFoundError,
        UnsupportedFeatureError,
    )

    try:
        from veriforge.cuda import cpu
    except ImportError as exc:
        _echo_err(f"error: the CPU CUDA runtime is not available: {exc}")
        raise typer.Exit(EXIT_SETUP) from exc

    source = _read_source(file)
    data = stdin.read_bytes() if stdin is not None else b""
    options = _run_options(
        cpu.run_program,
        filename=re.sub(r"[^\w.+-]", "_", file.name),
        cwd=Path.cwd(),
        defines=_parse_defines(define or []) or None,
        sanitize=sanitize or None,
    )
    try:
        result = cpu.run_program(source, argv=tuple(args or ()), stdin=data, timeout=timeout, **options)
    except UnsupportedFeatureError as exc:
        _echo_err(f"{file}: error: unsupported CUDA feature: {exc}")
        raise typer.Exit(EXIT_FAILED) from exc
    except CompileError as exc:
        diagnostics = list(getattr(exc, "diagnostics", []) or [])
        for d in diagnostics:
            _echo_err(_format_diagnostic(d, file))
        if not diagnostics:
            _echo_err(f"{file}: error: {exc}")
        raise typer.Exit(EXIT_FAILED) from exc
    except KernelTimeoutError as exc:
        _echo_err(f"{file}: error: {exc}")
        raise typer.Exit(EXIT_TIMEOUT) from exc
    except ToolchainNotFoundError as exc:
        _echo_err(f"error: {exc}")
        raise typer.Exit(EXIT_SETUP) from exc
    except CudaError as exc:
        _echo_err(f"{file}: error: {exc}")
        raise typer.Exit(EXIT_FAILED) from exc

    _write(getattr(result, "stdout", b""), err=False)
    _write(getattr(result, "stderr", b""), err=True)
    sys.stdout.flush()
    if getattr(result, "timed_out", False):
        _echo_err(f"{file}: error: the program ran past its {timeout:g} s limit and was killed")
        raise typer.Exit(EXIT_TIMEOUT)
    code = int(getattr(result, "returncode", 0) or 0)
    if code < 0:  # killed by a signal: the shell's convention
        code = 128 - code
    raise typer.Exit(code)


def _run_options(run_program: Any, **wanted: Any) -> dict[str, Any]:
    """The optional keyword arguments this ``run_program`` accepts (None = not asked for).

    ``filename``/``cwd`` are conveniences and silently dropped if unsupported; asking for
    ``defines``/``sanitize`` from a runtime without them is an error, not a silent no-op.
    """
    import inspect

    try:
        accepted = set(inspect.signature(run_program).parameters)
    except (TypeError, ValueError):
        accepted = set()
    options = {}
    for name, value in wanted.items():
        if value is None:
            continue
        if name in accepted:
            options[name] = value
        elif name in ("defines", "sanitize"):
            _echo_err(f"error: this CPU runtime does not support {name}")
            raise typer.Exit(EXIT_SETUP)
    return options


def _format_diagnostic(d: Any, file: Path) -> str:
    """A CPU-runtime diagnostic as ``file:line:col: severity: message``, naming the user's file.

    ``run_program`` compiles a private copy of the source, so a diagnostic's own file name is
    replaced by ``file`` unless it names a header that still exists on disk (the copy is gone).
    """
    if isinstance(d, str):
        return d
    message = getattr(d, "message", None)
    if message is None:
        return str(d)
    own = getattr(d, "file", None)
    where = str(own) if own and Path(str(own)).is_absolute() and Path(str(own)).is_file() else str(file)
    line, column = getattr(d, "line", None), getattr(d, "column", None)
    if line:
        where += f":{line}" + (f":{column}" if column else "")
    return f"{where}: {getattr(d, 'severity', None) or 'error'}: {message}"
