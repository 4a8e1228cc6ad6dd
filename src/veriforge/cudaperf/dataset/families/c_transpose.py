"""C→CUDA transpose / permute family: 2-D, batched, 3-D and 4-D axis permutations with fused epilogues.

Why one generator for all of them: a 2-D transpose, a batched transpose and a 4-D permute are the same
problem (move the innermost axis) with a different index map, so one code generator writes the index
arithmetic for any permutation and the three kernel shapes that matter on a GPU:

* ``naive`` — one thread per input element: reads coalesce, writes scatter (or, for permutations that
  keep the innermost axis, a per-element div/mod chain);
* ``coalesced`` — one thread per output element (writes coalesce, reads go through the read-only cache),
  or for innermost-preserving permutations one row per block with no per-element index division;
* ``shared_tiled`` — 32x32 tiles of the (input-innermost, output-innermost) axis pair staged through a
  padded shared-memory tile, so both sides coalesce.

Structural variants (what the dataset's near-duplicate filter must see as different): the permutation
and its rank, the square-vs-rectangular signature, the dtype and the fused element-wise epilogue
(scale, bias along the output's innermost axis, scale+bias, ReLU, abs, casts to a wider/other type).
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from veriforge.cudaperf.dataset.family import FamilyError, GeneratedTask, Impl, family

__all__ = ["generate_transpose"]

_DT: dict[str, dict[str, Any]] = {
    "float": {"size": 4, "init": "uniform(-1, 1)", "alpha": 1.75, "zero": "0.0f"},
    "double": {"size": 8, "init": "uniform(-1, 1)", "alpha": -0.625, "zero": "0.0"},
    "int": {"size": 4, "init": "randint(-1000, 1000)", "alpha": 3, "zero": "0"},
}

# op name -> (output dtype or None = same as input, C expression of v (and alpha / bias), extra params)
_OPS: dict[str, tuple[str | None, str, tuple[str, ...], str]] = {
    "copy": (None, "v", (), "out = in (bit-exact copy)"),
    "scale": (None, "alpha * v", ("alpha",), "out = alpha * in, alpha a scalar of the input type"),
    "bias": (None, "v + bias[BI]", ("bias",),
             "out = in + bias[j], where j is the element's index along the OUTPUT's innermost axis"),
    "scale_bias": (None, "alpha * v + bias[BI]", ("alpha", "bias"),
                   "out = alpha * in + bias[j], j = index along the OUTPUT's innermost axis"),
    "relu": (None, "(v > ZERO ? v : ZERO)", (), "out = max(in, 0)"),
    "abs": (None, "(v < ZERO ? -v : v)", (), "out = |in|"),
    "cast_double": ("double", "(double)v", (), "out = (double)in (the output array is double)"),
    "cast_float": ("float", "(float)v", (), "out = (float)in (the output array is float; exact for these values)"),
}
_OPS_BY_DT = {
    "float": ("copy", "scale", "bias", "scale_bias", "relu", "abs", "cast_double"),
    "double": ("copy", "scale", "bias", "scale_bias", "relu", "abs"),
    "int": ("copy", "scale", "bias", "scale_bias", "relu", "abs", "cast_double", "cast_float"),
}
_OPS_4D = (("float", "copy"), ("double", "copy"), ("int", "copy"), ("float", "scale"),
           ("float", "cast_double"), ("int", "bias"))


@dataclass(frozen=True)
class _Shape:
    """A permutation problem: input dim names (row-major, last fastest) and the permutation."""

    kind: str  # "2d" | "square" | "batched" | "3d" | "4d"
    dims: tuple[str, ...]
    perm: tuple[int, ...]  # output axis i is input axis perm[i]
    configs: tuple[tuple[int, ...], ...]

    @property
    def rank(self) -> int:
        return len(self.perm)

    @property
    def scalars(self) -> list[str]:
        return list(dict.fromkeys(self.dims))  # "square" uses n twice, passes it once

    def out_dims(self) -> tuple[str, ...]:
        return tuple(self.dims[p] for p in self.perm)

    def total(self) -> str:
        return " * ".join(self.dims)

    def in_off(self) -> str:
        return _horner([f"c{a}" for a in range(self.rank)], list(self.dims))

    def out_off(self) -> str:
        return _horner([f"c{p}" for p in self.perm], list(self.out_dims()))


def _horner(coords: list[str], dims: list[str]) -> str:
    expr = f"(long long){coords[0]}"
    for c, d in zip(coords[1:], dims[1:], strict=True):
        expr = f"({expr} * {d} + {c})"
    return expr


def _stable(text: str) -> int:
    return zlib.crc32(text.encode()) & 0x7FFFFFFF


# -- code generation ----------------------------------------------------------------------------------
def _signature(shape: _Shape, dt: str, op: str) -> tuple[str, list[dict[str, Any]]]:
    out_t = _OPS[op][0] or dt
    extra = _OPS[op][2]
    bias_len = shape.dims[shape.perm[-1]]
    parts = [f"const {dt}* in", f"{out_t}* out"]
    params: list[dict[str, Any]] = [
        {"name": "in", "type": f"const {dt}*", "role": "in", "size": shape.total(), "init": _DT[dt]["init"]},
        {"name": "out", "type": f"{out_t}*", "role": "out", "size": shape.total()},
    ]
    if "alpha" in extra:
        parts.append(f"{dt} alpha")
        params.append({"name": "alpha", "type": dt, "role": "scalar", "value": "alpha"})
    if "bias" in extra:
        parts.append(f"const {dt}* bias")
        params.append({"name": "bias", "type": f"const {dt}*", "role": "in", "size": bias_len,
                       "init": _DT[dt]["init"]})
    for d in shape.scalars:
        parts.append(f"int {d}")
        params.append({"name": d, "type": "int", "role": "scalar"})
    return ", ".join(parts), params


def _args(sig: str) -> str:
    return ", ".join(p.split()[-1] for p in sig.split(", "))


def _op_expr(shape: _Shape, dt: str, op: str) -> str:
    return _OPS[op][1].replace("BI", f"c{shape.perm[-1]}").replace("ZERO", _DT[dt]["zero"])


def _decompose(coords: list[int], dims: list[str], var: str) -> list[str]:
    """Lines splitting linear index ``var`` into coordinates (last fastest)."""
    lines = [f"long long t = {var};"]
    for a, d in zip(reversed(coords[1:]), reversed(dims[1:]), strict=True):
        lines.append(f"int c{a} = (int)(t % {d}); t /= {d};")
    lines.append(f"int c{coords[0]} = (int)t;")
    return lines


def _reference(shape: _Shape, dt: str, op: str, sig: str) -> str:
    """Loops in OUTPUT order (the permutation shows in every loop header, not only in one index
    expression), reading the input at the permuted coordinates."""
    out_t = _OPS[op][0] or dt
    loops, ind = [], "    "
    for p in shape.perm:
        loops.append(f"{ind}for (int c{p} = 0; c{p} < {shape.dims[p]}; ++c{p})")
        ind += "    "
    in_off = shape.in_off().replace("(long long)", "")
    out_off = shape.out_off().replace("(long long)", "")
    body = f"{ind}out[{out_off}] = ({out_t})({_op_expr(shape, dt, op).replace('v', f'in[{in_off}]')});"
    return (f"/* Serial reference: out = permute(in, axes {shape.perm}) with epilogue '{op}'. */\n"
            f"void reference({sig}) {{\n" + "\n".join(loops) + "\n" + body + "\n}\n")


def _naive(shape: _Shape, dt: str, op: str, sig: str) -> str:
    out_t = _OPS[op][0] or dt
    body = "\n    ".join(_decompose(list(range(shape.rank)), list(shape.dims), "idx"))
    writes = "scattered" if shape.perm[-1] != shape.rank - 1 else "neighbouring"
    return f"""// One thread per INPUT element (reads coalesce); the output index is rebuilt from the input
