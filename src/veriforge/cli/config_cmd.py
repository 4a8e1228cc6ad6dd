"""``veriforge config``: show the effective settings and where each layer comes from."""

from __future__ import annotations

import json
from typing import Annotated

import typer

app = typer.Typer(help="Inspect the effective configuration.", no_args_is_help=True)


@app.command("show")
def show(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of TOML.")] = False,
) -> None:
    """Print the settings after merging defaults < TOML file < environment < --set flags."""
    from veriforge.cli.main import state

    settings = state(ctx).settings()
    if as_json:
        typer.echo(json.dumps(settings.model_dump(mode="json"), indent=2))
    else:
        typer.echo(settings.dump_toml())
