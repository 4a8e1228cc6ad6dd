"""The ``veriforge`` command.

One entry point for every system. Sub-command groups live in their own modules and are imported
when the app is built, but each module keeps its heavy imports (torch, numpy-heavy analysis,
model clients) inside the command functions so that ``veriforge --help`` stays fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from veriforge import __version__
from veriforge.errors import VeriforgeError


class _RootGroup(TyperGroup):
    """The root group; remembers whether the rest of the command line asks for ``--help`` (click
    clears the remaining arguments before the root callback runs), so help never loads settings."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        rest = super().parse_args(ctx, args)
        ctx.meta["veriforge.help"] = _asks_for_help([*getattr(ctx, "_protected_args", []), *rest])
        return rest


app = typer.Typer(
    cls=_RootGroup,
    name="veriforge",
    help="Verified program generation: propose programs, then compile, run, check and measure them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _hide_flag_placeholders() -> None:
    """Show no value placeholder for on/off flags in ``--help``.

    typer 0.29 prints the parameter's type next to every option, so ``--json`` reads ``--json
    <bool>`` as if it took a value; a flag takes none. Options with a value keep theirs.
    """
    from typer.core import TyperOption

    if getattr(TyperOption.display_type_rich, "_veriforge", False):
        return
    original = TyperOption.display_type_rich

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        if self.is_flag and not self.count and self.metavar is None:
            return None
        return original(self, ctx)

    display_type_rich._veriforge = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_hide_flag_placeholders()


class CliState:
    """Global options shared by every command: the config file and ``--set`` overrides.

    The root callback builds the settings once per invocation (so a bad ``--set`` or config file
    fails every command the same way, before any work) and activates them for the command's
    duration (:func:`veriforge.core.config.activate`), so library code deep inside a command
    (the run store's default path, model clients, the CPU runtime's time limit) sees them too.
    """

    def __init__(self, config_file: Path | None, overrides: dict[str, Any]) -> None:
        self.config_file = config_file
        self.overrides = overrides
        self._settings: Any = None

    def settings(self) -> Any:
        """The :class:`~veriforge.core.config.Settings` of this invocation (loaded on first use)."""
        if self._settings is None:
            from veriforge.core.config import load_settings

            self._settings = load_settings(self.config_file, self.overrides)
        return self._settings


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """Turn ``["llm.model=x", "sandbox.timeout_s=5"]`` into a nested dict.

    Values stay strings; the typed settings tree validates and converts them, so a bad value is
    reported with its field path instead of silently kept.
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"expected SECTION.KEY=VALUE, got {item!r}", param_hint="--set")
        node = out
        parts = [p.strip() for p in key.split(".")]
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise typer.BadParameter(f"conflicting keys in --set {item!r}", param_hint="--set")
        node[parts[-1]] = value
    return out


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"veriforge {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="TOML settings file (default: $VERIFORGE_CONFIG or ./veriforge.toml)."),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", "-s", help="Override one setting, e.g. --set llm.model=vllm:Qwen/Qwen2.5-7B."),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version_callback, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    ctx.obj = CliState(config, parse_overrides(set_ or []))
    if ctx.resilient_parsing or ctx.meta.get("veriforge.help", False):
        return  # help never depends on (or fails on) the settings
    from veriforge.core.config import activate

    settings = ctx.obj.settings()
    previous = activate(settings)
    ctx.call_on_close(lambda: activate(previous))
    if settings.sandbox.strict:
        # Every sandboxed run of this command (any depth, child processes included) refuses to
        # run without full isolation; the sandbox reads this variable cheaply.
        import os

        os.environ["VERIFORGE_SANDBOX__STRICT"] = "1"


def _asks_for_help(args: list[str]) -> bool:
    """Whether the rest of the command line asks for ``--help`` (before any ``--``)."""
    for arg in args:
        if arg == "--":
            return False
        if arg == "--help":
            return True
    return False


def state(ctx: typer.Context) -> CliState:
    """The :class:`CliState` of the running command (a default one when called programmatically)."""
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState(None, {})
    return root.obj


def settings_of(ctx: typer.Context) -> Any:
    """The settings every command receives: defaults < TOML file < environment < ``--set``."""
    return state(ctx).settings()


def _register() -> None:
    from veriforge.cli import (
        config_cmd,
        cuda,
        cuda_analyze,
        cudaperf_cmd,
        d3gym_cmd,
        doctor,
        eval_cmd,
        generate_cmd,
        moa_cmd,
        optimize_cmd,
        tasks_cmd,
    )

    app.command("optimize")(optimize_cmd.optimize_cmd)
    app.command("generate")(generate_cmd.generate_cmd)
    app.command("doctor")(doctor.doctor)
    app.add_typer(config_cmd.app, name="config")
    cuda.app.command("analyze")(cuda_analyze.analyze_cmd)
    app.add_typer(cuda.app, name="cuda")
    app.add_typer(tasks_cmd.app, name="tasks")
    app.command("eval")(eval_cmd.eval_cmd)
    app.add_typer(moa_cmd.app, name="moa")
    app.add_typer(d3gym_cmd.app, name="d3gym")
    app.add_typer(cudaperf_cmd.app, name="cudaperf")


_register()


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns the exit code.

    click handles usage errors and ``--help`` itself (standalone mode) and reports them through
    ``SystemExit``; errors veriforge raises on purpose become one clear line and exit code 2.
    """
    try:
        app(args=argv, standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        typer.echo(str(code), err=True)
        return 1
    except VeriforgeError as exc:
        from rich.console import Console
        from rich.markup import escape

        Console(stderr=True).print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
