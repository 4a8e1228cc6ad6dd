"""``veriforge cuda``: compile a ``.cu`` file with nvcc, or run a whole CUDA program on the CPU.

``compile`` is the quick answer to "what does ptxas think of my kernel": registers, shared
memory, stack, spills and barriers per kernel, or the compiler's errors as
``file:line:col: error: message`` lines (exit 1). ``run`` executes a program with ``main()`` on
the CPU runtime, so CUDA code can be tried on a machine without a GPU.

Exit codes: 0 success; 1 the code did not compile / used an unsupported feature / faulted;
2 no toolchain or bad arguments; ``run`` otherwise exits with the program's own return code
(124 when it ran past ``--timeout``, like ``timeout(1)``; 3 when ``--race-check`` found a race).

Heavy modules (the toolchain, the CPU runtime, rich) are imported inside the commands so that
``veriforge --help`` stays fast.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperCommand

from veriforge.core import defaults

if TYPE_CHECKING:
    from veriforge.cuda.toolchain import CompileResult

app = typer.Typer(
    help="Compile CUDA with nvcc (per-kernel resources, mapped errors) or run CUDA programs on the CPU.",
    no_args_is_help=True,
)

EXIT_FAILED = 1
EXIT_SETUP = 2
EXIT_TIMEOUT = 124
EXIT_RACE = 3


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
    arch: Annotated[str | None, typer.Option("--arch", "-a", help="Target architecture: sm_75 … sm_120. Default: "
                                             f"setting cuda.arch, {defaults.CUDA_ARCH}.")] = None,
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
    from veriforge.core.config import active_settings

    arch = arch or active_settings().cuda.arch
    source = _read_source(file)
    includes = [file.parent.resolve(), *(include or [])]
    lock = None
    if out is not None:
        from veriforge.cli.preflight import OutputLocationError, prepare_out

        try:  # an unusable --out fails now, with one line, not after the compile
            lock = prepare_out(out, command="veriforge cuda compile", is_file=True)
        except OutputLocationError as exc:
            _echo_err(f"error: {exc}")
            raise typer.Exit(EXIT_SETUP) from exc
    try:
        _compile_report(file, source, arch, ptx, flag, define, includes, out, as_json, no_cache)
    finally:
        if lock is not None:
            lock.release()


def _compile_report(
    file: Path,
    source: str,
    arch: str,
    ptx: bool,
    flag: list[str] | None,
    define: list[str] | None,
    includes: list[Path],
    out: Path | None,
    as_json: bool,
    no_cache: bool,
) -> None:
    """The body of ``cuda compile`` once FILE is read and ``--out`` is checked and locked."""
    from veriforge.cuda import toolchain
    from veriforge.errors import CudaError, ToolchainNotFoundError

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

    if out is not None:  # written whole or not at all: a reader never sees half a cubin
        tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        tmp.write_bytes(result.artifact)
        tmp.replace(out)
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


class _RunCommand(TyperCommand):
    """``run``: everything after ``--`` is the program's own arguments (kept apart before click
    parses, so a program argument that looks like a source file or an option stays the program's)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if "--" in args:
            cut = args.index("--")
            ctx.meta[_PROGRAM_ARGS] = args[cut + 1 :]
            args = args[:cut]
        return super().parse_args(ctx, args)


_PROGRAM_ARGS = "veriforge.cuda.run.program_args"
_SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c++", ".c", ".C")


