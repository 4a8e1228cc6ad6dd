"""Static anti-cheat for PyTorch→CUDA candidates, on the candidate's Python AST.

The candidate's ``forward`` must get its numbers from custom CUDA. Everything that would let it
get them elsewhere is refused with a reason: the reference ``Model``, torch compute operators
(``torch.nn.functional``, ``torch.matmul``, ``torch.ops.aten``, ``@``, tensor methods such as
``.sum()``, operator dunders such as ``x.__add__``), arithmetic and comparisons on tensors, host-side
compute (NumPy/SciPy, ``.item()``/``float()``/iteration over a tensor), try/except fallbacks,
monkey-patching of torch/time/the harness, side streams, precision changes the task does not allow,
tensor subclasses, and dynamic code (``eval``, ``__import__``, ``getattr`` with a computed name,
``globals()``, ``__dict__``, ``__class__``...). Allocation and shape operations stay allowed
(``empty``, ``empty_like``, ``zeros``, ``view``, ``reshape``, ``contiguous``, ``size``...).

Names are resolved, not matched: ``import torch as T``, ``from torch import matmul as mm``,
``mm = torch.matmul``, ``getattr(torch, "matmul")`` all resolve to ``torch.matmul``; modules may not
be used as values at all (``T = torch``, ``f(torch)``, ``[torch.nn.functional]``). The rules apply to
*every* function, method, lambda and class in the module, not only ``forward`` - a helper holds the
same rules as the code that calls it. The one relaxation is ``__init__``, where parameter creation
(``torch.randn``, ``nn.Linear(...)``, ``nn.init.*``, ``.uniform_()``) is allowed. Which values are
tensors is inferred by a small data-flow pass (``forward``'s arguments, what is computed from them,
what helpers receive from them), so arithmetic on sizes (``x.size(0) // 256``) stays allowed.

The CUDA/C++ sources handed to ``load_cuda``/``load_inline`` must be static strings; they are checked
with the C scanner's source-hygiene rules (no ``system``/``fopen``/``dlsym``..., no ``#include`` of
files outside the standard headers, no ``##``), and ``torch::``/``at::`` compute calls inside them are
refused too. Compiler/linker flags are limited to an allowlist.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from typing import Any

from veriforge.core import pyparse as _pyparse

__all__ = ["ALLOWED_TENSOR_METHODS", "ALLOWED_TORCH_FUNCTIONS", "scan_torch"]

ALLOWED_TORCH_FUNCTIONS = {
    "empty", "empty_like", "zeros", "zeros_like", "empty_strided", "tensor", "as_tensor", "from_numpy",
    "manual_seed", "no_grad", "inference_mode", "device", "Size", "is_tensor", "numel", "dtype",
    "float32", "float64", "int32", "int64", "uint8", "int8", "int16", "bool", "float", "long", "int",
    "float16", "half", "bfloat16", "Tensor", "contiguous_format", "preserve_format", "channels_last",
    "channels_last_3d", "strided", "finfo", "iinfo", "get_default_dtype", "is_floating_point",
}
ALLOWED_TENSOR_METHODS = {
    "view", "reshape", "contiguous", "size", "numel", "dim", "stride", "is_contiguous", "data_ptr",
    "element_size", "nelement", "new_empty", "unsqueeze", "squeeze", "flatten", "view_as", "expand",
    "permute", "transpose", "t", "item", "storage_offset", "get_device", "unflatten", "chunk", "split",
    "narrow", "select", "unbind", "as_strided", "detach", "requires_grad_", "to", "cpu", "cuda", "float",
    "copy_", "zero_", "fill_", "new_zeros", "new_ones", "new_full", "expand_as", "reshape_as", "movedim",
    "swapaxes", "swapdims",
    # nn.Module API used in __init__ to create / register parameters
    "register_buffer", "register_parameter", "parameters", "named_parameters", "state_dict",
    "load_state_dict", "modules", "children", "apply", "__init__", "eval", "train", "append", "items",
    "keys", "values", "get", "extend", "update", "format", "join", "startswith", "endswith", "replace",
}
# torch.* names a candidate may use in __init__ only (parameter creation); plus nn.<Layer>(...) and nn.init.*.
_INIT_TORCH_FUNCTIONS = {
    "randn", "rand", "randint", "randn_like", "rand_like", "randint_like", "randperm", "normal", "ones",
    "ones_like", "full", "full_like", "arange", "linspace", "logspace", "eye", "Generator",
}
# In-place initialisers allowed on parameters in __init__.
_INIT_METHODS = {
    "uniform_", "normal_", "zero_", "fill_", "copy_", "random_", "bernoulli_", "exponential_", "geometric_",
    "log_normal_", "cauchy_", "register_module", "add_module",
}
_STRING_METHODS = {
    "format", "join", "replace", "strip", "lstrip", "rstrip", "upper", "lower", "split", "splitlines",
    "startswith", "endswith", "encode", "decode", "partition", "rpartition", "center", "ljust", "rjust", "zfill",
    "count", "find", "index", "format_map", "title", "casefold", "expandtabs", "removeprefix", "removesuffix",
}
_NN_ALWAYS = {"Module", "Parameter", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Buffer"}
_CUDA_OK = {"synchronize", "current_device", "is_available", "device_count", "get_device_name",
            "get_device_properties", "get_device_capability", "current_stream", "default_stream", "device",
            "set_device"}
_CUDA_STREAMS = {"Stream", "stream", "streams", "set_stream", "StreamContext", "ExternalStream", "graph",
                 "CUDAGraph", "graphs", "Event"}
_DOWNGRADES = {"half", "bfloat16", "float16", "to_sparse", "double"}
_DTYPE_NAMES = {"half": "float16", "float16": "float16", "bfloat16": "bfloat16", "float64": "float64",
                "double": "float64", "float8_e4m3fn": "float8", "float8_e5m2": "float8"}
_PATCH_TARGETS = {"torch", "time", "os", "sys", "builtins", "veriforge", "numpy", "np", "gc", "importlib",
                  "inspect", "ctypes", "threading", "timeit", "math"}
_ALLOWED_IMPORT_ROOTS = {"torch", "veriforge", "math", "typing", "typing_extensions", "__future__", "numpy",
                         "scipy", "dataclasses", "enum", "abc", "collections", "warnings"}
_HOST_ARRAY_ROOTS = {"numpy", "scipy"}
# numpy/scipy attributes refused even in __init__ (modules, files, interpreter access).
_HOST_ARRAY_DENIED = {
    "os", "sys", "ctypeslib", "lib", "testing", "distutils", "f2py", "core", "compat", "load", "save", "savez",
    "savez_compressed", "savetxt", "loadtxt", "genfromtxt", "fromfile", "memmap", "fromregex", "DataSource",
    "io", "datasets", "misc", "show_config", "info", "who", "source", "lookfor", "get_include", "tofile",
    "dump", "dumps", "recfromcsv", "recfromtxt", "exec_command", "rec", "char", "emath", "version", "matlib",
    "array_api", "polynomial", "typing", "dtypes", "exceptions", "weave", "LowLevelCallable",
}
# Public names of the other allowed stdlib modules (their other attributes include modules such as typing.sys).
_STDLIB_NAMES = {
    "typing": {"cast", "overload", "final", "no_type_check", "runtime_checkable", "TYPE_CHECKING"},
    "typing_extensions": {"cast", "overload", "final", "runtime_checkable", "TYPE_CHECKING"},
    "dataclasses": {"dataclass", "field", "fields", "asdict", "astuple", "replace", "is_dataclass", "InitVar",
                    "KW_ONLY", "MISSING", "FrozenInstanceError"},
    "enum": {"unique", "auto", "member", "nonmember", "verify"},
    "abc": {"ABC", "ABCMeta", "abstractmethod"},
    "collections": {"namedtuple", "deque", "defaultdict", "OrderedDict", "Counter", "ChainMap", "abc"},
    "warnings": {"warn", "simplefilter", "filterwarnings", "catch_warnings"},
}
_KNOWN_MODULES = {
    "torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.nn.modules", "torch.nn.parameter",
    "torch.nn.utils", "torch.cuda", "torch.cuda.amp", "torch.linalg", "torch.fft", "torch.special", "torch.sparse",
    "torch.ops", "torch.library", "torch.utils", "torch.utils.cpp_extension", "torch.jit", "torch.autograd",
    "torch.backends", "torch.backends.cuda", "torch.backends.cudnn", "torch.distributions", "torch.func",
    "torch.compiler", "torch.overrides", "torch.testing", "torch.amp", "torch.fx", "torch.export", "torch.nested",
    "torch.masked", "torch.random", "torch.hub", "torch.profiler", "torch.multiprocessing", "torch.distributed",
    "torch.onnx", "torch.quantization", "torch.ao", "torch.types", "torch.serialization", "torch.storage",
    "numpy", "scipy", "math", "veriforge", "veriforge.cuda", "veriforge.cuda.torchbind", "typing",
    "dataclasses", "enum", "abc", "collections", "warnings",
}
_LOADERS = {"veriforge.cuda.torchbind.load_cuda", "torch.utils.cpp_extension.load_inline"}
_FORBIDDEN_BUILTINS = {
    "eval": "dynamic code", "exec": "dynamic code", "compile": "dynamic code", "__import__": "dynamic imports",
    "globals": "reflection on module state", "locals": "reflection on local state", "vars": "reflection",
    "open": "file access", "breakpoint": "debugger hooks", "input": "reading the harness's input",
    "setattr": "reflection (attribute assignment by name)", "delattr": "reflection",
    "getattr": "dynamic attribute access with a computed name",
    "type": "reflection on tensors (type(x).sum(x) is tensor compute)", "memoryview": "raw memory access",
    "exit": "ending the process", "quit": "ending the process", "help": "interactive help", "dir": "reflection",
    "super": "",
}
_SAFE_BUILTINS = {
    "int", "float", "bool", "len", "range", "min", "max", "abs", "round", "divmod", "pow", "isinstance",
    "issubclass", "hasattr", "print", "super", "tuple", "list", "dict", "set", "frozenset", "str", "repr",
    "enumerate", "zip", "sorted", "reversed", "any", "all", "sum", "map", "filter", "iter", "next", "slice",
    "format", "hash", "id", "callable", "chr", "ord", "hex", "bin", "oct", "complex", "property",
    "staticmethod", "classmethod", "ascii", "bytes", "bytearray",
    "Exception", "ValueError", "TypeError", "RuntimeError", "NotImplementedError", "AssertionError",
    "KeyError", "IndexError", "AttributeError", "ArithmeticError", "ZeroDivisionError", "OverflowError",
    "StopIteration", "LookupError",
}
# Builtins that, applied to a tensor, compute with torch operators or read its values on the host.
_HOST_BUILTINS = {"sum", "min", "max", "abs", "pow", "round", "divmod", "sorted", "any", "all", "map", "filter",
                  "reversed", "iter", "next", "list", "tuple", "set", "frozenset", "dict", "enumerate", "zip",
                  "float", "int", "bool", "complex", "str", "repr", "format", "ascii", "hash", "bytes",
                  "bytearray", "hex", "oct", "bin", "chr", "ord"}
_NON_TENSOR_BUILTINS = {"len", "int", "float", "bool", "str", "repr", "isinstance", "issubclass", "hasattr",
                        "id", "range", "print", "hash", "callable", "format", "super", "type"}
# Tensor attributes/methods whose result is not a tensor (sizes, flags, pointers).
_NON_TENSOR_ATTRS = {"shape", "dtype", "device", "ndim", "is_cuda", "layout", "requires_grad", "itemsize",
                     "nbytes", "is_leaf", "names", "is_sparse", "is_quantized", "is_meta", "output_nr",
                     "__name__", "__doc__"}
_TENSOR_PROPERTIES = _NON_TENSOR_ATTRS | {"T", "mT", "H", "mH", "data", "grad", "real", "imag", "grad_fn"}
_NON_TENSOR_METHODS = {"size", "numel", "dim", "stride", "is_contiguous", "data_ptr", "element_size",
                       "nelement", "storage_offset", "get_device", "item", "ndimension", "is_floating_point",
                       "is_complex", "__len__", "tolist", "keys"}
_HOST_READ_METHODS = {"item", "tolist", "numpy", "__float__", "__int__", "__bool__", "__index__", "__array__"}
_NON_TENSOR_TORCH = {"is_tensor", "numel", "device", "dtype", "Size", "is_floating_point", "is_complex",
                     "manual_seed", "no_grad", "inference_mode", "get_default_dtype"}
_OPERATOR_DUNDERS = {
    "add", "radd", "iadd", "sub", "rsub", "isub", "mul", "rmul", "imul", "matmul", "rmatmul", "imatmul",
    "truediv", "rtruediv", "itruediv", "floordiv", "rfloordiv", "ifloordiv", "mod", "rmod", "imod", "pow",
    "rpow", "ipow", "neg", "pos", "abs", "invert", "and", "rand", "iand", "or", "ror", "ior", "xor", "rxor",
    "ixor", "lshift", "rlshift", "ilshift", "rshift", "rrshift", "irshift", "lt", "le", "gt", "ge", "eq", "ne",
    "getitem", "setitem", "float", "int", "bool", "index", "round", "trunc", "floor", "ceil", "array", "call",
    "contains", "iter", "len", "divmod", "rdivmod", "complex", "format", "reversed",
}
_MUTATORS = {"append", "extend", "insert", "add", "update", "setdefault", "appendleft", "extendleft", "put",
             "__setitem__", "push", "fromkeys"}
_ALLOWED_DUNDER_ATTRS = {"__init__", "__name__", "__doc__", "__qualname__"}
_LOAD_INLINE_KWARGS = {"name", "cpp_sources", "cuda_sources", "functions", "extra_cflags", "extra_cuda_cflags",
                       "extra_ldflags", "extra_include_paths", "build_directory", "verbose", "with_cuda",
                       "is_python_module", "with_pytorch_error_handling", "keep_intermediates", "use_pch"}
_SAFE_FLAG = re.compile(
    r"^(|-O[0-3s]?|-Ofast|--?use_fast_math|-std=[\w+]+|--std=[\w+]+|-lineinfo|-g|-G|-w|-Wall|-Wextra|-fPIC|"
    r"-arch=\w+|--gpu-architecture=\w+|-gencode=?[\w,=]+|--generate-code=[\w,=\[\]]+|-code=[\w,]+|-D\w+(=[\w.+-]*)?|"
    r"-U\w+|-Xptxas=-v|-Xptxas=-O[0-3]|--ptxas-options=-v|--ptxas-options=-O[0-3]|--expt-relaxed-constexpr|"
    r"--expt-extended-lambda|--extended-lambda|-maxrregcount=\d+|--maxrregcount=\d+|-res-usage|--resource-usage|"
    r"-ftz=(true|false)|-prec-div=(true|false)|-prec-sqrt=(true|false)|-fmad=(true|false)|-march=native|"
    r"-funroll-loops|-ffast-math|-restrict|--restrict|-Xcompiler=-O[0-3]|-Xcompiler=-fPIC|-DNDEBUG)$")
_CPP_TORCH_CALL = re.compile(r"\b(torch|at|c10)\s*::\s*((?:\w+\s*::\s*)*)([a-z_]\w*)\s*(?:<[^;{}()]*>)?\s*\(")
# ATen tensor methods that compute, refused in embedded C++ that uses torch (``a.matmul(b)``, ``x.sum()``).
_CPP_TENSOR_METHOD = re.compile(
    r"\.\s*(matmul|mm|bmm|addmm|baddbmm|addmv|mv|dot|einsum|conv1d|conv2d|conv3d|linear|softmax|log_softmax|relu|"
    r"relu_|gelu|sigmoid|tanh|silu|sum|mean|amax|amin|argmax|argmin|cumsum|cumprod|norm|exp|log|sqrt|rsqrt|pow|"
    r"clamp|clamp_min|clamp_max|clamp_|mul|mul_|add|add_|sub|sub_|div|div_|layer_norm|where|masked_fill|topk|sort|"
    r"index_select|gather|scatter|scatter_add|max|min|abs|neg|reciprocal|prod|var|std|logsumexp|square)\s*\(")
_CPP_TORCH_OK = {
    "empty", "empty_like", "zeros", "zeros_like", "empty_strided", "from_blob", "device", "dtype",
    "getCurrentCUDAStream", "getDefaultCUDAStream", "getCurrentDeviceProperties", "current_device",
    "set_device", "check", "TensorOptions", "scalarTypeToTypeMeta", "elementSize", "typeMetaToScalarType",
    "kFloat", "kCUDA", "size", "is_contiguous", "numel", "stream", "toString", "getDeviceProperties",
    "ones", "ones_like", "full", "full_like", "get_device", "device_of",
}


def _stdlib_ok(q: str) -> bool:
    parts = q.split(".")
    if parts[0] == "collections" and len(parts) >= 2 and parts[1] == "abc":
        return len(parts) == 2 or (len(parts) == 3 and parts[2][:1].isupper())
    if len(parts) != 2:
        return len(parts) == 1
    name = parts[1]
    if parts[0] in ("typing", "typing_extensions", "enum") and name[:1].isupper():
        return True
    return name in _STDLIB_NAMES.get(parts[0], set())


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


class _GetattrLiteral(ast.NodeTransformer):
    """``getattr(obj, "name")`` → ``obj.name`` (so it is resolved and checked like the attribute);
    ``getattr(obj, "name", default)`` → ``obj.name or default``. Computed names stay calls (refused)."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "getattr" and not node.keywords and \
                len(node.args) in (2, 3) and isinstance(node.args[1], ast.Constant) and \
                isinstance(node.args[1].value, str) and not isinstance(node.args[0], ast.Starred):
            attr = ast.copy_location(ast.Attribute(value=node.args[0], attr=node.args[1].value, ctx=ast.Load()), node)
            if len(node.args) == 2:
                return attr
            return ast.copy_location(ast.BoolOp(op=ast.Or(), values=[attr, node.args[2]]), node)
        return node


