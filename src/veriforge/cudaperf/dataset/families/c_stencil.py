"""C→CUDA stencil family: 1-D/2-D/3-D stencils, radius 1–4, star or box, three weightings, three
boundary rules, float/double.

A variant fixes the stencil's *structure*: dimensionality, radius, shape (star = the axes through
the centre, box = the full (2R+1)^d cube), weighting (plain mean, distance weights
1/(1+|dx|+|dy|+|dz|) computed in the kernel, or a weight array passed in device memory), and the
boundary rule (skip = points within R of an edge copy their input; clamp = out-of-range neighbours
read the nearest edge element; zero = out-of-range neighbours read 0). The weighted sum is written
once as loops over offsets and instantiated three times: through a boundary-aware accessor
(reference and naive kernel), through direct indexing for interior points (the grid-stride kernel's
fast path), and over a shared-memory tile with its halo (the tiled kernel). All three visit the
offsets in the same order, so results differ from the reference only by FMA contraction.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from veriforge.cudaperf.dataset.families._ckit import DTYPES, P, args, impl, make_task, param, signature
from veriforge.cudaperf.dataset.families._ckit import tolerance as tol_for
from veriforge.cudaperf.dataset.family import GeneratedTask, family

FAMILY = "c_stencil"

_COORDS = {1: ("x",), 2: ("y", "x"), 3: ("z", "y", "x")}
_SIZES = {"x": "nx", "y": "ny", "z": "nz"}
_TILE = {1: {"x": 256}, 2: {"y": 8, "x": 32}, 3: {"z": 4, "y": 4, "x": 16}}
_CONFIGS = {1: ({"n": 1001}, {"n": 65539}), 2: ({"ny": 37, "nx": 53}, {"ny": 250, "nx": 262}),
            3: ({"nz": 13, "ny": 17, "nx": 19}, {"nz": 24, "ny": 28, "nx": 30})}
#: The [[timing]] size per dimensionality (H100 scale, ~16M points, estimated only).
_TIMING = {1: {"n": (1 << 24) + 3}, 2: {"ny": 4096, "nx": 4096}, 3: {"nz": 256, "ny": 256, "nx": 256}}


@dataclass(frozen=True)
class Variant:
    dim: int
    radius: int
    shape: str  # line (1-D) | star | box
    weights: str  # mean | dist | array
    boundary: str  # skip | clamp | zero
    dtype: str

    @property
    def coords(self) -> tuple[str, ...]:
        return _COORDS[self.dim]

    @property
    def points(self) -> int:
        if self.shape == "box" or self.dim == 1:
            return (2 * self.radius + 1) ** self.dim
        return 2 * self.dim * self.radius + 1

    @property
    def task_id(self) -> str:
        return (f"st_{DTYPES[self.dtype].tag}_{self.dim}d_{self.shape}_r{self.radius}_{self.weights}_"
                f"{self.boundary}")


def _dims_decl(v: Variant) -> str:
    """Inside kernels, 1-D tasks call their length n; everything else uses nx/ny/nz."""
    return "    const int nx = n;\n" if v.dim == 1 else ""


def _size_params(v: Variant) -> list[P]:
    return [param("n", "int", "scalar")] if v.dim == 1 else [param(_SIZES[c], "int", "scalar") for c in v.coords]


def _flat(v: Variant, coords: tuple[str, ...]) -> str:
    if v.dim == 1:
        return coords[0]
    if v.dim == 2:
        return f"({coords[0]}) * nx + ({coords[1]})"
    return f"(({coords[0]}) * ny + ({coords[1]})) * nx + ({coords[2]})"


def _off(base: str, k: int) -> str:
    return base if k == 0 else f"{base} + {k}" if k > 0 else f"{base} - {-k}"


def stencil_sum(v: Variant, access: str, indent: str = "    ", base: dict[str, str] | None = None) -> str:
    """C statements leaving the weighted sum in ``s``; ``access`` formats with one ``{c}`` per coordinate
    name (the neighbour's coordinate expression); ``base`` names the centre's coordinates (default x/y/z).

    The x offsets of a box (every offset of a star) are unrolled: the radius shapes the code, as it does in
    hand-tuned stencils, instead of being a loop bound; box shapes keep loops over the outer axes."""
    d = DTYPES[v.dtype]
    base = base or {c: c for c in v.coords}
    r = v.radius
    lines: list[str] = [f"{d.c} s = {d.lit(0)};"]

    def term(exprs: dict[str, str], loop_offsets: list[str], fixed: int, k: str) -> str:
        val = access.format(**exprs)
        if v.weights == "mean":
            return val
        if v.weights == "array":
            return f"w[{k}] * {val}"
        dist = " + ".join([f"({o} < 0 ? -{o} : {o})" for o in loop_offsets] + [str(fixed)] * (fixed > 0))
        return f"{d.lit(1)} / ({d.c})(1 + {dist}) * {val}" if dist else val

    if v.shape == "box" or v.dim == 1:
        outer = v.coords[:-1]
        if v.weights == "array" and outer:
            lines.append("int k = 0;")
        for depth, c in enumerate(outer):
            lines.append("    " * depth + f"for (int d{c} = -{r}; d{c} <= {r}; ++d{c}) {{")
        pad = "    " * len(outer)
        for dx in range(-r, r + 1):
            exprs = {c: f"{base[c]} + d{c}" for c in outer} | {"x": _off(base["x"], dx)}
            k = f"k + {dx + r}" if outer else str(dx + r)
            lines.append(pad + f"s += {term(exprs, [f'd{c}' for c in outer], abs(dx), k)};")
        if v.weights == "array" and outer:
            lines.append(pad + f"k += {2 * r + 1};")
        for depth in range(len(outer) - 1, -1, -1):
            lines.append("    " * depth + "}")
    else:
        lines.append(f"s += {term(dict(base), [], 0, '0')};")
        k = 1
        for axis in reversed(v.coords):  # x first, then y, then z (the documented weight order)
            for dd in [*range(-r, 0), *range(1, r + 1)]:
                exprs = {c: (_off(base[c], dd) if c == axis else base[c]) for c in v.coords}
                lines.append(f"s += {term(exprs, [], abs(dd), str(k))};")
                k += 1
    if v.weights == "mean":
        lines.append(f"s = s * ({d.lit(1)} / {d.lit(v.points)});")
    return "".join(indent + ln + "\n" for ln in lines)


def _helpers(v: Variant, qual: str) -> str:
    """``st_value`` (boundary-aware read of any coordinate) and ``st_point`` (one output through it)."""
    d = DTYPES[v.dtype]
    sizes = ", ".join(f"int {_SIZES[c]}" for c in reversed(v.coords))  # nx[, ny[, nz]]
    size_args = ", ".join(_SIZES[c] for c in reversed(v.coords))
    coords = ", ".join(f"int {c}" for c in v.coords)
    if v.boundary == "zero":
        oob = " || ".join(f"{c} < 0 || {c} >= {_SIZES[c]}" for c in v.coords)
        body = f"    if ({oob}) return {d.lit(0)};\n"
    else:  # clamp (skip only ever reads in-range neighbours; clamping keeps the helper total)
        body = "".join(f"    {c} = {c} < 0 ? 0 : ({c} >= {_SIZES[c]} ? {_SIZES[c]} - 1 : {c});\n" for c in v.coords)
    warr = f"const {d.c}* w, " if v.weights == "array" else ""
    access = "st_value(in, " + size_args + ", " + ", ".join("{" + c + "}" for c in v.coords) + ")"
    return (f"{qual}{d.c} st_value(const {d.c}* in, {sizes}, {coords}) {{\n{body}"
            f"    return in[{_flat(v, v.coords)}];\n}}\n\n"
            f"{qual}{d.c} st_point(const {d.c}* in, {warr}{sizes}, {coords}) {{\n"
            + stencil_sum(v, access) + "    return s;\n}\n")


def _interior_test(v: Variant) -> str:
    return " && ".join(f"{c} >= {v.radius} && {c} < {_SIZES[c]} - {v.radius}" for c in v.coords)


def _point_call(v: Variant) -> str:
    warr = "w, " if v.weights == "array" else ""
    return f"st_point(in, {warr}{', '.join(_SIZES[c] for c in reversed(v.coords))}, {', '.join(v.coords)})"


def _assign(v: Variant, indent: str, value: str) -> str:
    """Write output (x, y, z): ``value`` for points the stencil covers, a copy of the input at skip borders."""
    idx = _flat(v, v.coords)
    if v.boundary == "skip":
        return (f"{indent}if ({_interior_test(v)}) out[{idx}] = {value};\n"
                f"{indent}else out[{idx}] = in[{idx}];\n")
    return f"{indent}out[{idx}] = {value};\n"


def _unflatten(v: Variant, var: str, indent: str) -> str:
    if v.dim == 1:
        return f"{indent}int x = {var};\n"
    if v.dim == 2:
        return f"{indent}int x = {var} % nx;\n{indent}int y = {var} / nx;\n"
    return f"{indent}int x = {var} % nx;\n{indent}int y = ({var} / nx) % ny;\n{indent}int z = {var} / (nx * ny);\n"


def _total(v: Variant) -> str:
    return {1: "n", 2: "nx * ny", 3: "nx * ny * nz"}[v.dim]


def _reference(v: Variant, params: list[P]) -> str:
    loops, depth = "", 1
    for c in v.coords:
        loops += "    " * depth + f"for (int {c} = 0; {c} < {_SIZES[c]}; ++{c}) {{\n"
        depth += 1
    closing = "".join("    " * k + "}\n" for k in range(depth - 1, 0, -1))
    return (_helpers(v, "static inline ") + f"\nvoid reference({signature(params)}) {{\n{_dims_decl(v)}"
            + loops + _assign(v, "    " * depth, _point_call(v)) + closing + "}\n")


def _impls(v: Variant, params: list[P]) -> list:
    d = DTYPES[v.dtype]
    sig, sig_r, names = signature(params), signature(params, restrict=True), args(params)
    helpers = _helpers(v, "__device__ __forceinline__ ")
    total = _total(v)
    naive = helpers + f"""
// One thread per output point; every neighbour goes through the boundary-aware accessor.
__global__ void st_naive({sig_r}) {{
{_dims_decl(v)}    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= {total}) return;
{_unflatten(v, "i", "    ")}{_assign(v, "    ", _point_call(v))}}}