// coordinates with a div/mod chain, so neighbouring threads write {writes} addresses.
__global__ void permute_naive({sig}) {{
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long){shape.total()}) return;
    {body}
    {dt} v = in[idx];
    out[{shape.out_off()}] = ({out_t})({_op_expr(shape, dt, op)});
}}

extern "C" void solve({sig}) {{
    long long total = (long long){shape.total()};
    if (total <= 0) return;
    permute_naive<<<(unsigned)((total + 255) / 256), 256>>>({_args(sig)});
}}
"""


def _gather(shape: _Shape, dt: str, op: str, sig: str) -> str:
    out_t = _OPS[op][0] or dt
    body = "\n    ".join(_decompose(list(shape.perm), list(shape.out_dims()), "idx"))
    return f"""// One thread per OUTPUT element: stores coalesce; the gathered reads are strided and go through
// the read-only data cache (__ldg), whose lines are reused by the neighbouring blocks.
__global__ void permute_gather({sig}) {{
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long){shape.total()}) return;
    {body}
    {dt} v = __ldg(&in[{shape.in_off()}]);
    out[idx] = ({out_t})({_op_expr(shape, dt, op)});
}}

extern "C" void solve({sig}) {{
    long long total = (long long){shape.total()};
    if (total <= 0) return;
    permute_gather<<<(unsigned)((total + 255) / 256), 256>>>({_args(sig)});
}}
"""


def _grid_stride(shape: _Shape, dt: str, op: str, sig: str) -> str:
    out_t = _OPS[op][0] or dt
    body = "\n        ".join(_decompose(list(range(shape.rank)), list(shape.dims), "idx"))
    return f"""// Grid-stride loop over the input with a grid sized to the SM count: every access already
