"""The generated ``main()`` that runs a C→CUDA candidate as a whole program on the CPU runtime.

Why a program and not an in-process call: the candidate is untrusted. As its own process (own
session, time limit, killed as a group) a segfault, an abort or an endless loop costs one
result, never the harness. One program run handles every case of an evaluation, so a candidate
pays one process start, not one per configuration.

Wire format (all little-endian, one file per case): for each parameter in signature order, a
pointer is ``uint64 nbytes`` followed by the bytes, a scalar is its raw value. The program
copies each buffer into a fresh ``cudaMalloc`` allocation byte for byte (poisoned outputs stay
poisoned), calls the entry point, synchronises the device, then writes ``double seconds``
followed by every out/inout buffer to the case's output file (written to ``.tmp`` and renamed,
so a crash never leaves a half-written result).

Dynamic checks (``checks=True``, the CPU back-end; docs/tasks.md "Dynamic checks"). Before the
first allocation the driver turns on the runtime's device-memory guard (device memory is
inaccessible to host code outside kernels and runtime copies: a dereference on the host dies by
SIGSEGV with a ``veriforge: host code read device memory at ...`` line on stderr). With
``race=True`` each case is first called with blocks and threads in reverse order, its out/inout
buffers kept, every buffer restored from the case's input, and then called normally; the normal
call is the timed one, and the runtime's byte counters of device→host and host→device copies are
reset and read around it. Next to the result file the driver writes ``<result>.chk``: ``uint64``
:data:`CHECK_MAGIC`, bytes copied device→host, bytes copied host→device, 1 if the reverse-order
run happened, the run's token, then that run's out/inout buffers like the result file (written
before the result file, so a case with a result always has one). The result file holds the normal
call's outputs. The token is 8 random bytes the harness writes to the program's standard input
(which a candidate may not read: anti-cheat) and compares: result files a candidate forged and
then ended the program early (``_exit(0)``) cannot carry it, so they are never taken as results.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from veriforge.cuda.tasks.ctypes_map import base_type, numpy_dtype

from .backend import CParam

__all__ = ["CaseChecks", "driver_source", "read_case_checks", "read_case_output", "write_case_input"]

MARK_DONE = "VF_CASE_DONE"
MARK_ERROR = "VF_CASE_ERROR"
CHECK_MAGIC = 0x564643484B000002
"""First word of a ``.chk`` file ("VFCHK", format 2: with the token)."""


def driver_source(entry: str, params: list[CParam], *, checks: bool = True, race: bool = True) -> str:
    """C++ text appended after the candidate: a prototype of ``entry`` and ``main``.

    ``checks`` adds the dynamic checks of the CPU runtime (see the module docstring): the
    device-memory guard, the copy counters and the ``.chk`` file; ``race`` (with ``checks``) also
    runs every case once more, first, with blocks and threads in reverse order.
    """
    proto = ", ".join(f"{p.ctype} {p.name}" for p in params) or "void"
    race = race and checks
    lines = [
        "#undef main",
        "#include <cstdio>",
        "#include <cstdlib>",
        "#include <cstring>",
        "#include <cstdint>",
        "#include <chrono>",
        f'extern "C" void {entry}({proto});',
        "static unsigned char* vf_read_all(const char* path, size_t* len) {",
        '  FILE* f = fopen(path, "rb"); if (!f) { perror(path); exit(4); }',
        "  fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);",
        "  unsigned char* buf = (unsigned char*)malloc(n > 0 ? (size_t)n : 1);",
        "  if (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) { perror(path); exit(4); }",
        "  fclose(f); *len = (size_t)n; return buf;",
        "}",
        "int main(int argc, char** argv) {",
    ]
    if checks:
        lines += ["  uint64_t vf_token = 0;  // the harness's token (stdin), copied into every checks file",
                  "  if (fread(&vf_token, 1, 8, stdin) != 8) vf_token = 0;",
                  "  ::vf::enable_device_guard();"]
    lines += [
        "  for (int k = 1; k + 1 < argc; k += 2) {",
        "    size_t vf_len = 0; unsigned char* vf_buf = vf_read_all(argv[k], &vf_len); size_t vf_off = 0;",
    ]
    call_args = []
    pointers = [i for i, p in enumerate(params) if p.is_pointer]
    outputs = [i for i, p in enumerate(params) if p.is_pointer and p.role in ("out", "inout")]
    for i, p in enumerate(params):
        if p.is_pointer:
            lines += [
                f"    uint64_t vf_nb{i}; memcpy(&vf_nb{i}, vf_buf + vf_off, 8); vf_off += 8;",
                f"    void* vf_d{i} = nullptr;",
                f"    if (cudaMalloc(&vf_d{i}, vf_nb{i} ? vf_nb{i} : 1) != cudaSuccess) "
                f'{{ fprintf(stderr, "{MARK_ERROR} cudaMalloc failed\\n"); return 3; }}',
                f"    cudaMemcpy(vf_d{i}, vf_buf + vf_off, vf_nb{i}, cudaMemcpyHostToDevice);",
                f"    unsigned char* vf_h{i} = vf_buf + vf_off; vf_off += vf_nb{i};",
            ]
            if checks:
                lines.append(f'    ::vf::label_device_buffer(vf_d{i}, "{_c_string(p.name)}");')
            call_args.append(f"({p.ctype})vf_d{i}")
        else:
            ctype = base_type(p.ctype)
            lines += [f"    {ctype} vf_s{i}; memcpy(&vf_s{i}, vf_buf + vf_off, sizeof({ctype})); "
                      f"vf_off += sizeof({ctype});"]
            call_args.append(f"vf_s{i}")
    call = f"    {entry}({', '.join(call_args)});"
    error = "cudaGetErrorString(vf_e1 != cudaSuccess ? vf_e1 : vf_e2)"
    lines += [
        "    (void)vf_len; cudaDeviceSynchronize(); cudaGetLastError();",
        "    cudaError_t vf_e1 = cudaSuccess, vf_e2 = cudaSuccess;",
        f"    uint64_t vf_chk[5] = {{{CHECK_MAGIC:#x}ull, 0, 0, 0, {'vf_token' if checks else '0'}}};"
        "  // magic, d2h bytes, h2d bytes, reverse run, token",
    ]
    if race:
        # The reverse-order run goes first: shared memory a racy block reads before it was written
        # then holds another case's (or no) data, never this very block's values from a forward run.
        # Its outputs are kept; every buffer is restored from the case's input for the real run.
        lines += [
            "    ::vf::set_reverse_order(true);",
            call,
            "    vf_e1 = cudaDeviceSynchronize(); vf_e2 = cudaGetLastError();",
            "    ::vf::set_reverse_order(false);",
            "    const char* vf_reverse_error = nullptr;",
            f"    if (vf_e1 != cudaSuccess || vf_e2 != cudaSuccess) {{ vf_reverse_error = {error}; "
            "cudaDeviceReset(); }",
            "    vf_chk[3] = 1;",
        ]
        for i in outputs:
            lines += [f"    unsigned char* vf_r{i} = (unsigned char*)malloc(vf_nb{i} ? vf_nb{i} : 1);",
                      f"    cudaMemcpy(vf_r{i}, vf_d{i}, vf_nb{i}, cudaMemcpyDeviceToHost);"]
        lines += [f"    cudaMemcpy(vf_d{i}, vf_h{i}, vf_nb{i}, cudaMemcpyHostToDevice);" for i in pointers]
    if checks:
        lines.append("    ::vf::reset_copy_counters();")
    lines += [
        "    auto vf_t0 = std::chrono::steady_clock::now();",
        call,
        "    vf_e1 = cudaDeviceSynchronize();",
        "    auto vf_t1 = std::chrono::steady_clock::now();",
        "    vf_e2 = cudaGetLastError();",
    ]
    if checks:
        lines.append("    ::vf::copy_counters(&vf_chk[1], &vf_chk[2]);")
    lines += [
        "    if (vf_e1 != cudaSuccess || vf_e2 != cudaSuccess) {",
        f'      fprintf(stderr, "{MARK_ERROR} %d %s\\n", (k - 1) / 2, {error});',
        "      return 3;",
        "    }",
    ]
    if race:
        lines += [
            "    if (vf_reverse_error) {",
            f'      fprintf(stderr, "{MARK_ERROR} %d %s (only when blocks and threads run in reverse order: the '
            'kernels depend on the order threads run in)\\n", (k - 1) / 2, vf_reverse_error);',
            "      return 3;",
            "    }",
        ]
    lines.append("    double vf_secs = std::chrono::duration<double>(vf_t1 - vf_t0).count();")
    for i in outputs:  # the results, into the input's bytes (no longer needed)
        lines.append(f"    cudaMemcpy(vf_h{i}, vf_d{i}, vf_nb{i}, cudaMemcpyDeviceToHost);")
    lines.append("    char vf_tmp[4096];")
    if checks:
        # The checks file first: a case whose result file exists always has one.
        lines += [
            '    snprintf(vf_tmp, sizeof vf_tmp, "%s.chk.tmp", argv[k + 1]);',
            '    FILE* vf_chkf = fopen(vf_tmp, "wb"); if (!vf_chkf) { perror(vf_tmp); return 4; }',
            "    fwrite(vf_chk, sizeof vf_chk, 1, vf_chkf);",
        ]
        if race:
            lines += [f"    fwrite(vf_r{i}, 1, vf_nb{i}, vf_chkf); free(vf_r{i});" for i in outputs]
        lines += [
            "    fclose(vf_chkf);",
            '    { char vf_dst[4096]; snprintf(vf_dst, sizeof vf_dst, "%s.chk", argv[k + 1]);',
            "      rename(vf_tmp, vf_dst); }",
        ]
    lines += [
        "    snprintf(vf_tmp, sizeof vf_tmp, \"%s.tmp\", argv[k + 1]);",
        '    FILE* vf_out = fopen(vf_tmp, "wb"); if (!vf_out) { perror(vf_tmp); return 4; }',
        "    fwrite(&vf_secs, sizeof(double), 1, vf_out);",
    ]
    for i in outputs:
        lines += [f"    fwrite(vf_h{i}, 1, vf_nb{i}, vf_out);"]
    lines += ["    fclose(vf_out); rename(vf_tmp, argv[k + 1]);"]
    for i in pointers:
        lines.append(f"    cudaFree(vf_d{i});")
    lines += [
        "    free(vf_buf);",
        f'    printf("{MARK_DONE} %d\\n", (k - 1) / 2); fflush(stdout);',
        "  }",
        "  return 0;",
        "}",
    ]
    return "\n".join(lines) + "\n"


def _c_string(text: str) -> str:
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch in "_-.") else f"\\{ord(ch) & 0xFF:03o}"
                   for ch in text)


def write_case_input(path: Path, params: list[CParam], args: list[Any]) -> None:
    """Serialise one case's arguments in the wire format."""
    with open(path, "wb") as f:
        for p, value in zip(params, args, strict=True):
            dtype = np.dtype(numpy_dtype(p.ctype))
            if p.is_pointer:
                arr = np.ascontiguousarray(np.asarray(value, dtype=dtype))
                f.write(np.uint64(arr.nbytes).tobytes())
                f.write(arr.tobytes())
            else:
                f.write(np.asarray(value, dtype=dtype).tobytes())