extern "C" void solve({sig}) {{
{_dims_decl(v)}    int total = {total};
    st_naive<<<(total + 255) / 256, 256>>>({names});
}}
"""
    direct = "__ldg(&in[" + _flat(v, tuple("{" + c + "}" for c in v.coords)) + "])"
    interior = stencil_sum(v, direct, "            ")
    idx = _flat(v, v.coords)
    if v.boundary == "skip":
        edge = f"            out[{idx}] = in[{idx}];\n"
    else:
        edge = f"            out[{idx}] = {_point_call(v)};\n"
    stride = helpers + f"""
// Grid-stride loop; interior points (all neighbours in range) take a check-free path with read-only loads.
__global__ void st_stride({sig_r}) {{
{_dims_decl(v)}    int total = {total};
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {{
{_unflatten(v, "i", "        ")}        if ({_interior_test(v)}) {{
{interior}            out[{idx}] = s;
        }} else {{
{edge}        }}
    }}
}}

extern "C" void solve({sig}) {{
{_dims_decl(v)}    st_stride<<<ck_grid({total}, 256, 8), 256>>>({names});
}}
"""
    tile = _TILE[v.dim]
    halo = {c: tile[c] + 2 * v.radius for c in v.coords}
    tile_size = 1
    for c in v.coords:
        tile_size *= halo[c]
    hx = halo["x"]
    hy = halo.get("y", 1)
    block_dims = {"x": "threadIdx.x", "y": "threadIdx.y", "z": "threadIdx.z"}
    block_ids = {"x": "blockIdx.x", "y": "blockIdx.y", "z": "blockIdx.z"}
    nthreads = 1
    for c in v.coords:
        nthreads *= tile[c]
    origin = "".join(f"    int o{c} = {block_ids[c]} * {tile[c]};\n" for c in v.coords)
    local = "".join(f"        int l{c} = " + {"x": f"k % {hx}", "y": f"(k / {hx}) % {hy}",
                                                 "z": f"k / ({hx} * {hy})"}[c] + ";\n" for c in v.coords)
    if v.dim == 2:
        local = local.replace(f"(k / {hx}) % {hy}", f"k / {hx}")
    gl = ", ".join(f"o{c} + l{c} - {v.radius}" for c in v.coords)
    sizes_args = ", ".join(_SIZES[c] for c in reversed(v.coords))
    own = "".join(f"    int {c} = o{c} + {block_dims[c]};\n" for c in v.coords)
    inside = " && ".join(f"{c} < {_SIZES[c]}" for c in v.coords)
    tflat = {1: "{x}", 2: f"({{y}}) * {hx} + ({{x}})", 3: f"(({{z}}) * {hy} + ({{y}})) * {hx} + ({{x}})"}[v.dim]
    taccess = "tile[" + tflat + "]"
    tcoords = "".join(f"    int t{c} = {block_dims[c]} + {v.radius};\n" for c in v.coords)
    tsum = stencil_sum(v, taccess, "    ", {c: f"t{c}" for c in v.coords})
    grid = ", ".join(f"({_SIZES[c]} + {tile[c] - 1}) / {tile[c]}" for c in reversed(v.coords))
    block = ", ".join(str(tile[c]) for c in reversed(v.coords))
    tiled = helpers + f"""