@app.command(
    "run",
    cls=_RunCommand,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def run_cmd(
    ctx: typer.Context,
    inputs: Annotated[
        list[str] | None,
        typer.Argument(help="CUDA program source(s) (.cu/.cpp/.c, linked together), then the program's arguments "
                       "(after --).", show_default=False),
    ] = None,
    stdin: Annotated[Path | None, typer.Option("--stdin", help="File to feed to the program's stdin.")] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", help="Wall-clock limit in seconds (default: 60, or the settings').")
    ] = None,
    define: Annotated[list[str] | None, typer.Option("-D", help="Macro NAME or NAME=VALUE, repeatable.")] = None,
    include: Annotated[
        list[Path] | None, typer.Option("-I", help="Include directory, repeatable (the sources' folders are searched).")
    ] = None,
    flag: Annotated[
        list[str] | None,
        typer.Option("--flag", "-f", help="Extra host-compiler flag, repeatable: -std=c++20, -O3, -ffast-math."),
    ] = None,
    project: Annotated[
        Path | None,
        typer.Option("--project", help="A compile_commands.json: its sources, -I/-D/-std (nvcc-only flags ignored)."),
    ] = None,
    sanitize: Annotated[
        bool, typer.Option("--sanitize", help="Check out-of-bounds accesses (slower; reports the source line).")
    ] = False,
    race_check: Annotated[
        bool,
        typer.Option("--race-check", help="Also run in reverse thread order and with interleaved threads; report "
                     "the first launch whose memory depends on the order (exit 3 on a race)."),
    ] = False,
    data_paths: Annotated[
        list[str] | None,
        typer.Option("--data", help="A file or folder outside the current directory the program reads "
                     "(../../data), lent read-only; repeatable. Arguments naming existing paths are lent too."),
    ] = None,
) -> None:
    """Run a whole CUDA program (with main()) on the CPU runtime; exits with its return code.

    Several sources are separate translation units linked together, as with nvcc a.cu b.cpp.

    Headers next to the sources and under -I are found. Program arguments go after --.

    The program runs in the current directory, like ./a.out would.
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

    files, args = _split_inputs(list(inputs or []), ctx.meta.get(_PROGRAM_ARGS), project is not None)
    data = stdin.read_bytes() if stdin is not None else b""
    defines = _parse_defines(define or [])
    project_class = getattr(cpu, "Project", None)
    proj = None
    if project_class is not None:
        proj = _make_project(project_class, files, include or [], defines, _split_flags(flag or []), project)
        label = Path(proj.files[0])
        with contextlib.suppress(ValueError):
            label = label.relative_to(Path.cwd())
        for note in getattr(proj, "notes", []):
            _echo_err(f"note: {note}")
        source: Any = proj
        options = _run_options(cpu.run_program, cwd=Path.cwd(), sanitize=sanitize or None,
                               race_check=race_check or None, data=data_paths or None)
    else:  # a runtime without projects: one file, macros only
        if len(files) != 1 or include or flag or project is not None:
            _echo_err("error: this CPU runtime runs single files only (no -I, --flag, --project or several sources)")
            raise typer.Exit(EXIT_SETUP)
        label = files[0]
        source = _read_source(files[0])
        options = _run_options(
            cpu.run_program,
            filename=re.sub(r"[^\w.+-]", "_", files[0].name),
            cwd=Path.cwd(),
            defines=defines or None,
            sanitize=sanitize or None,
            race_check=race_check or None,
            data=data_paths or None,
        )
    if timeout is not None:
        if not timeout > 0:
            _echo_err(f"error: --timeout must be positive, got {timeout:g}")
            raise typer.Exit(EXIT_SETUP)
        options["timeout"] = timeout
    try:
        result = cpu.run_program(source, argv=tuple(args), stdin=data, **options)
    except UnsupportedFeatureError as exc:
        _echo_err(f"{label}: error: unsupported CUDA feature: {exc}")
        raise typer.Exit(EXIT_FAILED) from exc
    except CompileError as exc:
        diagnostics = list(getattr(exc, "diagnostics", []) or [])
        for d in diagnostics:
            _echo_err(_format_diagnostic(d, label, as_given=proj is not None))
        if not diagnostics:
            _echo_err(f"{label}: error: {exc}")
        raise typer.Exit(EXIT_FAILED) from exc
    except KernelTimeoutError as exc:
        _echo_err(f"{label}: error: {exc}")
        raise typer.Exit(EXIT_TIMEOUT) from exc
    except ToolchainNotFoundError as exc:
        _echo_err(f"error: {exc}")
        raise typer.Exit(EXIT_SETUP) from exc
    except ValueError as exc:
        _echo_err(f"error: {exc}")
        raise typer.Exit(EXIT_SETUP) from exc
    except CudaError as exc:
        _echo_err(f"{label}: error: {exc}")
        raise typer.Exit(EXIT_FAILED) from exc

    _write(getattr(result, "stdout", b""), err=False)
    _write(getattr(result, "stderr", b""), err=True)
    sys.stdout.flush()
    if getattr(result, "timed_out", False):
        limit = timeout if timeout is not None else getattr(proj, "timeout", None) or _default_timeout(cpu)
        _echo_err(f"{label}: error: the program ran past its {limit:g} s limit and was killed "
                  "(its output up to then is shown above)")
        raise typer.Exit(EXIT_TIMEOUT)
    race = getattr(result, "race", None)
    if race is not None:
        _echo_err(f"{label}: {race}")
        if race.found:
            raise typer.Exit(EXIT_RACE)
    code = int(getattr(result, "returncode", 0) or 0)
    if code < 0:  # killed by a signal: the shell's convention
        code = 128 - code
    raise typer.Exit(code)


def _default_timeout(cpu: Any) -> float:
    fn = getattr(getattr(cpu, "program", None), "default_timeout", None)
    return float(fn()) if callable(fn) else 60.0


def _split_inputs(inputs: list[str], after_dashes: list[str] | None,
                  have_project: bool) -> tuple[list[Path], list[str]]:
    """Sources and program arguments. With ``--`` the sources are everything before it; without,
    the leading existing C/C++/CUDA files (as ``run prog.cu 5`` always meant) - at least one,
    unless ``--project`` names them."""
    if after_dashes is not None:
        files, args = inputs, list(after_dashes)
    else:
        k = 0
        def is_source(k: int) -> bool:
            first = k == 0 and not have_project
            return (first or inputs[k].endswith(_SOURCE_SUFFIXES)) and not inputs[k].startswith("-") \
                and Path(inputs[k]).is_file()

        while k < len(inputs) and is_source(k):
            k += 1
        files, args = inputs[:k], inputs[k:]
    for f in files:
        if f.startswith("-"):
            _echo_err(f"error: unknown option {f!r} (program arguments go after --)")
            raise typer.Exit(EXIT_SETUP)
        if not Path(f).is_file():
            _echo_err(f"error: source file {f!r} does not exist")
            raise typer.Exit(EXIT_SETUP)
    if not files and not have_project:
        if inputs:
            _echo_err(f"error: source file {inputs[0]!r} does not exist")
        else:
            _echo_err("error: give the program's source file(s), or --project compile_commands.json")
        raise typer.Exit(EXIT_SETUP)
    return [Path(f) for f in files], args


def _make_project(project_class: Any, files: list[Path], includes: list[Path], defines: dict[str, str | None],
                  flags: list[str], compile_commands: Path | None) -> Any:
    """The Project to run: from the command line, or from a compile_commands.json (whose entries the
    command line's files select and its -I/-D/--flag extend)."""
    try:
        if compile_commands is not None:
            base = project_class.from_compile_commands(compile_commands, files=[str(f) for f in files] or None)
            return project_class(files=base.files, include_dirs=[*base.include_dirs, *includes],
                                 defines={**base.defines, **defines}, flags=[*base.flags, *flags], root=Path.cwd(),
                                 system_include_dirs=base.system_include_dirs, notes=base.notes)
        sources_dirs = list(dict.fromkeys(f.resolve().parent for f in files))
        return project_class(files=files, include_dirs=[*includes, *sources_dirs], defines=defines, flags=flags,
                             root=Path.cwd())
    except (ValueError, OSError) as exc:
        _echo_err(f"error: {exc}")
        raise typer.Exit(EXIT_SETUP) from exc


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


def _format_diagnostic(d: Any, file: Path, as_given: bool = False) -> str:
    """A CPU-runtime diagnostic as ``file:line:col: severity: message``, naming the user's file.

    ``run_program`` compiles a private copy of the source, so a diagnostic's own file name is
    replaced by ``file`` unless it names a header that still exists on disk (the copy is gone).
    A project's diagnostics (``as_given``) already name the user's files (relative to the current
    directory).
    """
    if isinstance(d, str):
        return d
    message = getattr(d, "message", None)
    if message is None:
        return str(d)
    own = getattr(d, "file", None)
    if as_given and own:
        where = str(own)
    else:
        where = str(own) if own and Path(str(own)).is_absolute() and Path(str(own)).is_file() else str(file)
    line, column = getattr(d, "line", None), getattr(d, "column", None)
    if line:
        where += f":{line}" + (f":{column}" if column else "")
    return f"{where}: {getattr(d, 'severity', None) or 'error'}: {message}"
