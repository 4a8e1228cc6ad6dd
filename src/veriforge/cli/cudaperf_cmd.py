"""``veriforge cudaperf``: CudaPerf's dataset, rankers, training and refinement (docs/cudaperf.md).

Each area keeps its commands in its own module with a ``register(app)`` function, so importing the
CLI never imports torch/TRL; the heavy imports happen inside the commands.
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(help="CudaPerf: generated CUDA dataset, pairwise rankers, multi-turn RL and refinement.",
                  no_args_is_help=True)

_MODULES = ("veriforge.cli.cudaperf_dataset", "veriforge.cli.cudaperf_rank", "veriforge.cli.cudaperf_train",
            "veriforge.cli.cudaperf_refine")

for _name in _MODULES:
    try:
        _mod = importlib.import_module(_name)
    except ModuleNotFoundError as _exc:
        if _exc.name != _name:
            raise
    else:
        _mod.register(app)
