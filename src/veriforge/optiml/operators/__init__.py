"""Edit operators: source transformations that need no model, one module each, plus plug-ins.

OptiML-X must improve a kernel with no model configured (the demo, CI, air-gapped machines), so it
carries the edits an engineer tries first, each a plain text transformation of the source. Every
operator is one module of this package that registers a function with :func:`operator`
(:mod:`.registry`); the modules are imported the first time the registry is used, and operators
of other packages come in through the ``veriforge.optiml.operators`` entry-point group
(docs/optiml.md, "Writing an operator"). Tuning operators change constants and annotations:

* **tune** (:mod:`.tune`) — launch configuration and tile sizes (:func:`find_tunables`); constants
  that must stay equal (a block size and the tile or shared array its threads index) move
  together or not at all.
* **unroll** (:mod:`.unroll`) — ``#pragma unroll`` (constant trip count) or ``#pragma unroll 4`` on
  innermost loops.
* **restrict** (:mod:`.restrict`) — ``__restrict__`` on every pointer parameter of a kernel and
  ``const`` on those the kernel never writes (atomics and escaping addresses count as writes).
* **launch_bounds** (:mod:`.launch_bounds`) — ``__launch_bounds__(N)`` with N the block size of the
  kernel's launch.

Restructuring operators change how work maps onto threads; each refuses any kernel outside the
pattern it fully understands:

* **vectorize** (:mod:`.vectorize`) — 1-D element-wise kernels handle 4 (or 2) elements per thread
  with ``float4``/``int4`` accesses behind a run-time alignment check, scalar tail.
* **swap_axes** (:mod:`.swap_axes`), **block_shape** (:mod:`.block_shape`) — exchange the x/y thread
  mapping of a 2-D kernel, or reshape a multi-dimensional block (per-axis constants) to 32/64
  threads along x; their priors follow a static prediction of which accesses become unit-stride.
* **rows** (:mod:`.rows`) — thread-per-row loops become warp-per-row or block-per-row with
  shuffle / shared-memory all-reductions.
* **stage_shared** (:mod:`.stage_shared`) — constant-offset stencils read their input window (and
  small coefficient tables) from a shared-memory tile loaded once per block.
* **aggregate** (:mod:`.aggregate`) — one atomic per thread to a shared address becomes one per
  warp / block / grid-stride thread after a shuffle reduction.
* **privatize_histogram** (:mod:`.privatize_histogram`) — one ``atomicAdd(&hist[bin], v)`` per element
  with a bin count readable from the text becomes a shared-memory sub-histogram per block in a
  grid-stride loop over a capped grid, merged with one global atomic per non-zero bin.
* **coarsen** (:mod:`.coarsen`) — independent 1-D element-wise kernels become a grid-stride loop over a
  capped grid, or ``COARSEN_FACTOR`` elements per thread ``blockDim.x`` apart.
* **fuse** (:mod:`.fuse`) — consecutive element-wise launches over the same index space become one
  kernel, intermediates kept in registers.
* **tile_shared** (:mod:`.tile_shared`) — an inner-product loop over k (naive matmul, NN or NT
  layout, fmaf or mul + add, float or double, any guard and epilogue) becomes TILE x TILE
  shared-memory tiling with coalesced tile loads.
* **register_block** (:mod:`.register_block`) — the same kernels become register blocking: each
  thread computes a TM x TN micro-tile from K slices staged in shared memory.
* **transpose_tile** (:mod:`.transpose_tile`) — a naive 2-D transpose (strided store or strided load,
  element-wise expression, optional ``blockIdx.z`` batch) becomes the padded shared-memory tiled
  transpose with both global accesses coalesced.
* **column_reduce** (:mod:`.column_reduce`) — thread-per-column reductions over rows (sum, Aᵀx, mean,
  max/min) become 2-D blocks whose row groups stride the rows, combined in shared memory.

Modules whose name starts with ``_`` hold helpers shared by a family of operators (``_layout``; ``_grid``:
grid-stride shapes and the grid cap; ``_atomics``: reading an atomic statement; ``_elementwise``: the
element-wise launch rewrite; ``_coords``: the coordinate prologue and guard of ``transpose_tile`` and
``column_reduce``, and the launch helpers of the matmul operators; ``_matmul``: the naive-matmul
recogniser of ``tile_shared`` and ``register_block``);
the kernel readers every operator may use are :mod:`veriforge.optiml.kernel_reader`,
:mod:`veriforge.optiml.source_scan` and :mod:`veriforge.optiml.source_tokens`.

Every edit is a new :class:`~veriforge.core.types.Candidate` with a description and the evidence
that motivated it (diagnosis findings of the parent, the tunable's uses). Nothing here decides
that an edit is correct: the verifier does, and a wrong edit is rejected there.
:class:`BuiltinProposer` offers them to :mod:`veriforge.search` (proposer name ``"builtin"``).
"""

from __future__ import annotations

import importlib
from typing import Any

from veriforge.optiml.operators.registry import (
    ENTRY_POINT_GROUP,
    BuiltinProposer,
    EditFunction,
    EditProposal,
    OperatorSpec,
    OperatorWarning,
    motivating_findings,
    operator,
    operator_names,
    propose_edits,
    refresh,
    registered,
)

__all__ = ["ENTRY_POINT_GROUP", "OPERATORS", "BuiltinProposer", "EditFunction", "EditProposal", "OperatorSpec",
           "OperatorWarning", "Tunable", "apply_tunable", "apply_tunables", "find_tunables", "motivating_findings",
           "operator", "operator_names", "propose_edits", "refresh", "registered"]

_FROM_TUNE = {"Tunable", "apply_tunable", "apply_tunables", "find_tunables"}


def __getattr__(name: str) -> Any:
    """``OPERATORS`` (every registered name, in order) and the tunable helpers of :mod:`.tune`, on
    first use: importing this package imports no operator module."""
    if name == "OPERATORS":
        return operator_names()
    if name in _FROM_TUNE:
        return getattr(importlib.import_module(f"{__name__}.tune"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
