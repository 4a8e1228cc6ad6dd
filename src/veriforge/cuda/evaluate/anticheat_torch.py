"""Static anti-cheat for PyTorch→CUDA candidates, on the candidate's Python AST.

The candidate's ``forward`` must get its numbers from custom CUDA. Everything that would let it
get them elsewhere is refused with a reason: the reference ``Model``, torch compute operators
(``torch.nn.functional``, ``torch.matmul``, ``@``, tensor methods such as ``.sum()``), try/except
fallbacks to such code, monkey-patching of torch/time/the harness, side streams, precision
changes the task does not allow, and tensor subclasses. Allocation and shape operations stay
allowed (``empty``, ``empty_like``, ``zeros``, ``view``, ``reshape``, ``contiguous``, ``size``...).
"""

from __future__ import annotations

import ast

__all__ = ["ALLOWED_TENSOR_METHODS", "ALLOWED_TORCH_FUNCTIONS", "scan_torch"]

ALLOWED_TORCH_FUNCTIONS = {
    "empty", "empty_like", "zeros", "zeros_like", "empty_strided", "tensor", "as_tensor", "from_numpy",
    "manual_seed", "no_grad", "inference_mode", "device", "Size", "is_tensor", "numel", "dtype",
    "float32", "float64", "int32", "int64", "uint8", "int8", "int16", "bool", "float", "long", "int",
    "float16", "half", "bfloat16", "Tensor",
}
ALLOWED_TENSOR_METHODS = {
    "view", "reshape", "contiguous", "size", "numel", "dim", "stride", "is_contiguous", "data_ptr",
    "element_size", "nelement", "new_empty", "unsqueeze", "squeeze", "flatten", "view_as", "expand",
    "permute", "transpose", "t", "item", "storage_offset", "get_device", "unflatten", "chunk", "split",
    "narrow", "select", "unbind", "as_strided", "detach", "requires_grad_", "to", "cpu", "cuda", "float",
    "copy_", "zero_", "fill_",
    # nn.Module API used in __init__ to create / register parameters
    "register_buffer", "register_parameter", "parameters", "named_parameters", "state_dict",
    "load_state_dict", "modules", "children", "apply", "__init__", "eval", "train", "append", "items",
    "keys", "values", "get", "extend", "update", "format", "join", "startswith", "endswith", "replace",
}
_COMPUTE_MODULES = {"F", "functional", "nn", "linalg", "fft", "special", "sparse", "_C", "ops", "distributions"}
_PATCH_TARGETS = {"torch", "time", "os", "sys", "builtins", "veriforge", "numpy", "np", "gc", "importlib",
                  "inspect", "ctypes", "threading", "timeit"}
_FORBIDDEN_IMPORTS = {"ctypes", "subprocess", "importlib", "inspect", "builtins", "gc", "threading",
                      "multiprocessing", "signal", "pickle", "marshal", "socket", "sys", "os", "pathlib",
                      "time", "timeit", "triton", "cupy", "numba", "jax", "tensorflow"}
_DOWNGRADES = {"half", "bfloat16", "float16", "to_sparse", "double"}
_DTYPE_NAMES = {"half": "float16", "float16": "float16", "bfloat16": "bfloat16", "float64": "float64",
                "double": "float64", "float8_e4m3fn": "float8", "float8_e5m2": "float8"}