def read_untrusted(path: Path, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of a file a sandboxed program wrote (no links, regular files only;
    one byte more than the limit, so the caller can tell a file that is too long)."""
    from veriforge.cuda.cpu.race import read_limited

    return read_limited(path, limit + 1, strict=True)


def _output_params(params: list[CParam], args: list[Any]) -> list[tuple[CParam, np.dtype, int]]:
    return [(p, np.dtype(numpy_dtype(p.ctype)), int(np.asarray(v).size))
            for p, v in zip(params, args, strict=True) if p.is_pointer and p.role in ("out", "inout")]


def _unpack_outputs(data: bytes, off: int, outs: list[tuple[CParam, np.dtype, int]]) -> dict[str, np.ndarray]:
    values: dict[str, np.ndarray] = {}
    for p, dtype, count in outs:
        values[p.name] = np.frombuffer(data, dtype=dtype, count=count, offset=off).copy()
        off += count * dtype.itemsize
    return values


def read_case_output(path: Path, params: list[CParam], args: list[Any]) -> tuple[float, dict[str, np.ndarray]]:
    """(seconds, outputs by name) from a case's output file.

    The file was written by the candidate's process (a sandbox uid): it is opened without
    following links, must be a regular file, and only the expected number of bytes is read, so a
    link to a secret, a FIFO or a huge file cannot make the harness read or hang on it.
    """
    outs = _output_params(params, args)
    expected = 8 + sum(count * dtype.itemsize for _, dtype, count in outs)
    data = read_untrusted(path, expected)
    if len(data) != expected:
        raise ValueError(f"{path.name}: expected {expected} bytes of results, found {len(data)}")
    seconds = float(np.frombuffer(data, dtype=np.float64, count=1)[0])
    return seconds, _unpack_outputs(data, 8, outs)


@dataclass
class CaseChecks:
    """What the driver's dynamic checks recorded for one case (the ``.chk`` file)."""

    device_to_host: int
    """Bytes ``cudaMemcpy*`` copied from device to host memory during the (normal, timed) call."""
    host_to_device: int
    reverse_run: dict[str, np.ndarray] | None
    """The out/inout buffers after the call with blocks and threads in reverse order, or None."""
    token: int = 0
    """The token the program read from its standard input (see the module docstring)."""


def read_case_checks(path: Path, params: list[CParam], args: list[Any]) -> CaseChecks:
    """The ``.chk`` file of a case (read as carefully as :func:`read_case_output`)."""
    outs = _output_params(params, args)
    second = sum(count * dtype.itemsize for _, dtype, count in outs)
    head = 40
    data = read_untrusted(path, head + second)
    if len(data) < head:
        raise ValueError(f"{path.name}: expected at least {head} bytes of checks, found {len(data)}")
    magic, d2h, h2d, ran, token = (int(x) for x in np.frombuffer(data, dtype="<u8", count=5))
    if magic != CHECK_MAGIC or ran not in (0, 1):
        raise ValueError(f"{path.name}: not a checks file of the driver")
    if len(data) != head + ran * second:
        raise ValueError(f"{path.name}: expected {head + ran * second} bytes of checks, found {len(data)}")
    return CaseChecks(device_to_host=d2h, host_to_device=h2d,
                      reverse_run=_unpack_outputs(data, head, outs) if ran else None, token=token)
