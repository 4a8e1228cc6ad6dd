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
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from veriforge.cuda.tasks.ctypes_map import base_type, numpy_dtype

from .backend import CParam

__all__ = ["driver_source", "read_case_output", "write_case_input"]

MARK_DONE = "VF_CASE_DONE"
MARK_ERROR = "VF_CASE_ERROR"


def driver_source(entry: str, params: list[CParam]) -> str:
    """C++ text appended after the candidate: a prototype of ``entry`` and ``main``."""
    proto = ", ".join(f"{p.ctype} {p.name}" for p in params) or "void"
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
        "  for (int k = 1; k + 1 < argc; k += 2) {",
        "    size_t vf_len = 0; unsigned char* vf_buf = vf_read_all(argv[k], &vf_len); size_t vf_off = 0;",
    ]
    call_args = []
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
            call_args.append(f"({p.ctype})vf_d{i}")
        else:
            ctype = base_type(p.ctype)
            lines += [f"    {ctype} vf_s{i}; memcpy(&vf_s{i}, vf_buf + vf_off, sizeof({ctype})); "
                      f"vf_off += sizeof({ctype});"]
            call_args.append(f"vf_s{i}")
    lines += [
        "    (void)vf_len; cudaDeviceSynchronize(); cudaGetLastError();",
        "    auto vf_t0 = std::chrono::steady_clock::now();",
        f"    {entry}({', '.join(call_args)});",
        "    cudaError_t vf_e1 = cudaDeviceSynchronize();",
        "    auto vf_t1 = std::chrono::steady_clock::now();",
        "    cudaError_t vf_e2 = cudaGetLastError();",
        "    if (vf_e1 != cudaSuccess || vf_e2 != cudaSuccess) {",
        f'      fprintf(stderr, "{MARK_ERROR} %d %s\\n", (k - 1) / 2, '
        "cudaGetErrorString(vf_e1 != cudaSuccess ? vf_e1 : vf_e2));",
        "      return 3;",
        "    }",
        "    double vf_secs = std::chrono::duration<double>(vf_t1 - vf_t0).count();",
        "    char vf_tmp[4096]; snprintf(vf_tmp, sizeof vf_tmp, \"%s.tmp\", argv[k + 1]);",
        '    FILE* vf_out = fopen(vf_tmp, "wb"); if (!vf_out) { perror(vf_tmp); return 4; }',
        "    fwrite(&vf_secs, sizeof(double), 1, vf_out);",
    ]
    for i, p in enumerate(params):
        if p.is_pointer and p.role in ("out", "inout"):
            lines += [f"    cudaMemcpy(vf_h{i}, vf_d{i}, vf_nb{i}, cudaMemcpyDeviceToHost);",
                      f"    fwrite(vf_h{i}, 1, vf_nb{i}, vf_out);"]
    lines += ["    fclose(vf_out); rename(vf_tmp, argv[k + 1]);"]
    for i, p in enumerate(params):
        if p.is_pointer:
            lines.append(f"    cudaFree(vf_d{i});")
    lines += [
        "    free(vf_buf);",
        f'    printf("{MARK_DONE} %d\\n", (k - 1) / 2); fflush(stdout);',
        "  }",
        "  return 0;",
        "}",
    ]
    return "\n".join(lines) + "\n"


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
    """At most ``limit`` bytes of a file a sandboxed program wrote (no links, regular files only)."""
    import os
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path.name} is not a regular file")
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 22))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_case_output(path: Path, params: list[CParam], args: list[Any]) -> tuple[float, dict[str, np.ndarray]]:
    """(seconds, outputs by name) from a case's output file.

    The file was written by the candidate's process (a sandbox uid): it is opened without
    following links, must be a regular file, and only the expected number of bytes is read, so a
    link to a secret, a FIFO or a huge file cannot make the harness read or hang on it.
    """
    expected = 8 + sum(int(np.asarray(v).size) * np.dtype(numpy_dtype(p.ctype)).itemsize
                       for p, v in zip(params, args, strict=True) if p.is_pointer and p.role in ("out", "inout"))
    data = read_untrusted(path, expected)
    if len(data) != expected:
        raise ValueError(f"{path.name}: expected {expected} bytes of results, found {len(data)}")
    seconds = float(np.frombuffer(data, dtype=np.float64, count=1)[0])
    off = 8
    outputs: dict[str, np.ndarray] = {}
    for p, value in zip(params, args, strict=True):
        if p.is_pointer and p.role in ("out", "inout"):
            dtype = np.dtype(numpy_dtype(p.ctype))
            count = int(np.asarray(value).size)
            outputs[p.name] = np.frombuffer(data, dtype=dtype, count=count, offset=off).copy()
            off += count * dtype.itemsize
    return seconds, outputs
