"""Writes the ncu CSV fixtures of this folder (run: python generate.py).

The tables reproduce the exact layout of ``ncu --csv --page raw`` (header row, units row, one row
per launch, every cell quoted, thousands separators, ncu's display units) and of ``--page
details`` (one row per metric). The values are NOT measurements: they are derived by hand from
each kernel's launch shape (sectors and requests counted per warp, bytes from problem sizes) and
plausible H100/A100 timings, so the parser is tested on realistic, internally consistent text.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

HERE = Path(__file__).parent
PROPS = [
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
]

# metric -> (display unit, divisor from base unit to that display unit, decimals)
AUTO_UNITS = {
    "dram__bytes_read.sum": ("Mbyte", 1e6, 2),
    "dram__bytes_write.sum": ("Mbyte", 1e6, 2),
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": ("%", 1, 2),
    "gpu__time_duration.sum": ("usecond", 1e3, 2),
    "launch__occupancy_limit_blocks": ("block", 1, 0),
    "launch__occupancy_limit_registers": ("block", 1, 0),
    "launch__occupancy_limit_shared_mem": ("block", 1, 0),
    "launch__occupancy_limit_warps": ("block", 1, 0),
    "launch__registers_per_thread": ("register/thread", 1, 0),
    "launch__shared_mem_per_block_dynamic": ("byte/block", 1, 0),
    "launch__shared_mem_per_block_static": ("Kbyte/block", 1e3, 2),
    "sm__maximum_warps_per_active_cycle_pct": ("%", 1, 2),
    "sm__warps_active.avg.pct_of_peak_sustained_active": ("%", 1, 2),
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct": ("%", 1, 2),
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct": ("%", 1, 2),
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": ("inst", 1, 0),
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": ("inst", 1, 0),
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": ("inst", 1, 0),
    "smsp__thread_inst_executed_per_inst_executed.ratio": ("", 1, 2),
    "smsp__warp_issue_stalled_barrier_per_warp_active.pct": ("%", 1, 2),
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": ("", 1, 0),
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": ("", 1, 0),
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": ("", 1, 0),
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": ("", 1, 0),
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": ("", 1, 0),
    "l1tex__t_requests_pipe_lsu_mem_shared_op_ld.sum": ("", 1, 0),
    "l1tex__t_requests_pipe_lsu_mem_shared_op_st.sum": ("", 1, 0),
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": ("sector", 1, 0),
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": ("sector", 1, 0),
}
# l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum is deliberately not collected in the H100 file.


def _fmt(value, decimals):
    if value is None:
        return "n/a"
    if decimals == 0:
        return f"{round(value):,}"
    return f"{value:,.{decimals}f}"


def _common(mem_ld_sectors, mem_ld_req, mem_st_sectors, mem_st_req, ld_pct, st_pct):
    return {
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": mem_ld_sectors,
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": mem_ld_req,
        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": mem_st_sectors,
        "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": mem_st_req,
        "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct": ld_pct,
        "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct": st_pct,
    }


H100_LAUNCHES = [
    (
        {
            "Kernel Name": "copy_float4(const float4 *, float4 *, int)",
            "Block Size": "(256, 1, 1)",
            "Grid Size": "(16384, 1, 1)",
        },
        {
            **_common(2_097_152, 131_072, 2_097_152, 131_072, 100, 100),
            "gpu__time_duration.sum": 44_864,
            "dram__bytes_read.sum": 67_108_864,
            "dram__bytes_write.sum": 67_110_912,
            "dram__throughput.avg.pct_of_peak_sustained_elapsed": 89.31,
            "launch__registers_per_thread": 16,
            "launch__occupancy_limit_blocks": 32,
            "launch__occupancy_limit_registers": 16,
            "launch__occupancy_limit_shared_mem": 32,
            "launch__occupancy_limit_warps": 8,
            "launch__shared_mem_per_block_static": 0,
            "launch__shared_mem_per_block_dynamic": 0,
            "sm__maximum_warps_per_active_cycle_pct": 100,
            "sm__warps_active.avg.pct_of_peak_sustained_active": 88.62,
            "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": 0,
            "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 0,
            "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": 0,
            "smsp__thread_inst_executed_per_inst_executed.ratio": 32,
            "smsp__warp_issue_stalled_barrier_per_warp_active.pct": 0,
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 0,
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 0,
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 0,
            "l1tex__t_requests_pipe_lsu_mem_shared_op_ld.sum": 0,
            "l1tex__t_requests_pipe_lsu_mem_shared_op_st.sum": 0,
        },
    ),
    (
        {
            "Kernel Name": "void transpose_naive<float>(float *, const float *, int)",
            "Block Size": "(32, 8, 1)",
            "Grid Size": "(256, 1024, 1)",
        },
        {
            **_common(8_388_608, 2_097_152, 67_108_864, 2_097_152, 100, 12.5),
            "gpu__time_duration.sum": 812_448,
            "dram__bytes_read.sum": 268_435_456,
            "dram__bytes_write.sum": 270_218_240,
            "dram__throughput.avg.pct_of_peak_sustained_elapsed": 19.73,
            "launch__registers_per_thread": 16,
            "launch__occupancy_limit_blocks": 32,
            "launch__occupancy_limit_registers": 16,
            "launch__occupancy_limit_shared_mem": 32,
            "launch__occupancy_limit_warps": 8,
            "launch__shared_mem_per_block_static": 0,
            "launch__shared_mem_per_block_dynamic": 0,
            "sm__maximum_warps_per_active_cycle_pct": 100,
            "sm__warps_active.avg.pct_of_peak_sustained_active": 91.05,
            "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": 0,
            "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 0,
            "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": 0,
            "smsp__thread_inst_executed_per_inst_executed.ratio": 32,
            "smsp__warp_issue_stalled_barrier_per_warp_active.pct": None,
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 0,
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 0,
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 0,
            "l1tex__t_requests_pipe_lsu_mem_shared_op_ld.sum": 0,
            "l1tex__t_requests_pipe_lsu_mem_shared_op_st.sum": 0,
        },
    ),
    (
        {
            "Kernel Name": "void transpose_shared<float, 32, 33>(float *, const float *, int)",
            "Block Size": "(32, 8, 1)",
            "Grid Size": "(256, 256, 1)",
        },
        {
            **_common(8_388_608, 2_097_152, 8_388_608, 2_097_152, 100, 100),
            "gpu__time_duration.sum": 190_304,
            "dram__bytes_read.sum": 268_435_456,
            "dram__bytes_write.sum": 268_443_648,
            "dram__throughput.avg.pct_of_peak_sustained_elapsed": 84.22,
            "launch__registers_per_thread": 18,
            "launch__occupancy_limit_blocks": 32,
            "launch__occupancy_limit_registers": 8,
            "launch__occupancy_limit_shared_mem": 44,
            "launch__occupancy_limit_warps": 8,
            "launch__shared_mem_per_block_static": 4224,
            "launch__shared_mem_per_block_dynamic": 0,
            "sm__maximum_warps_per_active_cycle_pct": 100,
            "sm__warps_active.avg.pct_of_peak_sustained_active": 86.40,
            "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": 0,
            "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 0,
            "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": 0,
            "smsp__thread_inst_executed_per_inst_executed.ratio": 32,
            "smsp__warp_issue_stalled_barrier_per_warp_active.pct": 9.87,
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 0,
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 0,
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 2_097_152,
            "l1tex__t_requests_pipe_lsu_mem_shared_op_ld.sum": 2_097_152,
            "l1tex__t_requests_pipe_lsu_mem_shared_op_st.sum": 2_097_152,
        },
    ),
    (
        {
            "Kernel Name": "void matmul_tiled<16>(const float *, const float *, float *, int)",
            "Block Size": "(16, 16, 1)",
            "Grid Size": "(64, 64, 1)",
        },
        {
            **_common(8_388_608, 4_194_304, 65_536, 32_768, 100, 100),
            "gpu__time_duration.sum": 298_720,
            "dram__bytes_read.sum": 8_421_376,
            "dram__bytes_write.sum": 4_194_304,
            "dram__throughput.avg.pct_of_peak_sustained_elapsed": 1.27,
            "launch__registers_per_thread": 32,
            "launch__occupancy_limit_blocks": 32,
            "launch__occupancy_limit_registers": 8,
            "launch__occupancy_limit_shared_mem": 72,
            "launch__occupancy_limit_warps": 8,
            "launch__shared_mem_per_block_static": 2048,
            "launch__shared_mem_per_block_dynamic": 0,
            "sm__maximum_warps_per_active_cycle_pct": 100,
            "sm__warps_active.avg.pct_of_peak_sustained_active": 93.14,
            "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": 0,
            "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 1_073_741_824,
            "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": 0,
            "smsp__thread_inst_executed_per_inst_executed.ratio": 32,
            "smsp__warp_issue_stalled_barrier_per_warp_active.pct": 18.41,
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 0,
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 0,
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 67_108_864,
            "l1tex__t_requests_pipe_lsu_mem_shared_op_ld.sum": 67_108_864,
            "l1tex__t_requests_pipe_lsu_mem_shared_op_st.sum": 4_194_304,
        },
    ),
]


def _rows(props_rows, metrics, units, cc="9.0"):
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(PROPS + metrics)
    w.writerow([""] * len(PROPS) + [units[m][0] for m in metrics])
    for i, (props, values) in enumerate(props_rows):
        base = {
            "ID": str(i),
            "Process ID": "48213",
            "Process Name": "bench",
            "Host Name": "127.0.0.1",
            "Context": "1",
            "Stream": "7",
            "Device": "0",
            "CC": cc,
            **props,
        }
        w.writerow(
            [base[p] for p in PROPS]
            + [_fmt(None if values[m] is None else values[m] / units[m][1], units[m][2]) for m in metrics]
        )
    return out.getvalue()


def h100() -> str:
    metrics = sorted(AUTO_UNITS)
    names = ["copy_float4", "transpose_naive", "transpose_shared", "matmul_tiled"]
    pre = "".join(
        f'==PROF== Profiling "{n}" - {i}: 0%....50%....100% - 38 passes\n' for i, n in enumerate(names)
    )
    return (
        "==PROF== Connected to process 48213 (/tmp/vf/bench)\n"
        + pre
        + "bench: all kernels verified, max error 0\n==PROF== Disconnected from process 48213\n"
        + _rows(H100_LAUNCHES, metrics, AUTO_UNITS)
    )


BASE_UNITS = {
    "gpu__time_duration.sum": ("nsecond", 1, 0),
    "dram__bytes_read.sum": ("byte", 1, 0),
    "dram__bytes_write.sum": ("byte", 1, 0),
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": ("inst", 1, 0),
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": ("inst", 1, 0),
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": ("inst", 1, 0),
    "smsp__thread_inst_executed_per_inst_executed.ratio": ("", 1, 2),
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": ("", 1, 0),
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": ("", 1, 0),
    "l1tex__t_requests_pipe_lsu_mem_shared_op_ld.sum": ("", 1, 0),
    "l1tex__t_requests_pipe_lsu_mem_shared_op_st.sum": ("", 1, 0),
    "launch__shared_mem_per_block_static": ("byte/block", 1, 0),
}

A100_LAUNCHES = [
    (
        {
            "Kernel Name": "reduce_divergent(const float *, float *, int)",
            "Block Size": "(256, 1, 1)",
            "Grid Size": "(65536, 1, 1)",
        },
        {
            "gpu__time_duration.sum": 195_436,
            "dram__bytes_read.sum": 67_108_864,
            "dram__bytes_write.sum": 262_144,
            "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": 16_711_680,
            "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 0,
            "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": 0,
            "smsp__thread_inst_executed_per_inst_executed.ratio": 13.61,
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 10_485_760,
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": 5_767_168,
            "l1tex__t_requests_pipe_lsu_mem_shared_op_ld.sum": 8_388_608,
            "l1tex__t_requests_pipe_lsu_mem_shared_op_st.sum": 4_718_592,
            "launch__shared_mem_per_block_static": 1024,
        },
    ),
    (
        {
            "Kernel Name": "reduce_sequential(const float *, float *, int)",
            "Block Size": "(256, 1, 1)",
            "Grid Size": "(65536, 1, 1)",
        },
        {
            "gpu__time_duration.sum": 87_210,
            "dram__bytes_read.sum": 67_108_864,
            "dram__bytes_write.sum": 262_144,
            "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": 16_711_680,
            "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 0,
            "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": 0,
            "smsp__thread_inst_executed_per_inst_executed.ratio": 27.93,
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 1_572_864,
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": 1_310_720,
            "l1tex__t_requests_pipe_lsu_mem_shared_op_ld.sum": 1_572_864,
            "l1tex__t_requests_pipe_lsu_mem_shared_op_st.sum": 1_310_720,
            "launch__shared_mem_per_block_static": 1024,
        },
    ),
    (
        {
            "Kernel Name": "fill(float *, float, int)",
            "Block Size": "(128, 1, 1)",
            "Grid Size": "(2048, 1, 1)",
        },
        {
            "gpu__time_duration.sum": 2_912,
            "dram__bytes_read.sum": 0,
            "dram__bytes_write.sum": 1_048_576,
            "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": 0,
            "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 0,
            "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": 0,
            "smsp__thread_inst_executed_per_inst_executed.ratio": 32,
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 0,
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": 0,
            "l1tex__t_requests_pipe_lsu_mem_shared_op_ld.sum": 0,
            "l1tex__t_requests_pipe_lsu_mem_shared_op_st.sum": 0,
            "launch__shared_mem_per_block_static": 0,
        },
    ),
]


def a100() -> str:
    return _rows(A100_LAUNCHES, list(BASE_UNITS), BASE_UNITS, cc="8.0")


def details() -> str:
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(
        [
            "ID",
            "Process ID",
            "Process Name",
            "Host Name",
            "Kernel Name",
            "Context",
            "Stream",
            "Block Size",
            "Grid Size",
            "Device",
            "CC",
            "Section Name",
            "Metric Name",
            "Metric Unit",
            "Metric Value",
        ]
    )
    rows = [
        ("gpu__time_duration.sum", "msecond", "1.21"),
        ("dram__bytes_read.sum", "Gbyte", "1.07"),
        ("dram__bytes_write.sum", "Kbyte", "524.29"),
        ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sector", "268,435,456"),
        ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "", "8,388,608"),
        ("sm__warps_active.avg.pct_of_peak_sustained_active", "%", "47.90"),
        ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "%", "n/a"),
    ]
    for name, unit, value in rows:
        w.writerow(
            [
                "0",
                "5120",
                "gather",
                "127.0.0.1",
                "gather_strided(const float *, float *, int, int)",
                "1",
                "7",
                "(128, 1, 1)",
                "(8192, 1, 1)",
                "0",
                "9.0",
                "Command line profiler metrics",
                name,
                unit,
                value,
            ]
        )
    return "==PROF== Connected to process 5120 (/tmp/vf/gather)\n" + out.getvalue()


if __name__ == "__main__":
    (HERE / "h100_raw_auto_units.csv").write_text(h100())
    (HERE / "a100_raw_base_units.csv").write_text(a100())
    (HERE / "h100_details_long.csv").write_text(details())