class _Scanner(ast.NodeVisitor):
    def __init__(self, allowed_dtypes: set[str]) -> None:
        self.findings: list[str] = []
        self.allowed = allowed_dtypes
        self.torch_names: set[str] = {"torch"}
        self.functional: set[str] = set()
        self.in_forward = 0
        self.in_init = 0  # parameter creation (torch.randn, nn.init) is allowed in __init__
        self.nn_names: set[str] = set()
        self.forward_args: set[str] = set()

    def add(self, node: ast.AST, text: str) -> None:
        msg = f"line {getattr(node, 'lineno', '?')}: {text}"
        if msg not in self.findings:
            self.findings.append(msg)

    # imports -------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            root = alias.name.split(".")[0]
            if root in _FORBIDDEN_IMPORTS:
                self.add(node, f"imports {alias.name}, which candidates may not use")
            if alias.name == "torch":
                self.torch_names.add(alias.asname or "torch")
            if alias.name == "torch.nn" and alias.asname:
                self.nn_names.add(alias.asname)
            if alias.name.startswith("torch.nn.functional"):
                self.functional.add(alias.asname or alias.name)
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        root = mod.split(".")[0]
        if root in _FORBIDDEN_IMPORTS:
            self.add(node, f"imports from {mod}, which candidates may not use")
        if mod.startswith("torch.utils.cpp_extension"):
            pass  # KernelBench load_inline candidates (GPU back-end only)
        elif mod == "torch.nn" and any(a.name == "functional" for a in node.names):
            self.functional.update(a.asname or a.name for a in node.names if a.name == "functional")
        elif mod.startswith("torch") and mod not in ("torch", "torch.nn"):
            self.add(node, f"imports from {mod}: torch compute operators cannot be used by a candidate")
        elif mod == "torch":
            self.nn_names.update(a.asname or a.name for a in node.names if a.name == "nn")
            for a in node.names:
                if a.name not in ALLOWED_TORCH_FUNCTIONS and a.name not in ("nn",):
                    self.add(node, f"imports torch.{a.name}: torch compute operators cannot be used by a candidate")
        if mod.startswith("veriforge") and mod != "veriforge.cuda.torchbind":
            self.add(node, f"imports from {mod}: candidates may only use veriforge.cuda.torchbind")
        for a in node.names:
            if a.name in ("Model", "reference", "get_inputs"):
                self.add(node, f"imports {a.name} (the reference is not available to candidates)")
        self.generic_visit(node)

    # structure -----------------------------------------------------------------------------
    def visit_Try(self, node: ast.Try) -> None:
        self.add(node, "try/except in a candidate (fallbacks that hide a failing kernel are not allowed)")
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        forward = node.name == "forward"
        init = node.name == "__init__"
        self.in_init += init
        self.in_forward += forward
        saved = self.forward_args
        if forward:
            self.forward_args = {a.arg for a in node.args.args[1:]}
        self.generic_visit(node)
        self.in_forward -= forward
        self.in_init -= init
        self.forward_args = saved

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            text = ast.unparse(base)
            if text.endswith("Tensor") or "Tensor" in text.split(".")[-1]:
                self.add(node, f"class {node.name} subclasses {text} (lazy/subclassed tensor outputs are not allowed)")
            if text.split(".")[-1] == "Model":
                self.add(node, f"class {node.name} derives from the reference Model")
        if any(isinstance(d, ast.FunctionDef) and d.name == "__torch_function__" for d in node.body):
            self.add(node, f"class {node.name} defines __torch_function__ (tensor subclass tricks)")
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        self.add(node, "`global` statement (state shared across calls, e.g. cached outputs, is not allowed)")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check_patch(target, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_patch(node.target, node)
        self.generic_visit(node)

    def _check_patch(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, ast.Attribute):
            root = target
            while isinstance(root, ast.Attribute):
                root = root.value  # type: ignore[assignment]
            if isinstance(root, ast.Name) and (root.id in _PATCH_TARGETS or root.id in self.torch_names):
                self.add(node, f"assigns to {ast.unparse(target)} (monkey-patching {root.id} is not allowed)")

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.MatMult):
            self.add(node, "uses the @ operator (torch matmul) instead of a custom kernel")
        elif self.in_forward and any(isinstance(side, ast.Name) and side.id in self.forward_args
                                     for side in (node.left, node.right)):
            self.add(node, f"computes `{ast.unparse(node)}` with torch operators on an input tensor in forward")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in ("Model", "get_inputs", "get_init_inputs") and isinstance(node.ctx, ast.Load):
            self.add(node, f"refers to {node.id} (the reference is not available to candidates)")
        if node.id in ("eval", "exec", "compile", "__import__", "globals", "setattr", "getattr", "vars",
                       "open", "breakpoint") and isinstance(node.ctx, ast.Load):
            self.add(node, f"uses {node.id}() (dynamic code, reflection and file access are not allowed)")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain = _chain(node)
        if chain and chain[0] in self.nn_names:
            chain = ["torch", "nn", *chain[1:]]
        if chain and chain[0] in self.torch_names:
            rest = chain[1:]
            if rest and rest[0] in _COMPUTE_MODULES and not (rest[0] == "nn" and len(rest) >= 2 and
                                                             rest[1] in ("Module", "Parameter", "Linear",
                                                                         "Conv2d", "Conv1d", "Conv3d",
                                                                         "BatchNorm2d", "LayerNorm",
                                                                         "Embedding", "ModuleList", "init",
                                                                         "GroupNorm", "ConvTranspose2d",
                                                                         "BatchNorm1d", "InstanceNorm2d",
                                                                         "ParameterList")):
                if not (rest[0] == "nn" and len(rest) == 1):
                    self.add(node, f"uses {'.'.join(chain)}: torch compute operators cannot be used by a candidate")
            elif rest and rest[0] == "cuda" and len(rest) > 1 and rest[1] in ("Stream", "stream", "streams",
                                                                             "set_stream"):
                self.add(node, f"uses {'.'.join(chain)} (side streams the timer may not wait for are not allowed)")
            elif len(rest) == 1 and rest[0] in _DTYPE_NAMES and _DTYPE_NAMES[rest[0]] not in self.allowed:
                self.add(node, f"uses {'.'.join(chain)}: precision {_DTYPE_NAMES[rest[0]]} is not allowed by "
                               f"this task (allowed: {', '.join(sorted(self.allowed))})")
            elif len(rest) == 1 and rest[0] not in ALLOWED_TORCH_FUNCTIONS and rest[0] not in ("nn", "cuda") \
                    and not rest[0][0].isupper() and not self.in_init:
                self.add(node, f"uses {'.'.join(chain)}: torch compute operators cannot be used by a candidate")
        if chain and chain[0] in self.functional:
            self.add(node, f"uses {'.'.join(chain)} (torch.nn.functional)")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            chain = _chain(func)
            is_torch = bool(chain) and chain[0] in self.torch_names
            name = func.attr
            if not is_torch and self.in_forward and name not in ALLOWED_TENSOR_METHODS and \
                    not _is_extension_call(func):
                if name in _DOWNGRADES and _DTYPE_NAMES.get(name, name) not in self.allowed:
                    self.add(node, f"calls .{name}() (a precision change this task does not allow)")
                else:
                    self.add(node, f"calls .{name}() in forward: tensor compute methods cannot replace the "
                                   f"custom kernel (allowed: allocation and shape operations)")
            if name == "to" and self.in_forward:
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    text = ast.unparse(arg)
                    for dt, norm in _DTYPE_NAMES.items():
                        if text.endswith(dt) and norm not in self.allowed:
                            self.add(node, f"converts to {text} (a precision change this task does not allow)")
        elif isinstance(func, ast.Name) and func.id in self.functional:
            self.add(node, f"calls {func.id} (torch.nn.functional)")
        if self.in_forward:
            for kw in node.keywords:
                if kw.arg == "dtype":
                    text = ast.unparse(kw.value)
                    for dt, norm in _DTYPE_NAMES.items():
                        if text.endswith(dt) and norm not in self.allowed:
                            self.add(node, f"allocates dtype {text} (a precision change this task does not allow)")
        self.generic_visit(node)


def _chain(node: ast.AST) -> list[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return []


def _is_extension_call(func: ast.Attribute) -> bool:
    """``_ext.relu(...)``-style calls into the loaded CUDA extension (a module-level name)."""
    root = func.value
    return isinstance(root, ast.Name) and (root.id.startswith("_") or root.id.endswith(("ext", "_module", "_mod",
                                                                                       "cuda", "kernels", "lib")))


def scan_torch(source: str, allowed_dtypes: list[str] | tuple[str, ...] = ("float32",)) -> list[str]:
    """Reasons to reject the Python candidate ``source`` without running it."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return [f"line {exc.lineno}: the candidate is not valid Python: {exc.msg}"]
    scanner = _Scanner(set(allowed_dtypes))
    scanner.visit(tree)
    if not any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body):
        scanner.findings.append("defines no class ModelNew")
    if "load_cuda" not in source and "load_inline" not in source:
        scanner.findings.append("calls no custom CUDA (neither veriforge.cuda.torchbind.load_cuda nor load_inline)")
    return scanner.findings