_Scope = ast.AST  # ast.Module, ast.FunctionDef, ast.AsyncFunctionDef or ast.Lambda
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


class _Module:
    """Facts about the whole candidate: scopes, aliases, local definitions, extensions, tensor flow."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.parent: dict[int, ast.AST] = {}
        self.scope: dict[int, _Scope] = {}
        self.enclosing: dict[int, _Scope | None] = {id(tree): None}
        self.owner_class: dict[int, ast.ClassDef | None] = {}  # function → class it is a method of
        self.class_ctx: dict[int, ast.ClassDef | None] = {}  # node → innermost class whose method it is in
        self.nodes: list[ast.AST] = []
        self._annotate(tree, tree, None)
        self.aliases: dict[str, set[str]] = {}  # name → everything it may stand for, in any scope
        self.scoped_aliases: dict[tuple[int, str], set[str]] = {}
        self.imported_modules: set[str] = set()
        self.defs: dict[str, list[ast.AST]] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.assigns: dict[str, list[ast.AST | None]] = {}
        self.bound: dict[int, set[str]] = {}  # scope → names bound in it
        self.attr_stores: dict[str, list[ast.AST | None]] = {}
        self._collect()
        self._resolve_aliases()
        self.ext_names: set[str] = set()
        self.ext_attrs: set[str] = set()
        self.ext_module_names: set[str] = set()
        self.ext_module_attrs: set[str] = set()
        self.instance_attrs: dict[str, set[str]] = {}
        self.instance_names: dict[str, set[str]] = {}
        self._find_extensions()
        self.tnames: dict[int, set[str]] = {}
        self._tcache: dict[tuple[int, int], bool] = {}
        self.tattrs: set[str] = set()
        self.treturns: set[int] = set()
        self._tensor_flow()

    # structure ---------------------------------------------------------------------------------
    def _annotate(self, node: ast.AST, scope: _Scope, cls: ast.ClassDef | None) -> None:
        self.scope[id(node)] = scope
        self.class_ctx[id(node)] = cls
        self.nodes.append(node)
        if isinstance(node, _FUNCS):
            outer = [*getattr(node, "decorator_list", []), *node.args.defaults,
                     *[d for d in node.args.kw_defaults if d is not None]]
            if not isinstance(node, ast.Lambda):
                outer += [a.annotation for a in self._params(node) if a.annotation is not None]
                if node.returns is not None:
                    outer.append(node.returns)
            for child in outer:
                self._set_parent(child, node)
                self._annotate(child, scope, cls)
            self.enclosing[id(node)] = scope
            is_method = isinstance(self.parent.get(id(node)), ast.ClassDef)
            self.owner_class[id(node)] = self.parent[id(node)] if is_method else None  # type: ignore[assignment]
            inner_cls = self.owner_class[id(node)] or cls
            for a in self._params(node):
                self._set_parent(a, node)
                self.scope[id(a)] = node
                self.class_ctx[id(a)] = inner_cls
                self.nodes.append(a)
            body = node.body if isinstance(node.body, list) else [node.body]
            for child in body:
                self._set_parent(child, node)
                self._annotate(child, node, inner_cls)
            return
        for child in ast.iter_child_nodes(node):
            self._set_parent(child, node)
            self._annotate(child, scope, cls)

    def _set_parent(self, child: ast.AST, parent: ast.AST) -> None:
        self.parent[id(child)] = parent

    @staticmethod
    def _params(fn: ast.AST) -> list[ast.arg]:
        a = fn.args  # type: ignore[attr-defined]
        out = [*a.posonlyargs, *a.args, *a.kwonlyargs]
        if a.vararg:
            out.append(a.vararg)
        if a.kwarg:
            out.append(a.kwarg)
        return out

    def kind(self, scope: _Scope) -> str:
        """``"module"`` (module level and class bodies), ``"init"`` (a method ``__init__``) or ``"code"``."""
        if isinstance(scope, ast.Module):
            return "module"
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) and scope.name == "__init__" and \
                self.owner_class.get(id(scope)) is not None:
            return "init"
        if isinstance(scope, ast.FunctionDef) and scope.name in ("get_inputs", "get_init_inputs") and \
                self.enclosing.get(id(scope)) is self.tree:
            return "init"  # KernelBench files often carry the reference's input makers along (never called)
        return "code"

    def scope_of(self, node: ast.AST) -> _Scope:
        return self.scope.get(id(node), self.tree)

    def scope_chain(self, scope: _Scope | None) -> Iterator[_Scope]:
        while scope is not None:
            yield scope
            scope = self.enclosing.get(id(scope))

    # names -------------------------------------------------------------------------------------
    def _bind(self, table: dict[str, list[ast.AST | None]], name: str, value: ast.AST | None,
              where: ast.AST | None = None) -> None:
        table.setdefault(name, []).append(value)
        if table is self.assigns and where is not None:
            self.bound.setdefault(id(self.scope_of(where)), set()).add(name)

    def _bind_target(self, target: ast.AST, value: ast.AST | None) -> None:
        if isinstance(target, ast.Name):
            self._bind(self.assigns, target.id, value, target)
        elif isinstance(target, ast.Attribute):
            self._bind(self.attr_stores, target.attr, value)
        elif isinstance(target, ast.Tuple | ast.List):
            values = value.elts if isinstance(value, ast.Tuple | ast.List) and \
                len(value.elts) == len(target.elts) else [None] * len(target.elts)
            for t, v in zip(target.elts, values, strict=True):
                self._bind_target(t, v)
        elif isinstance(target, ast.Starred):
            self._bind_target(target.value, None)

    def _collect(self) -> None:
        for node in self.nodes:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self._alias(a.asname, node, {a.name})
                        self._bind(self.assigns, a.asname, None, node)
                    else:
                        root = a.name.split(".")[0]
                        self._alias(root, node, {root})
                        self._bind(self.assigns, root, None, node)
                    parts = a.name.split(".")
                    self.imported_modules.update(".".join(parts[:k]) for k in range(1, len(parts) + 1))
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for a in node.names:
                    if a.name == "*":
                        continue
                    q = f"{node.module}.{a.name}"
                    self._alias(a.asname or a.name, node, {q})
                    self._bind(self.assigns, a.asname or a.name, None, node)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.defs.setdefault(node.name, []).append(node)
                self._bind(self.assigns, node.name, node, node)
            elif isinstance(node, ast.ClassDef):
                self.defs.setdefault(node.name, []).append(node)
                self.classes[node.name] = node
                self._bind(self.assigns, node.name, node, node)
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    self._bind_target(t, node.value)
                    if isinstance(t, ast.Name) and isinstance(node.value, ast.Lambda):
                        self.defs.setdefault(t.id, []).append(node.value)
            elif isinstance(node, ast.AnnAssign | ast.NamedExpr):
                if node.value is not None:
                    self._bind_target(node.target, node.value)
            elif isinstance(node, ast.AugAssign):
                self._bind_target(node.target, None)
            elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
                self._bind_target(node.target, None)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                self._bind_target(node.optional_vars, None)
            elif isinstance(node, ast.arg):
                self._bind(self.assigns, node.arg, None, node)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self._bind(self.assigns, node.name, None, node)
            elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
                self._bind(self.assigns, node.name, None, node)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                self._bind(self.assigns, node.rest, None, node)

    def _resolve_aliases(self) -> None:
        for _ in range(10):
            changed = False
            for node in self.nodes:
                pairs: list[tuple[ast.AST, ast.AST]] = []
                if isinstance(node, ast.Assign):
                    pairs = [(t, node.value) for t in node.targets]
                elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
                    pairs = [(node.target, node.value)]
                for target, value in pairs:
                    for t, v in self._pairs(target, value):
                        changed |= self._alias(t.id, t, self.resolve(v))
            if not changed:
                break

    def _alias(self, name: str, where: ast.AST, qs: set[str]) -> bool:
        """Record that ``name``, bound in the scope of ``where``, may stand for the qualified names ``qs``."""
        key = (id(self.scope_of(where)), name)
        if not qs or qs <= self.scoped_aliases.get(key, set()):
            return False
        self.scoped_aliases.setdefault(key, set()).update(qs)
        self.aliases.setdefault(name, set()).update(qs)
        return True

    def _pairs(self, target: ast.AST, value: ast.AST) -> Iterator[tuple[ast.Name, ast.AST]]:
        if isinstance(target, ast.Name):
            yield target, value
        elif isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List) and \
                len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts, strict=True):
                yield from self._pairs(t, v)

    def resolve(self, node: ast.AST) -> set[str]:
        """Qualified names (``torch.nn.functional.relu``) an expression may stand for."""
        if isinstance(node, ast.Name):
            for s in self.scope_chain(self.scope_of(node)):  # the innermost scope that binds the name
                if node.id in self.bound.get(id(s), ()):
                    return set(self.scoped_aliases.get((id(s), node.id), ()))
            return set()
        if isinstance(node, ast.Attribute):
            return {f"{q}.{node.attr}" for q in self.resolve(node.value)}
        if isinstance(node, ast.NamedExpr):
            return self.resolve(node.value)
        return set()

    def is_module(self, q: str) -> bool:
        return q in _KNOWN_MODULES or q in self.imported_modules or q.startswith("torch.ops")

    # local definitions -------------------------------------------------------------------------
    def class_methods(self, cls: ast.ClassDef, seen: set[str] | None = None) -> dict[str, ast.AST]:
        seen = seen or set()
        seen.add(cls.name)
        out: dict[str, ast.AST] = {}
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in self.classes and base.id not in seen:
                out.update(self.class_methods(self.classes[base.id], seen))
        for item in cls.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                out[item.name] = item
        return out

    def defined_only(self, name: str) -> bool:
        """``name`` is only ever bound to functions, lambdas and classes defined in the candidate."""
        values = self.assigns.get(name, [])
        return bool(values) and all(isinstance(v, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef |
                                               ast.Lambda) for v in values)

    def instance_classes(self, node: ast.AST) -> set[str]:
        """Local classes an expression (a name or attribute only ever bound to ``Cls(...)``) is an instance of."""
        if isinstance(node, ast.Attribute):
            return self.instance_attrs.get(node.attr, set())
        if isinstance(node, ast.Name):
            return self.instance_names.get(node.id, set())
        return set()

    def loose_callees(self, call_func: ast.AST, scope: _Scope) -> list[tuple[ast.AST, int]]:
        """Like :meth:`local_callees`, plus every local method of that name (for tensor flow only)."""
        out = self.local_callees(call_func, scope)
        if isinstance(call_func, ast.Attribute):
            for cls in self.classes.values():
                m = self.class_methods(cls).get(call_func.attr)
                if m is not None and all(m is not fn for fn, _ in out):
                    out.append((m, 1))
        return out

    def local_callees(self, call_func: ast.AST, scope: _Scope) -> list[tuple[ast.AST, int]]:
        """Local functions a call surely runs, with how many leading parameters the call does not fill."""
        out: list[tuple[ast.AST, int]] = []
        cls = self.class_ctx.get(id(call_func))
        if isinstance(call_func, ast.Name) and self.defined_only(call_func.id):
            for d in self.defs.get(call_func.id, []):
                if isinstance(d, ast.ClassDef):
                    init = self.class_methods(d).get("__init__")
                    if init is not None:
                        out.append((init, 1))
                else:
                    out.append((d, 0))
        elif isinstance(call_func, ast.Name) and self.instance_classes(call_func):
            for cname in self.instance_classes(call_func):
                methods = self.class_methods(self.classes[cname])
                out.extend((methods[c], 1) for c in ("forward", "__call__") if c in methods)
        elif isinstance(call_func, ast.Attribute):
            recv, name = call_func.value, call_func.attr
            if isinstance(recv, ast.Name) and recv.id in ("self", "cls") and cls is not None:
                m = self.class_methods(cls).get(name)
                if m is not None and name not in self.attr_stores:
                    out.append((m, 1))
            elif isinstance(recv, ast.Call) and isinstance(recv.func, ast.Name) and recv.func.id == "super" \
                    and cls is not None:
                for base in cls.bases:
                    if isinstance(base, ast.Name) and base.id in self.classes:
                        m = self.class_methods(self.classes[base.id]).get(name)
                        if m is not None:
                            out.append((m, 1))
            elif isinstance(recv, ast.Name) and recv.id in self.classes and \
                    not any(v is not self.classes[recv.id] for v in self.assigns.get(recv.id, [])):
                m = self.class_methods(self.classes[recv.id]).get(name)
                if m is not None:
                    out.append((m, 0))
            elif self.instance_classes(recv):
                for cname in self.instance_classes(recv):
                    m = self.class_methods(self.classes[cname]).get(name)
                    if m is not None:
                        out.append((m, 1))
            if name in self.instance_attrs and not out:
                for cname in self.instance_attrs[name]:
                    methods = self.class_methods(self.classes[cname])
                    for callee in ("forward", "__call__"):
                        if callee in methods:
                            out.append((methods[callee], 1))
        return out

    # extensions --------------------------------------------------------------------------------
    def is_loader_call(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and bool(self.resolve(node.func) & _LOADERS)

    def is_ext_module(self, node: ast.AST | None) -> bool:
        """The object ``load_cuda``/``load_inline`` returned (or a name/attribute only ever bound to one)."""
        if isinstance(node, ast.Name):
            return node.id in self.ext_module_names
        if isinstance(node, ast.Attribute):
            return node.attr in self.ext_module_attrs
        return self.is_loader_call(node) if node is not None else False

    def is_ext(self, node: ast.AST | None) -> bool:
        """The loaded CUDA extension or one of its functions (``_ext.relu``, ``_ext["relu"]``, ``self.fn``)."""
        if node is None:
            return False
        if self.is_ext_module(node):
            return True
        if isinstance(node, ast.Name):
            return node.id in self.ext_names
        if isinstance(node, ast.Attribute):
            return node.attr in self.ext_attrs or (self.is_ext_module(node.value) and not node.attr.startswith("_"))
        if isinstance(node, ast.Subscript):
            return self.is_ext_module(node.value) and isinstance(node.slice, ast.Constant)
        return False

    def _find_extensions(self) -> None:
        for _ in range(10):
            before = (self.ext_module_names, self.ext_module_attrs, self.ext_names, self.ext_attrs)
            self.ext_module_names = {n for n, vals in self.assigns.items()
                                     if vals and all(v is not None and self.is_ext_module(v) for v in vals)}
            self.ext_module_attrs = {a for a, vals in self.attr_stores.items()
                                     if vals and all(v is not None and self.is_ext_module(v) for v in vals)}
            self.ext_names = {n for n, vals in self.assigns.items() if vals and all(self.is_ext(v) for v in vals)}
            self.ext_attrs = {a for a, vals in self.attr_stores.items() if vals and all(self.is_ext(v) for v in vals)}
            if before == (self.ext_module_names, self.ext_module_attrs, self.ext_names, self.ext_attrs):
                break
        for table, out in ((self.attr_stores, self.instance_attrs), (self.assigns, self.instance_names)):
            for key, vals in table.items():
                classes: set[str] = set()
                for v in vals:
                    if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in self.classes and \
                            self.defined_only(v.func.id):
                        classes.add(v.func.id)
                    else:
                        classes = set()
                        break
                if classes:
                    out[key] = classes

    # tensor flow -------------------------------------------------------------------------------
    def tensor_name(self, name: str, scope: _Scope) -> bool:
        return any(name in self.tnames.get(id(s), ()) for s in self.scope_chain(scope))

    def is_tensor(self, node: ast.AST | None, scope: _Scope) -> bool:
        """Whether ``node`` may evaluate to a tensor derived from the inputs (or torch compute)."""
        if node is None:
            return False
        key = (id(node), id(scope))
        if key not in self._tcache:
            self._tcache[key] = False  # recursion guard
            self._tcache[key] = self._is_tensor(node, scope)
        return self._tcache[key]

    def _is_tensor(self, node: ast.AST, scope: _Scope) -> bool:
        if isinstance(node, ast.Name):
            return self.tensor_name(node.id, scope)
        if isinstance(node, ast.Attribute):
            if node.attr in self.tattrs:
                return True
            return node.attr not in _NON_TENSOR_ATTRS and self.is_tensor(node.value, scope)
        if isinstance(node, ast.Subscript):
            return self.is_tensor(node.value, scope)
        if isinstance(node, ast.Constant | ast.Lambda | ast.JoinedStr):
            return False
        if isinstance(node, ast.Call):
            args = [*node.args, *(k.value for k in node.keywords)]
            any_arg = any(self.is_tensor(a, scope) for a in args)
            func = node.func
            qs = self.resolve(func)
            if qs:
                if any(q.startswith("torch.") for q in qs) and self.kind(scope) == "code":
                    return not all(q.split(".")[-1] in _NON_TENSOR_TORCH or q.startswith("torch.cuda.")
                                   for q in qs)
                if any(q.split(".")[0] in _HOST_ARRAY_ROOTS for q in qs) and self.kind(scope) == "code":
                    return True
                return any_arg
            if self.is_ext(func):
                return True
            if any(id(fn) in self.treturns for fn, _ in self.loose_callees(func, scope)):
                return True
            if isinstance(func, ast.Attribute) and self.is_tensor(func.value, scope):
                return func.attr not in _NON_TENSOR_METHODS
            if isinstance(func, ast.Name) and func.id in _NON_TENSOR_BUILTINS and func.id not in self.assigns:
                return False
            return any_arg or self.is_tensor(func, scope)
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            elts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            return any(self.is_tensor(e, scope) for e in elts) or \
                any(self.is_tensor(g.iter, scope) for g in node.generators)
        return any(self.is_tensor(c, scope) for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr))

    def _mark(self, target: ast.AST, scope: _Scope) -> bool:
        if isinstance(target, ast.Name):
            home = next((s for s in self.scope_chain(scope) if target.id in self.bound.get(id(s), ())), scope)
            names = self.tnames.setdefault(id(home), set())
            if target.id not in names:
                names.add(target.id)
                return True
            return False
        if isinstance(target, ast.Attribute):
            if target.attr not in self.tattrs:
                self.tattrs.add(target.attr)
                return True
            return False
        if isinstance(target, ast.Subscript):
            return self._mark(target.value, scope)
        if isinstance(target, ast.Starred):
            return self._mark(target.value, scope)
        if isinstance(target, ast.Tuple | ast.List):
            return any([self._mark(t, scope) for t in target.elts])
        return False

    def _mark_params(self, fn: ast.AST, skip: int, which: Iterable[int | str] | None) -> bool:
        a = fn.args  # type: ignore[attr-defined]
        positional = [*a.posonlyargs, *a.args]
        params = self._params(fn)
        chosen: list[ast.arg] = []
        if which is None:
            chosen = positional[skip:] + [p for p in params if p not in positional]
        else:
            for w in which:
                if isinstance(w, int):
                    k = w + skip
                    if k < len(positional):
                        chosen.append(positional[k])
                    elif a.vararg:
                        chosen.append(a.vararg)
                else:
                    hit = [p for p in params if p.arg == w]
                    chosen.extend(hit or ([a.kwarg] if a.kwarg else []))
        changed = False
        for p in chosen:
            names = self.tnames.setdefault(id(fn), set())
            if p.arg not in names:
                names.add(p.arg)
                changed = True
        return changed

    def _tensor_flow(self) -> None:
        for node in self.nodes:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and \
                    node.name in ("forward", "__call__") and self.owner_class.get(id(node)) is not None:
                self._mark_params(node, 1, None)
            elif isinstance(node, ast.Lambda):
                self._mark_params(node, 0, None)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                    not (isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod", "property"))
                    for d in node.decorator_list):
                self._mark_params(node, 1 if self.owner_class.get(id(node)) else 0, None)
        for rounds in range(1000):
            if rounds == 100:  # a long chain of helpers: assume every helper takes and returns tensors
                for node in self.nodes:
                    if isinstance(node, _FUNCS):
                        skip = 1 if self.owner_class.get(id(node)) else 0
                        self._mark_params(node, skip, None)
                        self.treturns.add(id(node))
                self._tcache.clear()
            changed = False
            for node in self.nodes:
                if self._flow_step(node):
                    self._tcache.clear()
                    changed = True
            if not changed:
                break
        self._tcache.clear()

    def _flow_step(self, node: ast.AST) -> bool:
        scope = self.scope_of(node)
        t = self.is_tensor
        changed = False
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Tuple | ast.List) and isinstance(node.value, ast.Tuple | ast.List) and \
                        len(target.elts) == len(node.value.elts):
                    for tt, vv in zip(target.elts, node.value.elts, strict=True):
                        if t(vv, scope):
                            changed |= self._mark(tt, scope)
                elif t(node.value, scope):
                    changed |= self._mark(target, scope)
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr):
            if node.value is not None and t(node.value, scope):
                changed |= self._mark(node.target, scope)
        elif isinstance(node, ast.AugAssign):
            if t(node.value, scope):
                changed |= self._mark(node.target, scope)
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            if t(node.iter, scope):
                changed |= self._mark(node.target, scope)
        elif isinstance(node, ast.Match):
            if t(node.subject, scope):
                for case in node.cases:
                    for sub in ast.walk(case.pattern):
                        name = getattr(sub, "name", None) or getattr(sub, "rest", None)
                        if isinstance(name, str):
                            changed |= self._mark(ast.Name(id=name, ctx=ast.Store()), scope)
        elif isinstance(node, ast.withitem):
            if node.optional_vars is not None and t(node.context_expr, scope):
                changed |= self._mark(node.optional_vars, scope)
        elif isinstance(node, ast.Return | ast.Yield | ast.YieldFrom):
            fn = scope
            if node.value is not None and t(node.value, scope) and id(fn) not in self.treturns:
                self.treturns.add(id(fn))
                changed = True
        elif isinstance(node, ast.Lambda):
            if t(node.body, node) and id(node) not in self.treturns:
                self.treturns.add(id(node))
                changed = True
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _MUTATORS and not self.is_ext(func) and \
                    any(self.is_tensor(a.value if isinstance(a, ast.Starred) else a, scope)
                        for a in [*node.args, *(k.value for k in node.keywords)]):
                changed |= self._mark(func.value, scope)  # lst.append(x): lst now holds a tensor
            callees = self.loose_callees(node.func, scope)
            if callees:
                which: list[int | str] | None = []
                for k, arg in enumerate(node.args):
                    if isinstance(arg, ast.Starred):
                        if t(arg.value, scope):
                            which = None
                            break
                    elif t(arg, scope):
                        which.append(k)  # type: ignore[union-attr]
                if which is not None:
                    for kw in node.keywords:
                        if t(kw.value, scope):
                            if kw.arg is None:
                                which = None
                                break
                            which.append(kw.arg)
                if which is None or which:
                    for fn, skip in callees:
                        changed |= self._mark_params(fn, skip, which)
        elif isinstance(node, ast.Name | ast.Attribute) and isinstance(getattr(node, "ctx", None), ast.Load):
            parent = self.parent.get(id(node))
            if not (isinstance(parent, ast.Call) and parent.func is node) and \
                    not (isinstance(parent, ast.Attribute) and parent.value is node):
                for fn, skip in self.loose_callees(node, scope):  # a function passed around as a value
                    changed |= self._mark_params(fn, skip, None)
        return changed


class _Scanner:
    def __init__(self, mod: _Module, allowed_dtypes: set[str]) -> None:
        self.m = mod
        self.allowed = allowed_dtypes
        self.findings: list[tuple[int, str]] = []

    def add(self, node: ast.AST | int, text: str) -> None:
        line = node if isinstance(node, int) else getattr(node, "lineno", 0)
        if (line, text) not in self.findings:
            self.findings.append((line, text))

    def run(self) -> None:
        for node in self.m.nodes:
            method = getattr(self, f"visit_{type(node).__name__}", None)
            if method is not None:
                method(node)

    # helpers -------------------------------------------------------------------------------------
    def scope(self, node: ast.AST) -> _Scope:
        return self.m.scope_of(node)

    def kind(self, node: ast.AST) -> str:
        return self.m.kind(self.scope(node))

    def tensor(self, node: ast.AST | None, at: ast.AST) -> bool:
        return self.m.is_tensor(node, self.scope(at))

    def where(self, node: ast.AST) -> str:
        scope = self.scope(node)
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            return f" in {scope.name}()"
        if isinstance(scope, ast.Lambda):
            return " in a lambda"
        return " at module level"

    def is_receiver(self, node: ast.AST) -> bool:
        parent = self.m.parent.get(id(node))
        return isinstance(parent, ast.Attribute) and parent.value is node

    def is_callee(self, node: ast.AST) -> bool:
        parent = self.m.parent.get(id(node))
        return isinstance(parent, ast.Call) and parent.func is node

    def local_name(self, name: str) -> bool:
        return self.m.defined_only(name) or name in self.m.instance_names

    # imports -------------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_import(node, alias.name, f"imports {alias.name}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        if node.level:
            self.add(node, f"relative import from {'.' * node.level}{mod}, which candidates may not use")
            return
        if not self._check_import(node, mod, f"imports from {mod}"):
            return
        for a in node.names:
            if a.name in ("Model", "reference", "get_inputs", "get_init_inputs"):
                self.add(node, f"imports {a.name} (the reference is not available to candidates)")
            if a.name == "*":
                self.add(node, f"`from {mod} import *` hides which names are used; import names explicitly")
                continue
            q = f"{mod}.{a.name}"
            if a.name.startswith("_"):
                self.add(node, f"imports {q}: private names (starting with '_') are not allowed")
                continue
            if q.startswith("torch.") and not self.m.is_module(q):
                reason = self._torch_reason(q, "init")
                if reason:
                    self.add(node, reason.replace(f"uses {q}", f"imports {q}", 1))
            elif q.startswith("veriforge.") and q != "veriforge.cuda.torchbind.load_cuda" and \
                    not self.m.is_module(q):
                self.add(node, f"imports {q}: candidates may only use veriforge.cuda.torchbind.load_cuda")
            elif q.split(".")[0] in _STDLIB_NAMES and not _stdlib_ok(q):
                self.add(node, f"imports {q}: only the public classes and functions of {mod} are allowed")
            elif q.split(".")[0] in _HOST_ARRAY_ROOTS and any(p in _HOST_ARRAY_DENIED for p in q.split(".")[1:]):
                self.add(node, f"imports {q}: NumPy/SciPy file, process and interpreter helpers are not allowed")

    def _check_import(self, node: ast.AST, name: str, what: str) -> bool:
        parts = name.split(".")
        if any(p.startswith("_") for p in parts) and name != "__future__":
            self.add(node, f"{what}: private modules (a name starting with '_', such as torch._C or _thread) "
                           f"are not allowed")
            return False
        if parts[0] not in _ALLOWED_IMPORT_ROOTS:
            if parts[0] == "reference":
                self.add(node, f"{what}: the reference is not available to candidates")
            else:
                self.add(node, f"{what}, which candidates may not use (allowed imports: torch, "
                               f"veriforge.cuda.torchbind, math, typing; numpy/scipy only to initialise parameters)")
            return False
        if parts[0] == "veriforge" and name not in ("veriforge", "veriforge.cuda", "veriforge.cuda.torchbind"):
            self.add(node, f"{what}: candidates may only use veriforge.cuda.torchbind")
            return False
        return True

    # structure -----------------------------------------------------------------------------------
    def visit_Try(self, node: ast.Try) -> None:
        self.add(node, "try/except in a candidate (fallbacks that hide a failing kernel are not allowed)")

    visit_TryStar = visit_Try

    def visit_Global(self, node: ast.Global) -> None:
        self.add(node, "`global` statement (state shared across calls, e.g. cached outputs, is not allowed)")

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.add(node, "`nonlocal` statement (state shared across calls is not allowed)")

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            texts = {ast.unparse(base), *self.m.resolve(base)}
            if any(t.split(".")[-1].endswith("Tensor") for t in texts):
                self.add(node, f"class {node.name} subclasses {ast.unparse(base)} (lazy/subclassed tensor outputs "
                               f"are not allowed)")
            if any(t.split(".")[-1] == "Model" for t in texts):
                self.add(node, f"class {node.name} derives from the reference Model")
        for kw in node.keywords:
            self.add(node, f"class {node.name} passes {kw.arg}= to its definition (metaclasses and class "
                           f"keywords are not allowed)")
        for item in node.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and \
                    item.name in ("__torch_function__", "__torch_dispatch__"):
                self.add(node, f"class {node.name} defines {item.name} (tensor subclass tricks)")

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name in ("__torch_function__", "__torch_dispatch__") and not self.m.owner_class.get(id(node)):
            self.add(node, f"defines {node.name} (tensor subclass tricks)")

    visit_AsyncFunctionDef = visit_FunctionDef

    # names ---------------------------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            return
        name = node.id
        if name in ("Model", "get_inputs", "get_init_inputs"):
            self.add(node, f"refers to {name} (the reference is not available to candidates)")
        if name in _FORBIDDEN_BUILTINS and _FORBIDDEN_BUILTINS[name] and not self.local_name(name) \
                and name not in self.m.aliases:
            if name == "getattr":
                self.add(node, "uses getattr() with a computed attribute name (dynamic attribute access is not "
                               "allowed; write obj.name)")
            elif name == "object" and not self.is_callee(node) and \
                    isinstance(self.m.parent.get(id(node)), ast.ClassDef):
                pass  # class X(object)
            else:
                self.add(node, f"uses {name}() ({_FORBIDDEN_BUILTINS[name]}; dynamic code, reflection and file "
                               f"access are not allowed)")
        elif _is_dunder(name) and name != "__name__":
            self.add(node, f"uses {name} (interpreter internals and reflection are not allowed)")
        if not self.is_receiver(node):
            self._check_qualified(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        if _is_dunder(attr) and attr not in _ALLOWED_DUNDER_ATTRS:
            if attr[2:-2] in _OPERATOR_DUNDERS:
                self.add(node, f"uses {ast.unparse(node)}: operator dunder methods (x.__add__, x.__matmul__...) "
                               f"are torch compute; the work must be done by the custom kernel")
            else:
                self.add(node, f"accesses {ast.unparse(node)} (reflection through __dict__, __class__, "
                               f"__globals__, __subclasses__... is not allowed)")
        if isinstance(node.ctx, ast.Store | ast.Del):
            self._check_patch(node)
            return
        if self.is_receiver(node):
            return
        if self._check_qualified(node):
            return
        if not self.is_callee(node) and attr not in _TENSOR_PROPERTIES and attr not in self.m.tattrs and \
                not _is_dunder(attr) and self.tensor(node.value, node) and not self.m.is_ext(node):
            self.add(node, f"uses `{ast.unparse(node)[:60]}` on a tensor-derived value without calling it (bound "
                           f"tensor methods are torch compute; only shape/dtype/device attributes are allowed)")

    def _check_patch(self, target: ast.Attribute) -> None:
        root: ast.AST = target
        while isinstance(root, ast.Attribute | ast.Subscript):
            root = root.value
        if not isinstance(root, ast.Name):
            return
        qs = self.m.resolve(root)
        if root.id in _PATCH_TARGETS or any(self.m.is_module(q) or q.startswith("torch.") for q in qs):
            self.add(target, f"assigns to {ast.unparse(target)} (monkey-patching {root.id} is not allowed)")

    def _check_qualified(self, node: ast.AST) -> bool:
        """Rules for a name that resolves to a module-level object (``torch.X``, ``numpy.X``...)."""
        qs = self.m.resolve(node)
        if not qs:
            return False
        kind = self.kind(node)
        for q in sorted(qs):
            root = q.split(".")[0]
            reason = ""
            if root == "torch":
                reason = self._torch_reason(q, kind)
            elif root in _HOST_ARRAY_ROOTS and any(p in _HOST_ARRAY_DENIED for p in q.split(".")[1:]):
                reason = f"uses {q}: NumPy/SciPy file, process and interpreter helpers are not allowed"
            elif root in _HOST_ARRAY_ROOTS and kind != "init" and q not in _KNOWN_MODULES:
                reason = (f"uses {q}{self.where(node)}: host-side NumPy/SciPy compute cannot replace the custom "
                          f"kernel (NumPy/SciPy may only initialise parameters in __init__)")
            elif root in _STDLIB_NAMES and len(q.split(".")) > 1 and not _stdlib_ok(q):
                reason = (f"uses {q}: only the public classes and functions of {root} are allowed (not the modules "
                          f"it imports)")
            elif root == "veriforge" and q not in ("veriforge.cuda.torchbind.load_cuda", "veriforge.cuda",
                                                   "veriforge.cuda.torchbind", "veriforge"):
                reason = f"uses {q}: candidates may only use veriforge.cuda.torchbind.load_cuda"
            elif any(p.startswith("_") for p in q.split(".")[1:]):
                reason = f"uses {q}: private names (starting with '_') are not allowed"
            if reason:
                self.add(node, reason)
            elif self.m.is_module(q) and not self.is_receiver(node) and not self.is_callee(node):
                self.add(node, f"uses the module {q} as a value (aliasing or passing modules around hides what "
                               f"is called; write torch.empty(...) etc. directly)")
        return True

    def _torch_reason(self, q: str, kind: str) -> str:
        parts = q.split(".")
        rest = parts[1:]
        compute = f"uses {q}: torch compute operators cannot be used by a candidate (allowed: allocation, dtypes " \
                  f"and shape operations; the work must be done by the custom kernel)"
        if not rest:
            return ""
        if any(p.startswith("_") and p not in _ALLOWED_DUNDER_ATTRS for p in rest):
            return f"uses {q}: private torch internals (torch._C, torch._ops, names starting with '_') are not allowed"
        head = rest[0]
        if len(rest) == 1:
            if head in _DTYPE_NAMES and _DTYPE_NAMES[head] not in self.allowed:
                return (f"uses {q}: precision {_DTYPE_NAMES[head]} is not allowed by this task (allowed: "
                        f"{', '.join(sorted(self.allowed))})")
            if head in ALLOWED_TORCH_FUNCTIONS or head in ("nn", "cuda", "utils"):
                return ""
            if kind == "init" and head in _INIT_TORCH_FUNCTIONS:
                return ""
            if head in ("compile", "jit", "autocast", "vmap", "func", "fx", "export", "library", "ops"):
                return (f"uses {q}: torch.compile/torch.jit/torch.ops/torch.library generate or call torch "
                        f"operators; the work must be done by the custom kernel")
            if head in ("backends", "set_default_dtype", "set_float32_matmul_precision", "use_deterministic_algorithms",
                        "set_num_threads", "set_flush_denormal", "set_printoptions"):
                return f"uses {q}: changing torch's global settings is not allowed"
            return compute
        if head == "Tensor":
            if len(rest) == 2 and (rest[1] in ALLOWED_TENSOR_METHODS or rest[1] in _TENSOR_PROPERTIES):
                return ""
            return f"uses {q}: tensor methods called through the class are torch compute (allowed: allocation " \
                   f"and shape methods)"
        if head == "nn":
            sub = rest[1]
            if len(rest) == 2 and sub in _NN_ALWAYS:
                return ""
            if rest[:3] in (["nn", "Module", "__init__"], ["nn", "Module", "register_buffer"],
                            ["nn", "Module", "register_parameter"]):
                return ""
            if kind == "init" and (sub == "init" or (len(rest) == 2 and sub[:1].isupper())):
                return ""
            if sub == "functional":
                return f"uses {q} (torch.nn.functional): torch compute operators cannot be used by a candidate"
            if len(rest) == 2 and sub[:1].isupper():
                return (f"uses {q}{'' if kind == 'code' else ' outside __init__'}: torch layers may only be created "
                        f"in __init__ to hold parameters, never called; the work must be done by the custom kernel")
            return compute
        if head == "cuda":
            sub = rest[1]
            if sub in _CUDA_STREAMS:
                return f"uses {q} (side streams and events the timer may not wait for are not allowed)"
            if len(rest) == 2 and sub in _CUDA_OK:
                return ""
            return f"uses {q}: only torch.cuda.synchronize/current_device/is_available/... are allowed"
        if head == "utils" and len(rest) >= 2 and rest[1] == "cpp_extension":
            if len(rest) == 2 or (len(rest) == 3 and rest[2] == "load_inline"):
                return ""
            if len(rest) == 3 and rest[2] == "load":
                return f"uses {q}: compiling files from disk is not allowed; pass the source to load_inline"
            return f"uses {q}: only torch.utils.cpp_extension.load_inline is allowed"
        if head in ("backends",):
            return f"uses {q}: changing torch's global settings is not allowed"
        if head in ("jit", "ops", "library", "compiler", "fx", "export", "func"):
            return (f"uses {q}: torch.compile/torch.jit/torch.ops/torch.library generate or call torch operators; "
                    f"the work must be done by the custom kernel")
        return compute

    # calls ---------------------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        kind = self.kind(node)
        args = [*node.args, *(k.value for k in node.keywords)]
        tensor_args = [a for a in args if self.tensor(a.value if isinstance(a, ast.Starred) else a, node)]
        qs = self.m.resolve(func)
        if self.m.is_loader_call(node):
            self._check_loader(node, qs)
        elif qs:
            if tensor_args and any(q.split(".")[0] not in ("torch", "veriforge", "typing", "typing_extensions")
                                   for q in qs):
                self.add(node, f"applies {ast.unparse(func)}() to a tensor{self.where(node)} (host-side or operator "
                               f"compute; the work must be done by the custom kernel)")
        elif self.m.is_ext(func):
            pass
        elif isinstance(func, ast.Attribute):
            self._method_call(node, func, kind)
        elif isinstance(func, ast.Name):
            name = func.id
            if self.local_name(name) or name in self.m.ext_names:
                pass
            elif name in _SAFE_BUILTINS:
                if name in _HOST_BUILTINS and tensor_args:
                    self.add(node, f"applies {name}() to a tensor{self.where(node)} (reads tensor values on the "
                                   f"host or computes with torch operators; the work must be done by the custom "
                                   f"kernel)")
            elif name not in _FORBIDDEN_BUILTINS and name not in self.m.aliases:
                self.add(node, f"calls {name}(){self.where(node)}, which is neither the custom kernel, a function "
                               f"defined in the candidate nor an allowed builtin")
        else:
            self.add(node, f"calls the result of an expression (`{ast.unparse(func)[:60]}`){self.where(node)}: call "
                           f"the kernel or a helper by name (layers and operators may not be called)")
        if kind != "init":
            for kw in node.keywords:
                if kw.arg == "dtype":
                    self._check_dtype_text(node, ast.unparse(kw.value), "allocates dtype")

    def _method_call(self, node: ast.Call, func: ast.Attribute, kind: str) -> None:
        name = func.attr
        recv = func.value
        if _is_dunder(name) and name not in _ALLOWED_DUNDER_ATTRS:
            return  # reported by visit_Attribute
        if self.m.local_callees(func, self.scope(node)):
            return
        if isinstance(recv, ast.Call) and isinstance(recv.func, ast.Name) and recv.func.id == "super":
            return
        recv_tensor = self.tensor(recv, node)
        if name in _STRING_METHODS and not recv_tensor and \
                any(self.tensor(a, node) for a in [*node.args, *(k.value for k in node.keywords)]):
            self.add(node, f"calls .{name}() with a tensor argument{self.where(node)}: formatting tensor values as "
                           f"text (reading them on the host) is not allowed")
            return
        if name in _HOST_READ_METHODS and recv_tensor and kind != "init":
            self.add(node, f"calls .{name}(){self.where(node)}: reading tensor values on the host (host-side "
                           f"computation) is not allowed")
            return
        if name == "to" and kind != "init":
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                self._check_dtype_text(node, ast.unparse(arg), "converts to")
        allowed = name in ALLOWED_TENSOR_METHODS or (kind == "init" and name in _INIT_METHODS) or \
            (kind == "module" and name in _STRING_METHODS and not recv_tensor)
        if allowed:
            return
        if name in _DOWNGRADES and _DTYPE_NAMES.get(name, name) not in self.allowed:
            self.add(node, f"calls .{name}() (a precision change this task does not allow)")
        elif name in _DOWNGRADES and name != "to_sparse":
            return
        else:
            self.add(node, f"calls .{name}(){self.where(node)}: tensor compute methods (and calls on layers or other "
                           f"objects) cannot replace the custom kernel (allowed: allocation and shape operations, "
                           f"the loaded extension, methods defined in the candidate)")

    def _check_dtype_text(self, node: ast.AST, text: str, what: str) -> None:
        for dt, norm in _DTYPE_NAMES.items():
            if text.endswith(dt) and norm not in self.allowed:
                self.add(node, f"{what} {text} (a precision change this task does not allow)")
                return

    # tensor arithmetic ---------------------------------------------------------------------------
    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.MatMult):
            self.add(node, "uses the @ operator (torch matmul) instead of a custom kernel")
        elif self.tensor(node.left, node) or self.tensor(node.right, node):
            self.add(node, f"computes `{ast.unparse(node)[:80]}` with torch operators on a tensor{self.where(node)} "
                           f"(the work must be done by the custom kernel)")

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if not isinstance(node.op, ast.Not) and self.tensor(node.operand, node):
            self.add(node, f"computes `{ast.unparse(node)[:80]}` with torch operators on a tensor{self.where(node)}")

    def visit_Compare(self, node: ast.Compare) -> None:
        if all(isinstance(op, ast.Is | ast.IsNot) for op in node.ops):
            return
        if any(self.tensor(x, node) for x in [node.left, *node.comparators]):
            self.add(node, f"computes `{ast.unparse(node)[:80]}` with torch operators on a tensor{self.where(node)}")

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_patch_target(node.target)
        if isinstance(node.op, ast.MatMult):
            self.add(node, "uses the @ operator (torch matmul) instead of a custom kernel")
        elif self.tensor(node.target, node) or self.tensor(node.value, node):
            self.add(node, f"computes `{ast.unparse(node)[:80]}` with torch operators on a tensor{self.where(node)}")

    def _check_patch_target(self, target: ast.AST) -> None:
        if isinstance(target, ast.Attribute):
            self._check_patch(target)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if self.tensor(node.value, node) and self.tensor(node.slice, node):
            self.add(node, f"indexes a tensor with a tensor (`{ast.unparse(node)[:60]}`){self.where(node)}: "
                           f"gather/scatter/masking are torch compute")

    def visit_For(self, node: ast.For) -> None:
        if self.tensor(node.iter, node):
            self.add(node, f"iterates over `{ast.unparse(node.iter)[:60]}` in Python{self.where(node)} (looping over "
                           f"tensor data on the host is not allowed)")

    visit_AsyncFor = visit_For

    def visit_comprehension(self, node: ast.comprehension) -> None:
        if self.tensor(node.iter, node):
            self.add(self.m.parent.get(id(node), node),
                     f"iterates over `{ast.unparse(node.iter)[:60]}` in a comprehension{self.where(node)} (looping "
                     f"over tensor data on the host is not allowed)")

    def visit_FormattedValue(self, node: ast.FormattedValue) -> None:
        if self.tensor(node.value, node):
            self.add(node, f"formats tensor `{ast.unparse(node.value)[:40]}` as text{self.where(node)} (reading tensor "
                           f"values on the host is not allowed)")

    # loaders -------------------------------------------------------------------------------------
    def _check_loader(self, node: ast.Call, qs: set[str]) -> None:
        inline = "torch.utils.cpp_extension.load_inline" in qs
        what = "load_inline" if inline else "load_cuda"
        kwargs = {k.arg: k.value for k in node.keywords if k.arg}
        if any(k.arg is None for k in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args):
            self.add(node, f"passes *args/**kwargs to {what}(): spell out its arguments so they can be checked")
            return
        if inline:
            sources = [kwargs.get("cpp_sources", node.args[1] if len(node.args) > 1 else None),
                       kwargs.get("cuda_sources", node.args[2] if len(node.args) > 2 else None)]
            flags = {k: kwargs.get(k) for k in ("extra_cflags", "extra_cuda_cflags")}
            if len(node.args) > 4:
                flags["extra_cflags"] = node.args[4]
            if len(node.args) > 5:
                flags["extra_cuda_cflags"] = node.args[5]
            for k in kwargs:
                if k not in _LOAD_INLINE_KWARGS:
                    self.add(node, f"passes {k}= to load_inline(), which candidates may not use")
            for k in ("extra_ldflags", "extra_include_paths", "build_directory"):
                value = kwargs.get(k)
                if value is None or (isinstance(value, ast.Constant) and value.value is None):
                    continue
                static = _static(value, self.m)
                items = static if isinstance(static, list) else [static]
                if static is _UNKNOWN or any(x not in ("", None) for x in items):
                    self.add(node, f"passes {k}= to load_inline(): linking libraries, extra include paths and build "
                                   f"directories are not allowed")
        else:
            sources = [kwargs.get("source", node.args[1] if len(node.args) > 1 else None)]
            flags = {"extra_cuda_cflags": kwargs.get("extra_cuda_cflags")}
        for key, value in flags.items():
            if value is None:
                continue
            static = _static(value, self.m)
            if static is _UNKNOWN:
                self.add(node, f"builds {key} for {what}() at run time: pass a literal list of flags")
                continue
            for flag in static if isinstance(static, list) else [static]:
                if not isinstance(flag, str) or not _SAFE_FLAG.match(flag.strip()):
                    self.add(node, f"passes the compiler flag {flag!r} to {what}() (allowed: optimisation, "
                                   f"architecture, -D macros, fast-math and ptxas verbosity flags)")
        for src in sources:
            if src is None or (isinstance(src, ast.Constant) and src.value is None):
                continue
            static = _static(src, self.m)
            if static is _UNKNOWN:
                self.add(node, f"builds the CUDA source for {what}() at run time: pass a string literal (or a name "
                               f"bound once to one) so the source can be checked")
                continue
            texts = static if isinstance(static, list) else [static]
            if not all(isinstance(t, str) for t in texts):
                self.add(node, f"passes a CUDA source to {what}() that is not a string")
                continue
            origin = _literal_origin(src, self.m)
            for text in texts:
                self._scan_embedded(node, origin, text, what)

    def _scan_embedded(self, call: ast.Call, origin: ast.Constant | None, text: str, what: str) -> None:
        from veriforge.cuda.source_reader import blank, line_of

        from .anticheat_c import scan_c_source_hygiene

        base = origin.lineno if origin is not None and origin.value == text else None
        for finding in scan_c_source_hygiene(text, torch_headers=True):
            m = re.match(r"line (\d+): (.*)", finding, re.S)
            inner, msg = (int(m.group(1)), m.group(2)) if m else (1, finding)
            line = base + inner - 1 if base is not None else call.lineno
            self.add(line, f"in the CUDA source passed to {what}(): {msg}")
        stripped = blank(text, splice=True)
        for mm in _CPP_TORCH_CALL.finditer(stripped):
            ns, middle, fname = mm.group(1), mm.group(2), mm.group(3)
            spaces = [p.strip() for p in middle.split("::") if p.strip()]
            if fname in _CPP_TORCH_OK or spaces == ["cuda"]:
                continue
            inner = line_of(text, mm.start())
            line = base + inner - 1 if base is not None else call.lineno
            full = "::".join([ns, *spaces, fname])
            self.add(line, f"in the CUDA source passed to {what}(): calls {full}(), a torch/ATen operator (only "
                           f"allocation such as torch::empty is allowed; the work must be done by your kernels)")
        if re.search(r"\b(torch|at)\s*::|#\s*include\s*<(torch|ATen)/", stripped):
            for mm in _CPP_TENSOR_METHOD.finditer(stripped):
                inner = line_of(text, mm.start())
                line = base + inner - 1 if base is not None else call.lineno
                self.add(line, f"in the CUDA source passed to {what}(): calls the tensor method .{mm.group(1)}() "
                               f"(ATen compute; the work must be done by your kernels)")


class _Unknown:
    pass


_UNKNOWN: Any = _Unknown()


_STATIC_LIMIT = 4_000_000  # characters: a source this large is refused rather than evaluated
_HUGE_WIDTH = re.compile(r"\d{6,}")


def _static(node: ast.AST | None, mod: _Module, depth: int = 0) -> Any:
    """The value of a constant string expression (literals, names bound once, +, %, f-strings, str methods),
    or ``_UNKNOWN``. Memoised per node and size-limited (a candidate cannot make the scan slow or large)."""
    if node is None or depth > 20:
        return _UNKNOWN
    memo: dict[int, Any] = mod.__dict__.setdefault("_static_memo", {})
    if id(node) not in memo:
        memo[id(node)] = _UNKNOWN
        value = _static_eval(node, mod, depth)
        size = sum(len(v) for v in value if isinstance(v, str)) if isinstance(value, list) else \
            len(value) if isinstance(value, str) else 0
        memo[id(node)] = _UNKNOWN if size > _STATIC_LIMIT else value
    return memo[id(node)]


def _static_eval(node: ast.AST, mod: _Module, depth: int) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        values = mod.assigns.get(node.id, [])
        if len(values) != 1 or values[0] is None:
            return _UNKNOWN
        return _static(values[0], mod, depth + 1)
    if isinstance(node, ast.List | ast.Tuple):
        items = [_static(e, mod, depth + 1) for e in node.elts]
        return _UNKNOWN if any(i is _UNKNOWN for i in items) else items
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod | ast.Mult):
        left, right = _static(node.left, mod, depth + 1), _static(node.right, mod, depth + 1)
        if left is _UNKNOWN or right is _UNKNOWN:
            return _UNKNOWN
        try:
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Mult):
                text, count = (left, right) if isinstance(left, str | list) else (right, left)
                if not isinstance(count, int) or len(text) * max(count, 0) > _STATIC_LIMIT:
                    return _UNKNOWN
                return left * right
            if isinstance(left, str) and _HUGE_WIDTH.search(left):
                return _UNKNOWN
            return left % (tuple(right) if isinstance(right, list) else right)
        except Exception:
            return _UNKNOWN
    if isinstance(node, ast.JoinedStr):
        out = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                out.append(str(part.value))
                continue
            assert isinstance(part, ast.FormattedValue)
            value = _static(part.value, mod, depth + 1)
            spec = _static(part.format_spec, mod, depth + 1) if part.format_spec is not None else ""
            if value is _UNKNOWN or spec is _UNKNOWN or _HUGE_WIDTH.search(str(spec)):
                return _UNKNOWN
            conv = {115: str, 114: repr, 97: ascii}.get(part.conversion)
            try:
                out.append(format(conv(value) if conv else value, spec))
            except Exception:
                return _UNKNOWN
        return "".join(out)
    if isinstance(node, ast.Call) and not node.keywords:
        args = [_static(a, mod, depth + 1) for a in node.args]
        if any(a is _UNKNOWN for a in args):
            return _UNKNOWN
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("format", "replace", "join", "strip",
                                                                       "lstrip", "rstrip", "upper", "lower"):
            recv = _static(node.func.value, mod, depth + 1)
            if not isinstance(recv, str) or (_HUGE_WIDTH.search(recv) and node.func.attr == "format"):
                return _UNKNOWN
            if node.func.attr == "replace" and len(args) >= 2 and isinstance(args[1], str) and \
                    len(recv) * (len(args[1]) + 1) > _STATIC_LIMIT:
                return _UNKNOWN
            try:
                return getattr(recv, node.func.attr)(*args)
            except Exception:
                return _UNKNOWN
        if isinstance(node.func, ast.Name) and node.func.id in ("str", "int") and \
                node.func.id not in mod.defs and len(args) == 1:
            try:
                return {"str": str, "int": int}[node.func.id](args[0])
            except Exception:
                return _UNKNOWN
    return _UNKNOWN


def _literal_origin(node: ast.AST, mod: _Module) -> ast.Constant | None:
    """The string literal a source argument comes from, when it is one (for line numbers)."""
    for _ in range(10):
        if isinstance(node, ast.Constant):
            return node
        if isinstance(node, ast.Name):
            values = mod.assigns.get(node.id, [])
            if len(values) == 1 and values[0] is not None:
                node = values[0]
                continue
        return None
    return None


def scan_torch(source: str, allowed_dtypes: list[str] | tuple[str, ...] = ("float32",)) -> list[str]:
    """Reasons to reject the Python candidate ``source`` without running it."""
    try:
        tree = _pyparse.parse(source)
    except SyntaxError as exc:
        return [f"line {exc.lineno}: the candidate is not valid Python: {exc.msg}"]
    try:
        tree = ast.fix_missing_locations(_GetattrLiteral().visit(tree))
        mod = _Module(tree)
        scanner = _Scanner(mod, set(allowed_dtypes))
        scanner.run()
    except RecursionError:
        return ["the candidate is nested too deeply to be checked (very long expression chains or deeply nested "
                "code); simplify it"]
    findings = [f"line {line}: {text}" for line, text in sorted(scanner.findings, key=lambda f: f[0])]
    if not any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body):
        findings.append("defines no class ModelNew")
    if "load_cuda" not in source and "load_inline" not in source:
        findings.append("calls no custom CUDA (neither veriforge.cuda.torchbind.load_cuda nor load_inline)")
    return findings
