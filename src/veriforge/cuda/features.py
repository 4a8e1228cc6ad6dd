"""One vocabulary of kernel performance features, shared by every source of them.

Static analysis (``veriforge.cuda.analysis``), the cost model, Nsight Compute profiles
(``veriforge.cuda.profile``) and the CPU runtime all report features under these names, so a
reward function or an optimiser can take them from whichever source is available and never needs
to know which produced them. Each feature is a float; ratios are fractions in [0, 1] (never
percentages). A source that cannot determine a feature leaves it out (and says why where it can);
it never writes a guess.

``NCU`` maps a feature to how Nsight Compute computes it from raw metrics (``ncu --csv --page raw``):
either one metric name, or an arithmetic expression over metric names. Percent metrics are
divided by 100 where the feature is a fraction.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Feature:
    name: str
    unit: str
    description: str
    ncu: str | None  # expression over ncu raw metric names, None when ncu has no counterpart

    @property
    def higher_is_better(self) -> bool | None:
        return _DIRECTION.get(self.name)


_F = Feature
FEATURES: dict[str, Feature] = {
    f.name: f
    for f in (
        _F("time_s", "s", "kernel duration", "gpu__time_duration.sum / 1e9"),
        _F(
            "global_load_sectors_per_request",
            "sectors",
            "32-byte sectors touched per warp-level global load request (ideal 4 for fp32, 1 lane = 4 B)",
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum / l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
        ),
        _F(
            "global_store_sectors_per_request",
            "sectors",
            "32-byte sectors touched per warp-level global store request",
            "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum / l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
        ),
        _F(
            "global_load_efficiency",
            "fraction",
            "useful bytes / bytes moved in sectors, for global loads",
            "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct / 100",
        ),
        _F(
            "global_store_efficiency",
            "fraction",
            "useful bytes / bytes moved in sectors, for global stores",
            "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct / 100",
        ),
        _F(
            "shared_load_bank_conflict_ways",
            "ways",
            "shared-memory wavefronts per load request (1 = conflict-free, 32 = fully serialised)",
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum / l1tex__t_requests_pipe_lsu_mem_shared_op_ld.sum",
        ),
        _F(
            "shared_store_bank_conflict_ways",
            "ways",
            "shared-memory wavefronts per store request",
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum / l1tex__t_requests_pipe_lsu_mem_shared_op_st.sum",
        ),
        _F(
            "shared_bank_conflicts",
            "conflicts",
            "shared-memory bank conflicts (loads + stores)",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
            " + l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
        ),
        _F("dram_bytes_read", "B", "bytes read from device memory", "dram__bytes_read.sum"),
        _F("dram_bytes_write", "B", "bytes written to device memory", "dram__bytes_write.sum"),
        _F("dram_bytes", "B", "bytes moved to/from device memory", "dram__bytes_read.sum + dram__bytes_write.sum"),
        _F(
            "dram_throughput",
            "fraction",
            "device-memory throughput as a fraction of peak",
            "dram__throughput.avg.pct_of_peak_sustained_elapsed / 100",
        ),
        _F(
            "flops",
            "FLOP",
            "fp32 floating-point operations (FMA counts 2)",
            "2 * smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
            " + smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"
            " + smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
        ),
        _F("arithmetic_intensity", "FLOP/B", "flops / dram_bytes", None),
        _F(
            "achieved_occupancy",
            "fraction",
            "average active warps / maximum warps per SM",
            "sm__warps_active.avg.pct_of_peak_sustained_active / 100",
        ),
        _F(
            "theoretical_occupancy",
            "fraction",
            "maximum active warps per SM for this launch / hardware maximum",
            "sm__maximum_warps_per_active_cycle_pct / 100",
        ),
        _F("occupancy_limit_registers", "blocks", "blocks/SM by registers", "launch__occupancy_limit_registers"),
        _F("occupancy_limit_shared_mem", "blocks", "blocks/SM by shared memory", "launch__occupancy_limit_shared_mem"),
        _F("occupancy_limit_warps", "blocks", "blocks/SM allowed by warps", "launch__occupancy_limit_warps"),
        _F("occupancy_limit_blocks", "blocks", "blocks/SM by block slots", "launch__occupancy_limit_blocks"),
        _F("registers_per_thread", "registers", "registers per thread", "launch__registers_per_thread"),
        _F("shared_mem_static_bytes", "B", "static shared memory per block", "launch__shared_mem_per_block_static"),
        _F("shared_mem_dynamic_bytes", "B", "dynamic shared memory per block", "launch__shared_mem_per_block_dynamic"),
        _F(
            "warp_execution_efficiency",
            "fraction",
            "average active threads per executed instruction / 32 (1 = no divergence)",
            "smsp__thread_inst_executed_per_inst_executed.ratio / 32",
        ),
        _F(
            "barrier_stall_fraction",
            "fraction",
            "fraction of warp issue slots stalled on barriers",
            "smsp__warp_issue_stalled_barrier_per_warp_active.pct / 100",
        ),
        _F("barriers", "count", "block-level barriers (__syncthreads) in the kernel's code", None),
        _F("divergent_branches", "count", "branches whose condition differs between lanes of a warp", None),
        _F("spill_bytes", "B", "register spill stores + loads per thread (ptxas)", None),
    )
}

_DIRECTION: dict[str, bool] = {
    "time_s": False,
    "global_load_sectors_per_request": False,
    "global_store_sectors_per_request": False,
    "global_load_efficiency": True,
    "global_store_efficiency": True,
    "shared_load_bank_conflict_ways": False,
    "shared_store_bank_conflict_ways": False,
    "shared_bank_conflicts": False,
    "dram_bytes": False,
    "achieved_occupancy": True,
    "theoretical_occupancy": True,
    "warp_execution_efficiency": True,
    "barrier_stall_fraction": False,
    "divergent_branches": False,
    "spill_bytes": False,
}


def ncu_metrics() -> list[str]:
    """Every raw ncu metric name needed to compute the features (for ``ncu --metrics``)."""
    import re

    names: set[str] = set()
    for f in FEATURES.values():
        if f.ncu:
            names.update(re.findall(r"[a-z0-9_]+__[A-Za-z0-9_.]+", f.ncu))
    return sorted(names)