// coalesces (the innermost axis stays innermost), and each thread amortises its setup over many elements.
__global__ void permute_grid_stride({sig}) {{
    long long total = (long long){shape.total()};
    for (long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (long long)gridDim.x * blockDim.x) {{
        {body}
        {dt} v = in[idx];
        out[{shape.out_off()}] = ({out_t})({_op_expr(shape, dt, op)});
    }}
}}

extern "C" void solve({sig}) {{
    int sms = 1;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    long long total = (long long){shape.total()};
    long long need = (total + 255) / 256;
    int blocks = (int)(need < 4LL * sms ? need : 4LL * sms);
    if (blocks < 1) return;
    permute_grid_stride<<<blocks, 256>>>({_args(sig)});
}}
"""


def _rows(shape: _Shape, dt: str, op: str, sig: str) -> str:
    """Innermost axis preserved: one block row per output row, no per-element division."""
    out_t = _OPS[op][0] or dt
    last = shape.rank - 1
    outer = list(range(last))
    dims = list(shape.dims[:last])
    dec = "\n    ".join(_decompose(outer, dims, "row")) if len(outer) > 1 else "int c0 = (int)row;"
    rows = " * ".join(dims)
    return f"""// The innermost axis stays innermost, so each input row maps to one contiguous output row:
// blockIdx.y picks the row (one index decomposition per block, not per element) and the threads of
// the block copy it with coalesced loads and stores.
__global__ void permute_rows({sig}) {{
    long long row = blockIdx.y;
    {dec}
    int c{last} = blockIdx.x * blockDim.x + threadIdx.x;
    if (c{last} >= {shape.dims[last]}) return;
    {dt} v = in[{shape.in_off()}];
    out[{shape.out_off()}] = ({out_t})({_op_expr(shape, dt, op)});
}}

extern "C" void solve({sig}) {{
    long long rows = (long long){rows};
    if (rows <= 0 || {shape.dims[last]} <= 0) return;
    dim3 grid(({shape.dims[last]} + 127) / 128, (unsigned)rows);
    permute_rows<<<grid, 128>>>({_args(sig)});
}}
"""


def _tiled(shape: _Shape, dt: str, op: str, sig: str) -> str:
    out_t = _OPS[op][0] or dt
    a = shape.rank - 1  # input's innermost axis
    b = shape.perm[-1]  # the input axis that becomes the output's innermost axis
    others = [x for x in range(shape.rank) if x not in (a, b)]
    if others:
        z_dims = [shape.dims[x] for x in others]
        dec = "\n    ".join(_decompose(others, z_dims, "blockIdx.z"))
        zcount = " * ".join(f"(unsigned){d}" for d in z_dims)
    else:
        dec, zcount = "", "1"
    da, db = shape.dims[a], shape.dims[b]
    return f"""// 32x32 tiles over the (input-innermost, output-innermost) axis pair: the tile is read with
// coalesced loads along axis {a} and written with coalesced stores along axis {b}; the padding column
// keeps the transposed shared-memory reads free of bank conflicts. blockIdx.z enumerates the other axes.
#define TILE 32
#define ROWS 8

__global__ void permute_tiled({sig}) {{
    __shared__ {dt} tile[TILE][TILE + 1];
    {dec}
    int a0 = blockIdx.x * TILE, b0 = blockIdx.y * TILE;
    for (int k = 0; k < TILE; k += ROWS) {{
        int c{a} = a0 + threadIdx.x, c{b} = b0 + threadIdx.y + k;
        if (c{a} < {da} && c{b} < {db}) tile[threadIdx.y + k][threadIdx.x] = in[{shape.in_off()}];
    }}
    __syncthreads();
    for (int k = 0; k < TILE; k += ROWS) {{
        int c{b} = b0 + threadIdx.x, c{a} = a0 + threadIdx.y + k;
        if (c{a} < {da} && c{b} < {db}) {{
            {dt} v = tile[threadIdx.x][threadIdx.y + k];
            out[{shape.out_off()}] = ({out_t})({_op_expr(shape, dt, op)});
        }}
    }}
}}

