"""Per-kernel resources from ptxas and the theoretical occupancy of the launch.

Registers decide occupancy more often than anything else, and only the compiler knows them, so
they come from ``ptxas -v`` through :mod:`veriforge.cuda.toolchain` when nvcc is available (the
result is cached by content hash). Without nvcc the resources and the occupancy are reported as
unknown with the reason — a register estimate would be a guess.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from veriforge.errors import VeriforgeError


def template_values(kdef: Any, template_args: dict[str, Any]) -> list[str] | None:
    """The template arguments of the analysed instance, in order (None: not a template, or one
    left open)."""
    if not kdef.template:
        return None
    values = [template_args.get(tp.name, tp.default) for tp in kdef.template]
    return None if any(v is None for v in values) else [str(v) for v in values]


def instantiation(kdef: Any, template_args: dict[str, Any]) -> str | None:
    """An explicit instantiation of a template kernel, so ptxas compiles it (None: not a template).

    A template kernel that the file never instantiates produces no code and no ptxas report; the
    analysis already has the template arguments, so it appends
    ``template __global__ void k<16>(params);`` to the source it hands to nvcc.
    """
    args = template_values(kdef, template_args)
    if args is None:
        return None
    decl = kdef.node.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    plist = decl.child_by_field_name("parameters") if decl is not None else None
    params = plist.text.decode() if plist is not None else "()"
    # the parameter list names the template parameters (``T *g_idata``): outside the template they
    # mean nothing, so they are replaced by the arguments (the CUDA samples' reduce<T>)
    for tp, value in zip(kdef.template, args, strict=True):
        params = re.sub(rf"\b{re.escape(tp.name)}\b", lambda _m, v=value: v, params)
    return f"\ntemplate __global__ void {kdef.name}<{', '.join(args)}>{params};\n"


def ptxas_resources(
    source: str, kernel: str, arch: str, defines: dict[str, Any] | None, use_nvcc: bool, *,
    filename: str = "kernel.cu", include_dirs: Sequence[str | os.PathLike[str]] = (), instance: str | None = None,
) -> tuple[dict[str, Any] | None, str | None]:
    """(resources dict, None) or (None, reason). ``filename`` names the source in nvcc's messages;
    ``instance`` is a template kernel's name with its arguments (``k<32>``)."""
    if not use_nvcc:
        return None, "resources not computed: use_nvcc=False"
    from veriforge.cuda import toolchain
    from veriforge.errors import ToolchainNotFoundError

    try:
        result = toolchain.compile(source, arch=arch, defines=defines, filename=filename, include_dirs=include_dirs)
    except ToolchainNotFoundError as exc:
        return None, f"resources unknown: nvcc not available ({exc})"
    except VeriforgeError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return None, f"resources unknown: nvcc failed to compile the source: {first}"
    try:
        # a template kernel the file instantiates more than once (matrixMul's <16> and <32>):
        # the instance analysed, by its arguments
        res = result.kernel(instance or kernel)
    except KeyError as exc:
        hint = " (a template kernel appears only when the source instantiates it)" if result.resources else ""
        return None, f"resources unknown: ptxas reported no kernel {kernel!r}{hint}: {exc.args[0]}"
    return {
        "registers": res.registers,
        "smem_static": res.smem_static_bytes,
        "stack_frame": res.stack_frame_bytes,
        "spill_stores": res.spill_store_bytes,
        "spill_loads": res.spill_load_bytes,
        "spills": res.spills,
        "barriers": res.barriers,
        "max_registers": res.max_registers,
        "cmem": {str(k): v for k, v in res.cmem.items()},
        "arch": res.arch,
        "source": "ptxas",
        "cached": result.cached,
    }, None


def launch_occupancy(
    arch: str, block_threads: int, resources: dict[str, Any] | None, dynamic_smem: int, barriers: int
) -> tuple[dict[str, Any] | None, str | None]:
    if resources is None:
        return None, "occupancy unknown: registers per thread are unknown without ptxas"
    from veriforge.cuda.occupancy import theoretical

    try:
        occ = theoretical(
            arch,
            block_threads,
            resources["registers"],
            resources["smem_static"],
            dynamic_smem,
            num_block_barriers=max(1, barriers),
        )
    except VeriforgeError as exc:
        return None, f"occupancy unknown: {exc}"
    return occ.to_dict(), None