#define TILE_ELEMS {tile_size}

// The block's {" x ".join(str(tile[c]) for c in reversed(v.coords))} outputs plus a halo of {v.radius} are
// staged in shared memory (boundary rule applied while loading), then every neighbour read hits the tile.
__global__ void st_tiled({sig_r}) {{
    __shared__ {d.c} tile[TILE_ELEMS];
{_dims_decl(v)}{origin}    int tid = {"threadIdx.x" if v.dim == 1 else
                 "threadIdx.x + threadIdx.y * blockDim.x" if v.dim == 2 else
                 "threadIdx.x + (threadIdx.y + threadIdx.z * blockDim.y) * blockDim.x"};
    for (int k = tid; k < TILE_ELEMS; k += {nthreads}) {{
{local}        tile[k] = st_value(in, {sizes_args}, {gl});
    }}
    __syncthreads();
{own}    if (!({inside})) return;
{tcoords}{tsum}{_assign(v, "    ", "s")}}}

extern "C" void solve({sig}) {{
{_dims_decl(v)}    dim3 grid({grid});
    dim3 block({block});
    st_tiled<<<grid, block>>>({names});
}}
"""
    return [impl("naive", "naive", 1, naive, "one thread per point, boundary checks on every neighbour read"),
            impl("grid_stride", "grid_stride", 2, stride,
                 "grid-stride loop with a check-free interior path and __ldg read-only loads"),
            impl("shared_tiled", "shared_tiled", 3, tiled,
                 f"{' x '.join(str(tile[c]) for c in reversed(v.coords))} output tile plus halo staged in shared "
                 "memory, neighbours read from the tile")]


def _describe(v: Variant, tolerance: dict[str, float]) -> tuple[str, str]:
    d = DTYPES[v.dtype]
    layout = {1: "in and out are contiguous arrays of n elements; point x is in[x].",
              2: "in and out are row-major ny x nx grids; point (y, x) is in[y * nx + x].",
              3: "in and out are contiguous nz x ny x nx grids; point (z, y, x) is in[(z * ny + y) * nx + x]."}[v.dim]
    offs = ", ".join(f"d{c}" for c in v.coords)
    if v.shape == "box" or v.dim == 1:
        shape = (f"The stencil is the full {'x'.join([str(2 * v.radius + 1)] * v.dim)} neighbourhood: every offset "
                 f"({offs}) with each component in [-{v.radius}, {v.radius}] ({v.points} points).")
        order = (f"in lexicographic order of ({offs}), each from -{v.radius} to {v.radius}"
                 + (" (the last component fastest)" if v.dim > 1 else ""))
    else:
        shape = (f"The stencil is a {v.dim}-D star of radius {v.radius}: the centre plus the points at distance "
                 f"1..{v.radius} along each axis ({v.points} points).")
        axes = ", then ".join(f"the {c} axis" for c in reversed(v.coords))
        order = (f"centre first, then {axes}, each axis's offsets in the order -{v.radius}..-1, 1..{v.radius}")
    weights = {
        "mean": f"out is the plain average: the sum of the {v.points} neighbour values times 1/{v.points}.",
        "dist": "each neighbour at offset o is weighted by 1 / (1 + |o|_1) (|o|_1 = sum of the absolute offset "
                "components, so the centre has weight 1); out is the weighted sum (not normalised).",
        "array": f"the weights come from the array w of {v.points} {d.c} values (device memory), one per offset "
                 f"in this order: {order}; out is the weighted sum.",
    }[v.weights]
    boundary = {
        "skip": f"Points closer than {v.radius} to any edge (some neighbour would be outside the grid) are not "
                "computed: out copies in at those points.",
        "clamp": "Neighbours outside the grid read the nearest edge value (each coordinate clamped to its range).",
        "zero": "Neighbours outside the grid count as 0.",
    }[v.boundary]
    sizes = {1: "n", 2: "nx and ny", 3: "nx, ny and nz"}[v.dim]
    title = f"{v.dim}-D {v.shape} stencil, radius {v.radius}, {v.weights} weights, {v.boundary} boundary ({d.c})"
    text = (f"Apply a {v.dim}-D stencil to {d.c} data. {layout} {shape} {weights} {boundary} in and out are "
            f"distinct; out is uninitialised on entry and every point must be written. {sizes} are >= 1 and "
            f"arbitrary (not multiples of any tile size). Outputs are compared with |got - ref| <= "
            f"{tolerance['atol']:g} * max|ref| + {tolerance['rtol']:g} * |ref| (any summation order is accepted).")
    return title, text


def build(v: Variant, family_seed: int) -> GeneratedTask:
    d = DTYPES[v.dtype]
    total = _total(v)
    params = [param("in", d.c, "in", total, "uniform(-1, 1)")]
    if v.weights == "array":
        params.append(param("w", d.c, "in", str(v.points), "uniform(-0.5, 1)"))
    params += [param("out", d.c, "out", total), *_size_params(v)]
    tolerance = tol_for(d, "accum")
    title, description = _describe(v, tolerance)
    configs = [{"name": name, **cfg} for name, cfg in zip(("small", "large"), _CONFIGS[v.dim], strict=True)]
    weight_bytes = f" + {d.size * v.points}" if v.weights == "array" else ""
    return make_task(
        family=FAMILY, family_seed=family_seed, task_id=v.task_id, category="stencil", title=title,
        description=description, reference=_reference(v, params), impls=_impls(v, params), params=params,
        configs=configs,
        metrics={"flops": f"{2 * v.points} * {total}", "bytes": f"{2 * d.size} * {total}{weight_bytes}"},
        tolerance=tolerance, timing=[dict(_TIMING[v.dim])],
        variant={"dim": v.dim, "radius": v.radius, "shape": v.shape, "weights": v.weights, "boundary": v.boundary,
                 "dtype": v.dtype, "points": v.points},
        tags=["stencil"] + (["compute-bound"] if v.points > 100 else ["memory-bound"]))


def variants() -> list[Variant]:
    out = []
    for dtype in ("float", "double"):
        for dim in (1, 2, 3):
            for shape in (("line",) if dim == 1 else ("star", "box")):
                for radius in (1, 2, 3, 4):
                    for weights in ("mean", "dist", "array"):
                        for boundary in ("skip", "clamp", "zero"):
                            out.append(Variant(dim, radius, shape, weights, boundary, dtype))
    return out


@family(FAMILY, kind="c2cuda", category="stencil")
def generate(seed: int) -> Iterator[GeneratedTask]:
    """1-D/2-D/3-D star and box stencils of radius 1–4: mean, distance or array weights; skip/clamp/zero
    boundaries; float/double."""
    for v in variants():
        yield build(v, seed)