extern "C" void solve({sig}) {{
    if ({shape.total()} <= 0) return;
    dim3 block(TILE, ROWS);
    dim3 grid(({da} + TILE - 1) / TILE, ({db} + TILE - 1) / TILE, {zcount});
    permute_tiled<<<grid, block>>>({_args(sig)});
}}
"""


# -- task assembly -------------------------------------------------------------------------------------
def _describe(shape: _Shape, dt: str, op: str) -> tuple[str, str]:
    out_t = _OPS[op][0] or dt
    dims = shape.dims
    ins = " x ".join(dims)
    outs = " x ".join(shape.out_dims())
    if shape.kind in ("2d", "square"):
        what = ("square " if shape.kind == "square" else "") + "2-D transpose"
        index = (f"for every r in [0, {dims[0]}) and c in [0, {dims[1]}): out[c * {dims[0]} + r] = "
                 f"f(in[r * {dims[1]} + c])")
    elif shape.kind == "batched":
        what = "batched transpose"
        index = ("for every b, r, c: out[(b * cols + c) * rows + r] = f(in[(b * rows + r) * cols + c]) "
                 "(each of the batch matrices is transposed independently)")
    else:
        what = f"{shape.rank}-D axis permutation {shape.perm}"
        coords = ", ".join(f"i{a}" for a in range(shape.rank))
        index = (f"for every index tuple ({coords}) with i_k in [0, d_k): out at output coordinates "
                 f"({', '.join(f'i{p}' for p in shape.perm)}) (output shape {outs}, row-major) = f(in at "
                 f"({coords})). Equivalently out = numpy.transpose(in, {shape.perm}) followed by f")
    title = f"{what.capitalize()} ({dt}{'' if out_t == dt else ' -> ' + out_t}, epilogue {op})"
    bias = ""
    if "bias" in _OPS[op][2]:
        bias = (f" bias has {dims[shape.perm[-1]]} elements (the length of the output's innermost axis, "
                f"input axis {shape.perm[-1]}).")
    desc = f"""Permute the axes of a dense row-major {dt} tensor and apply an element-wise epilogue f.

Input `in` has shape {ins} (row-major, the last axis contiguous). Output `out` ({out_t}) has shape
{outs} (row-major): {index}.
Epilogue f: {_OPS[op][3]}.{bias}
Every one of the {shape.total()} output elements must be written. The sizes are arbitrary positive
integers (not multiples of any tile size, possibly odd and different from each other).
""" + ("Results are compared exactly." if op in ("copy", "relu", "abs") or dt == "int" or op.startswith("cast")
       else "Float results are compared with a tight relative tolerance (fused multiply-add is fine).") + "\n"
    return title, desc


def _tolerance(dt: str, op: str) -> dict[str, float]:
    out_t = _OPS[op][0] or dt
    if op in ("copy", "relu", "abs") or op.startswith("cast") or dt == "int":
        return {"rtol": 0.0, "atol": 0.0} if out_t != "int" else {}
    return {"rtol": 1e-6, "atol": 1e-7} if dt == "float" else {"rtol": 1e-13, "atol": 1e-14}


def _task(shape: _Shape, dt: str, op: str, seed: int) -> GeneratedTask:
    out_t = _OPS[op][0] or dt
    name = "x".join(str(p) for p in shape.perm)
    tid = f"tr_{shape.kind}_{name}_{dt}_{op}" if shape.kind in ("3d", "4d") else f"tr_{shape.kind}_{dt}_{op}"
    sig, params = _signature(shape, dt, op)
    inner_kept = shape.perm[-1] == shape.rank - 1
    if inner_kept:
        impls = [Impl("naive", "naive", _naive(shape, dt, op, sig), 1,
                      "one thread per element, full div/mod index decomposition per element"),
                 Impl("grid_stride", "grid_stride", _grid_stride(shape, dt, op, sig), 2,
                      "SM-sized grid-stride loop; coalesced on both sides"),
                 Impl("row_copy", "coalesced", _rows(shape, dt, op, sig), 3,
                      "one block row per contiguous row; no per-element index division")]
    else:
        impls = [Impl("naive", "naive", _naive(shape, dt, op, sig), 1,
                      "one thread per input element; coalesced reads, scattered writes"),
                 Impl("gather", "coalesced", _gather(shape, dt, op, sig), 2,
                      "one thread per output element; coalesced writes, strided __ldg reads"),
                 Impl("shared_tiled", "shared_tiled", _tiled(shape, dt, op, sig), 4,
                      "32x32 padded shared-memory tiles; both sides coalesce")]
    base = seed * 7919 + _stable(tid) % 100000 + 1  # the task seed (> 0): config seeds derive from it
    configs = []
    for k, sizes in enumerate(shape.configs):
        cfg: dict[str, Any] = {"name": ("small", "large")[k] if k < 2 else f"extra{k}", "seed": base + k}
        for d, s in zip(shape.dims, sizes, strict=True):
            cfg[d] = s
        if "alpha" in _OPS[op][2]:
            cfg["alpha"] = _DT[dt]["alpha"] if k == 0 else (-2 if dt == "int" else 0.3125)
        configs.append(cfg)
    # the [[timing]] size (H100 scale, ~16M elements, estimated only); other variables as the large config
    timing = {"name": "timing", "seed": base + 100,
              **{k: v for k, v in configs[-1].items() if k not in ("name", "seed")},
              **dict(zip(shape.dims, _TIMING[shape.kind + ("_rows" if inner_kept else "")], strict=True))}
    esize, osize = _DT[dt]["size"], _DT[out_t]["size"]
    nbytes = f"{esize + osize} * {shape.total()}"
    if "bias" in _OPS[op][2]:
        nbytes += f" + {esize} * {shape.dims[shape.perm[-1]]}"
    flops = {"copy": "0", "scale_bias": f"2 * {shape.total()}"}.get(op, shape.total())
    if op.startswith("cast"):
        flops = "0"
    title, desc = _describe(shape, dt, op)
    return GeneratedTask(
        id=tid, kind="c2cuda", family="c_transpose", category="transpose", title=title, description=desc,
        reference=_reference(shape, dt, op, sig), impls=impls, configs=configs,
        metrics={"flops": flops, "bytes": nbytes}, params=params, tolerance=_tolerance(dt, op),
        tags=["memory-bound", f"{shape.rank}d", "permute"],
        variant={"shape": shape.kind, "perm": list(shape.perm), "dtype": dt, "op": op, "out_dtype": out_t,
                 "inner_kept": inner_kept},
        seed=base, timing=[timing])


#: [[timing]] sizes per shape kind, in the order of the shape's dims (~16M elements each). Permutations
#: that keep the innermost axis (``_rows``) get 4096-long rows — one 128-thread block row per row needs
#: long rows, and gridDim.y (the row count) must stay under 65536; the tiled kernel's blockIdx.z (the
#: product of the other axes) stays small too.
_TIMING: dict[str, tuple[int, ...]] = {"2d": (4096, 4096), "square": (4096, 4096), "batched": (64, 512, 512),
                                       "3d": (256, 256, 256), "4d": (64, 64, 64, 64),
                                       "3d_rows": (64, 64, 4096), "4d_rows": (16, 16, 16, 4096)}


def _shapes() -> Iterator[_Shape]:
    yield _Shape("2d", ("rows", "cols"), (1, 0), ((37, 53), (200, 333)))
    yield _Shape("square", ("n", "n"), (1, 0), ((45, 45), (160, 160)))
    yield _Shape("batched", ("batch", "rows", "cols"), (0, 2, 1), ((3, 19, 23), (6, 70, 45)))
    for perm in itertools.permutations(range(3)):
        if perm not in ((0, 1, 2), (0, 2, 1)):  # identity; (0, 2, 1) is the batched transpose
            yield _Shape("3d", ("d0", "d1", "d2"), perm, ((5, 19, 23), (12, 40, 37)))
    for perm in itertools.permutations(range(4)):
        if perm != (0, 1, 2, 3):
            yield _Shape("4d", ("d0", "d1", "d2", "d3"), perm, ((3, 5, 7, 9), (6, 10, 14, 17)))


@family("c_transpose", kind="c2cuda", category="transpose")
def generate_transpose(seed: int) -> Iterator[GeneratedTask]:
    """2-D/square/batched transposes and every non-identity 3-D/4-D permutation, fused with element-wise
    epilogues (scale, bias, ReLU, abs, casts) over float/double/int."""
    if not isinstance(seed, int):
        raise FamilyError(f"c_transpose: seed must be an int, not {type(seed).__name__}")
    for shape in _shapes():
        combos = _OPS_4D if shape.kind == "4d" else [(dt, op) for dt, ops in _OPS_BY_DT.items() for op in ops]
        for dt, op in combos:
            yield _task(shape, dt, op, seed)
