"""Adversarial spellings of known cheats: every variant must be refused statically with the expected reason.

The static scans are a courtesy (a fast, readable rejection); containment and the dynamic checks in the
harness are the real barrier. Variants the scans cannot catch are listed in ``KNOWN_EVASIONS`` and marked
``xfail(strict=True)``, so a scan that starts catching one makes the suite say so.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from veriforge.cuda.evaluate.anticheat_c import scan_c
from veriforge.cuda.evaluate.anticheat_torch import scan_torch
from veriforge.cuda.tasks import bundled_tasks, load_task

TEST_TASKS = Path(__file__).parents[1] / "tasks" / "data"

# --- PyTorch candidates ------------------------------------------------------------------------------

_TORCH = '''
import torch
import torch.nn as nn
from veriforge.cuda.torchbind import load_cuda

_ext = load_cuda("relu", r"""
__global__ void k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
extern "C" void relu(const float* x, float* y, int n) { k<<<(n + 255) / 256, 256>>>(x, y, n); }
""")
@TOP@

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
@INIT@
    def forward(self, x):
@BODY@'''


def torch_candidate(body: str, top: str = "", init: str = "") -> str:
    def indent(text: str, n: int) -> str:
        return "\n".join(" " * n + line if line else line for line in text.strip("\n").splitlines()) + "\n"

    return (_TORCH.replace("@TOP@", top.strip("\n") + "\n").replace("@INIT@\n", indent(init, 8) if init else "")
            .replace("@BODY@", indent(body, 8)))


HONEST_BODY = "x = x.contiguous()\ny = torch.empty_like(x)\n_ext.relu(x, y, x.numel())\nreturn y"

# (id, source, expected substring of one finding)
TORCH_VARIANTS: list[tuple[str, str, str]] = [
    ("qualified_functional", torch_candidate("return torch.nn.functional.relu(x)"), "torch.nn.functional.relu"),
    ("aten_op", torch_candidate("return torch.ops.aten.relu.default(x)"), "torch.ops"),
    ("getattr_literal", torch_candidate('return getattr(torch, "relu")(x)'), "torch.relu"),
    ("getattr_built_name", torch_candidate('return getattr(torch, "re" + "lu")(x)'), "getattr"),
    ("getattr_default", torch_candidate('return getattr(torch, "relu", None)(x)'), "torch.relu"),
    ("alias_module_assign", torch_candidate("T = torch\nreturn T.relu(x)"), "module torch as a value"),
    ("alias_module_assign_use", torch_candidate("T = torch\nreturn T.relu(x)"), "uses torch.relu"),
    ("import_as", torch_candidate("return tt.relu(x)", top="import torch as tt"), "torch.relu"),
    ("from_import_as", torch_candidate("return mm(x, x)", top="from torch import matmul as mm"),
     "torch.matmul"),
    ("module_level_alias", torch_candidate("return mm(x, x)", top="mm = torch.matmul"), "torch.matmul"),
    ("tuple_alias", torch_candidate("return b(x)", top="a, b = torch.empty, torch.relu"), "torch.relu"),
    ("walrus_alias", torch_candidate("return (f := torch.relu)(x)"), "torch.relu"),
    ("helper_function", torch_candidate("return _helper(x)",
                                        top="def _helper(t):\n    return t.clamp(min=0)"), ".clamp()"),
    ("helper_arith", torch_candidate("return _helper(x)", top="def _helper(t):\n    return t * (t > 0)"),
     "torch operators"),
    ("helper_class_method", torch_candidate("return Helper().run(x)", top=(
        "class Helper:\n    def run(self, t):\n        return t.relu()")), ".relu()"),
    ("helper_class_init", torch_candidate("return Helper(x).out", top=(
        "class Helper:\n    def __init__(self, t):\n        self.out = t.abs() + t")), "torch operators"),
    ("method_on_self", torch_candidate("return self._compute(x)") .replace(
        "    def forward", "    def _compute(self, t):\n        return t.sigmoid()\n\n    def forward"), ".sigmoid()"),
    ("lambda", torch_candidate("f = lambda t: t * (t > 0)\nreturn f(x)"), "torch operators"),
    ("nested_def", torch_candidate("def g(t):\n    return t.maximum(torch.zeros_like(t))\nreturn g(x)"),
     ".maximum()"),
    ("dunder_matmul", torch_candidate("return x.__matmul__(x)"), "__matmul__"),
    ("dunder_add", torch_candidate("return x.__add__(x)"), "operator dunder"),
    ("type_method", torch_candidate("return type(x).relu(x)"), "type()"),
    ("tensor_class_method", torch_candidate("return torch.Tensor.relu(x)"), "torch.Tensor.relu"),
    ("class_via_dunder", torch_candidate("return x.__class__.relu(x)"), "__class__"),
    ("builtins_import", torch_candidate('return __builtins__["__import__"]("torch").relu(x)'), "__builtins__"),
    ("dunder_import", torch_candidate('return __import__("torch").relu(x)'), "__import__"),
    ("import_builtins", torch_candidate("return x", top="import builtins"), "imports builtins"),
    ("importlib", torch_candidate('return importlib.import_module("torch").relu(x)', top="import importlib"),
     "imports importlib"),
    ("eval", torch_candidate('return eval("torch.relu")(x)'), "eval()"),
    ("exec", torch_candidate('exec("y = x.relu()")\nreturn x'), "exec()"),
    ("compile_builtin", torch_candidate('c = compile("x.relu()", "f", "eval")\nreturn x'), "compile()"),
    ("globals_lookup", torch_candidate('return globals()["torch"].relu(x)'), "globals()"),
    ("vars_lookup", torch_candidate('return vars(torch)["relu"](x)'), "vars()"),
    ("locals_lookup", torch_candidate('return locals()["x"]'), "locals()"),
    ("module_dict", torch_candidate('return torch.__dict__["relu"](x)'), "__dict__"),
    ("subclasses", torch_candidate("return ().__class__.__bases__[0].__subclasses__()"), "__class__"),
    ("func_globals", torch_candidate('return _ext.relu.__globals__["torch"].relu(x)'), "__globals__"),
    ("sys_modules", torch_candidate('return sys.modules["torch"].relu(x)', top="import sys"), "imports sys"),
    ("private_C", torch_candidate("return torch._C._nn.gelu(x)"), "private"),
    ("import_private_C", torch_candidate("return x", top="import torch._C as C"), "private modules"),
    ("import_python_dispatch", torch_candidate("return x", top="from torch.utils import _python_dispatch"),
     "private"),
    ("import_dynamo", torch_candidate("return x", top="import torch._dynamo"), "private modules"),
    ("import_thread", torch_candidate("return x", top="import _thread"), "private modules"),
    ("import_posixsubprocess", torch_candidate("return x", top="import _posixsubprocess"), "private modules"),
    ("import_posix", torch_candidate('posix.system("ls")\nreturn x', top="import posix"), "imports posix"),
    ("import_io", torch_candidate("return x", top="import _io"), "private modules"),
    ("operator_module", torch_candidate("return operator.mul(x, x > 0)", top="import operator"),
     "imports operator"),
    ("from_operator", torch_candidate("return matmul(x, x)", top="from operator import matmul"),
     "imports from operator"),
    ("functools_reduce", torch_candidate("return functools.reduce(torch.maximum, [x, torch.zeros_like(x)])",
                                         top="import functools"), "imports functools"),
    ("numpy_forward", torch_candidate("return torch.from_numpy(np.maximum(x.numpy(), 0))",
                                      top="import numpy as np"), "numpy.maximum"),
    ("numpy_helper", torch_candidate("return _host(x)", top=(
        "import numpy as np\ndef _host(t):\n    return torch.from_numpy(np.clip(t.cpu().numpy(), 0, None))")),
     "numpy.clip"),
    ("scipy", torch_candidate("return torch.from_numpy(special.expit(x.numpy()))",
                              top="from scipy import special"), "scipy.special.expit"),
    ("torch_compile", torch_candidate("return torch.compile(torch.relu)(x)"), "torch.compile"),
    ("torch_jit", torch_candidate("return x", top="@torch.jit.script\ndef f(t):\n    return t.relu()"),
     "torch.jit"),
    ("item_loop", torch_candidate(
        "y = torch.empty_like(x)\nfor i in range(x.numel()):\n    v = x.view(-1)[i].item()\n"
        "    y.view(-1)[i] = v if v > 0 else 0.0\nreturn y"), ".item()"),
    ("iterate_tensor", torch_candidate("return torch.tensor([max(0.0, float(v)) for v in x.view(-1)])"),
     "iterates over"),
    ("float_builtin", torch_candidate("v = float(x[0, 0])\nreturn x"), "applies float()"),
    ("builtin_max", torch_candidate("return max(x, torch.zeros_like(x))"), "applies max()"),
    ("builtin_abs", torch_candidate("return (abs(x) + x) / 2"), "torch operators"),
    ("mask_index", torch_candidate("y = x.clone()\ny[x < 0] = 0\nreturn y"), "torch operators"),
    ("augassign", torch_candidate("y = torch.empty_like(x)\ny.copy_(x)\ny *= 2\nreturn y"), "torch operators"),
    ("unary_neg", torch_candidate("return -(-x)"), "torch operators"),
    ("bound_method_value", torch_candidate("f = x.relu\nreturn f()"), "without calling it"),
    ("layer_call", torch_candidate("return self.act(x)", init="self.act = nn.ReLU()"), ".act()"),
    ("layer_in_forward", torch_candidate("return nn.ReLU()(x)"), "torch.nn.ReLU"),
    ("layer_via_local", torch_candidate("f = self.act\nreturn f(x)", init="self.act = nn.ReLU()"), "calls f()"),
    ("layer_forward_method", torch_candidate("return self.act.forward(x)", init="self.act = nn.ReLU()"),
     ".forward()"),
    ("module_call_dunder", torch_candidate("return nn.Module.__call__(self.act, x)", init="self.act = nn.ReLU()"),
     "__call__"),
    ("init_stores_op", torch_candidate("return self.op(x)", init="self.op = torch.relu"), "torch.relu"),
    ("default_arg_module", torch_candidate("return f(x)", top="def f(t, m=torch):\n    return m.relu(t)"),
     "module torch as a value"),
    ("module_in_list", torch_candidate("return [torch][0].relu(x)"), "module torch as a value"),
    ("monkeypatch_alias", torch_candidate("return x", top="T = torch\nT.allclose = lambda *a, **k: True"),
     "monkey-patching"),
    ("setattr_patch", torch_candidate('setattr(torch, "allclose", None)\nreturn x'), "setattr()"),
    ("subclass_via_alias", torch_candidate("return x", top="Base = torch.Tensor\nclass Lazy(Base):\n    pass"),
     "subclasses"),
    ("metaclass", torch_candidate("return x", top="class M(type):\n    pass\nclass Q(metaclass=M):\n    pass"),
     "metaclass"),
    ("side_stream_alias", torch_candidate("s = cuda_mod.Stream()\nreturn x", top="import torch.cuda as cuda_mod"),
     "side streams"),
    ("half_alias", torch_candidate("return x.to(h)", top="h = torch.float16"), "precision"),
    ("try_in_helper", torch_candidate("return _h(x)", top=(
        "def _h(t):\n    try:\n        return t\n    except Exception:\n        return t.relu()")), "try/except"),
    ("closure_state", torch_candidate("return x", top="def outer():\n    c = 0\n    def inner():\n"
                                      "        nonlocal c\n        c += 1\n    return inner"), "nonlocal"),
    ("reference_import", torch_candidate("return Model()(x)", top="from reference import Model"), "reference"),
    ("open_file", torch_candidate('open("/tmp/answers").read()\nreturn x'), "open()"),
    ("loader_dynamic_source", torch_candidate("return x", top='_e2 = load_cuda("a", "".join(chr(c) for c in [32]))'),
     "at run time"),
    ("loader_system", torch_candidate(HONEST_BODY, top=(
        '_e3 = load_cuda("s", "#include <cstdlib>\\nextern \\"C\\" void f(float* y) { system(\\"ls\\"); }")')),
     "system"),
    ("loader_include_shadow", torch_candidate(HONEST_BODY, top='_e3 = load_cuda("s", "#include </etc/shadow>")'),
     "absolute"),
    ("loader_token_paste", torch_candidate(HONEST_BODY, top=(
        '_e3 = load_cuda("s", "#define J(a, b) a##b\\nextern \\"C\\" void f() { J(sys, tem)(0); }")')),
     "token pasting"),
    ("loader_concat_hidden", torch_candidate(HONEST_BODY, top=(
        '_e3 = load_cuda("s", "extern \\"C\\" void f() { sys" + "tem(0); }")')), "system"),
    ("loader_bad_flag", torch_candidate(HONEST_BODY, top=(
        '_e3 = load_cuda("s", "extern \\"C\\" void f() {}", extra_cuda_cflags=["-include/etc/shadow"])')),
     "compiler flag"),
    ("load_inline_aten", torch_candidate("return self_ext.f(x)", top=(
        "from torch.utils.cpp_extension import load_inline\n"
        'self_ext = load_inline("m", cpp_sources="torch::Tensor f(torch::Tensor x) { return torch::relu(x); }",'
        ' functions=["f"])')), "torch::relu"),
    ("load_inline_method", torch_candidate("return self_ext.f(x)", top=(
        "from torch.utils.cpp_extension import load_inline\n"
        'self_ext = load_inline("m", cpp_sources="torch::Tensor f(torch::Tensor x) { return x.clamp_min(0); }",'
        ' functions=["f"])')), ".clamp_min()"),
    ("load_inline_ldflags", torch_candidate(HONEST_BODY, top=(
        "from torch.utils.cpp_extension import load_inline\n"
        'e = load_inline("m", cpp_sources="", extra_ldflags=["-lcublas"])')), "extra_ldflags"),
    ("cpp_extension_load", torch_candidate(HONEST_BODY, top=(
        "import torch.utils.cpp_extension\n"
        'e = torch.utils.cpp_extension.load("m", sources=["/etc/passwd"])')), "from disk"),
    ("fake_ext_name", torch_candidate("_x = x\nreturn _x.relu()"), ".relu()"),
    ("star_import", torch_candidate("return relu(x)", top="from torch import *"), "import *"),
    # data flow: tensors reaching arithmetic through containers, objects, closures and helpers
    ("helper_object_allowed_name", torch_candidate("h = Helper()\nreturn h.get(x)", top=(
        "class Helper:\n    def get(self, t):\n        return t * 2")), "torch operators"),
    ("module_list_cache", torch_candidate("_CACHE.append(x)\nreturn _h()", top=(
        "_CACHE = []\ndef _h():\n    return _CACHE[0] * 2")), "torch operators"),
    ("module_dict_cache", torch_candidate("_C['x'] = x\nreturn _h()", top="_C = {}\ndef _h():\n    return _C['x'] * 2"),
     "torch operators"),
    ("attr_named_shape", torch_candidate("self.shape = x\nreturn self.shape * 2"), "torch operators"),
    ("local_method_named_size", torch_candidate("return H().size(x) * 2", top=(
        "class H:\n    def size(self, t):\n        return t")), "torch operators"),
    ("name_rebound_to_layer", torch_candidate("f = self.act\nreturn f(x)", top="f = lambda t: t",
                                              init="self.act = nn.ReLU()"), "calls f()"),
    ("format_host_read", torch_candidate('s = "{}".format(x)\nreturn x'), "formatting tensor values"),
    ("dataclass_box", torch_candidate("return B(x).t * 2", top=(
        "from dataclasses import dataclass\n@dataclass\nclass B:\n    t: object")), "torch operators"),
    ("ext_private_attr", torch_candidate("return _ext._build.call('relu', x)"), ".call()"),
    ("identity_helper", torch_candidate("return ident(x) * 2", top="def ident(t):\n    return t"),
     "torch operators"),
    ("kwargs_flow", torch_candidate("return h(t=x)", top="def h(**kw):\n    return kw['t'] + 1"), "torch operators"),
    ("class_attr_store", torch_candidate("Box.v = x\nreturn Box.v + 1", top="class Box:\n    v = None"),
     "torch operators"),
    ("closure_read", torch_candidate("def inner():\n    return x + 1\nreturn inner()"), "torch operators"),
    ("with_as", torch_candidate("with W(x) as t:\n    return t + 1", top=(
        "class W:\n    def __init__(self, t):\n        self.t = t\n    def __enter__(self):\n"
        "        return self.t\n    def __exit__(self, *a):\n        return False")), "torch operators"),
    ("match_capture", torch_candidate("match x:\n    case t:\n        return t * 2"), "torch operators"),
    ("helper_class_half", torch_candidate("return H(x).h", top=(
        "class H:\n    def __init__(self, t):\n        self.h = t.half()")), "precision"),
    ("numpy_os", torch_candidate(HONEST_BODY, top="import numpy as np", init="np.os.system('ls')"), "numpy.os"),
    ("typing_sys", torch_candidate(HONEST_BODY, top="import typing\ntyping.sys.modules['os']"), "typing.sys"),
    ("dataclasses_builtins", torch_candidate(HONEST_BODY, top="from dataclasses import builtins"),
     "dataclasses.builtins"),
    ("veriforge_internals", torch_candidate(HONEST_BODY, top=(
        "from veriforge.cuda import torchbind\ntorchbind.extension.os.system('ls')")), "only use"),
    ("math_fsum", torch_candidate("return math.fsum(x.view(-1))", top="import math"), "math.fsum"),
    ("tensor_index_tensor", torch_candidate("return x.view(-1)[x.view(-1).argmax()]"), "indexes a tensor"),
    ("static_source_bomb", torch_candidate(HONEST_BODY, top='_e4 = load_cuda("b", "x" * 10**9)'), "at run time"),
    ("long_reverse_call_chain", torch_candidate("return f0(x)", top="def f150(t):\n    return t * 2\n" + "\n".join(
        f"def f{i}(t):\n    return f{i + 1}(t)" for i in range(149, -1, -1))), "torch operators"),
    ("too_deep", torch_candidate("return x" + ".view(-1)" * 400), "nested too deeply"),
]

# Variants the static scans do not catch. Each names the dynamic check that has to.
KNOWN_EVASIONS: list[tuple[str, str, str]] = [
    # Shape operations are allowed, and for some tasks they *are* the work (transpose_2d: .t().contiguous()).
    # Only a dynamic check that the extension ran (and wrote the output) can refuse this.
    ("shape_op_is_the_task", torch_candidate("return x.t().contiguous()"), "transpose"),
    # torch::Tensor operators inside the C++ of load_inline need C++ type information to see.
    ("cpp_tensor_operator", torch_candidate("return m.f(x)", top=(
        "from torch.utils.cpp_extension import load_inline\n"
        'm = load_inline("m", cpp_sources="torch::Tensor f(torch::Tensor a) { return a * (a > 0); }",'
        ' functions=["f"])')), "operator"),
    # ATen tensor methods in that C++ are matched against a list of common names; rarer ones pass.
    ("cpp_rare_aten_method", torch_candidate("return m.f(x)", top=(
        "from torch.utils.cpp_extension import load_inline\n"
        'm = load_inline("m", cpp_sources="torch::Tensor f(torch::Tensor a) { return a.hardtanh(0, 1e30); }",'
        ' functions=["f"])')), "hardtanh"),
]


@pytest.mark.parametrize("source,expected", [v[1:] for v in TORCH_VARIANTS], ids=[v[0] for v in TORCH_VARIANTS])
def test_torch_variant_rejected(source: str, expected: str) -> None:
    findings = scan_torch(source)
    assert any(expected.lower() in f.lower() for f in findings), findings


@pytest.mark.parametrize("source,expected", [pytest.param(*v[1:], marks=pytest.mark.xfail(strict=True))
                                              for v in KNOWN_EVASIONS], ids=[v[0] for v in KNOWN_EVASIONS])
def test_torch_known_evasions(source: str, expected: str) -> None:
    findings = scan_torch(source)
    assert any(expected.lower() in f.lower() for f in findings), findings


def test_torch_honest_template_passes() -> None:
    assert scan_torch(torch_candidate(HONEST_BODY)) == []


# --- C→CUDA candidates -------------------------------------------------------------------------------

_C = '''#include <cuda_runtime.h>
@TOP@
__global__ void k(const float* x, const float* y, float* out, float alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = alpha * x[i] + y[i];
}
extern "C" void solve(const float* x, const float* y, float* out, float alpha, int n) {
@BODY@
    k<<<(n + 127) / 128, 128>>>(x, y, out, alpha, n);
}
'''


def c_candidate(top: str = "", body: str = "") -> str:
    return _C.replace("@TOP@", top).replace("@BODY@", body)


C_VARIANTS: list[tuple[str, str, str]] = [
    ("token_paste", c_candidate("#define CAT(a, b) a##b", '    CAT(sys, tem)("ls");'), "token pasting"),
    ("digraph_paste", c_candidate("%:define CAT(a, b) a%:%:b", '    CAT(sys, tem)("ls");'), "token pasting"),
    ("trigraph_define", c_candidate("??=define RUN system", '    RUN("ls");'), "system"),
    ("define_alias", c_candidate("#define RUN system", '    RUN("ls");'), "system"),
    ("function_pointer", c_candidate("", '    int (*fp)(const char*) = &system;\n    fp("ls");'), "system"),
    ("pointer_table", c_candidate('static void* const tbl[] = {(void*)popen};'), "popen"),
    ("std_qualified", c_candidate("#include <cstdlib>", '    std::system("ls");'), "system"),
    ("global_qualified", c_candidate("", '    ::getenv("HOME");'), "getenv"),
    ("using_decl", c_candidate("using std::getenv;", '    getenv("HOME");'), "getenv"),
    ("member_like_decl", c_candidate('extern "C" int system(const char*);'), "system"),
    ("asm_volatile", c_candidate("", '    asm volatile("nop;");'), "assembly"),
    ("dunder_asm", c_candidate("", '    __asm__ __volatile__("nop;");'), "assembly"),
    ("asm_in_macro", c_candidate("#define NOP() __asm(\"nop;\")", "    NOP();"), "assembly"),
    ("asm_label_rename", c_candidate('extern "C" int run(const char*) __asm__("system");', '    run("ls");'),
     "assembly"),
    ("include_quoted_abs", c_candidate('#include "/etc/shadow"'), '#include "/etc/shadow"'),
    ("include_angle_abs", c_candidate("#include </etc/shadow>"), "absolute"),
    ("include_dotdot", c_candidate("#include <cuda/../../../../etc/passwd>"), "'..'"),
    ("include_spaces", c_candidate("#  include  <  /etc/shadow  >"), "absolute"),
    ("include_digraph", c_candidate("%:include </etc/shadow>"), "absolute"),
    ("include_formfeed", c_candidate("\f#include </etc/shadow>"), "absolute"),
    ("include_after_comment", c_candidate("/* c */ # /* c */ include </etc/shadow>"), "absolute"),
    ("include_computed", c_candidate("#define P </etc/shadow>\n#include P"), "computed #include"),
    ("include_next", c_candidate("#include_next <stdio.h>"), "#include_next"),
    ("embed", c_candidate('#embed "/etc/shadow"'), "#embed"),
    ("include_unknown", c_candidate("#include <secret_header.h>"), "not a standard"),
    ("include_vendor", c_candidate("#include <cublas_v2.h>"), "vendor libraries"),
    ("include_sys", c_candidate("#include <sys/mman.h>"), "not allowed in a candidate"),
    ("pragma_redefine", c_candidate("#pragma redefine_extname run system"), "#pragma"),
    ("underscore_pragma", c_candidate('_Pragma("redefine_extname run system")'), "_Pragma"),
    ("weakref", c_candidate('static int run(const char*) __attribute__((weakref("system")));'), "weakref"),
    ("alias_attr", c_candidate('extern "C" void other() __attribute__((alias("solve")));'), "alias"),
    ("section_init_array", c_candidate('static void hook() {}\n__attribute__((section(".init_array"))) '
                                       'void (*hp)() = hook;'), "section"),
    ("cxx_attr_constructor", c_candidate("[[gnu::constructor]] static void hook() {}"), "constructor"),
    ("dunder_constructor", c_candidate("__attribute__((__constructor__)) static void hook() {}"), "constructor"),
    ("builtin_return_address", c_candidate("", "    void* ra = __builtin_return_address(0); (void)ra;"),
     "__builtin_return_address"),
    ("builtin_apply", c_candidate("", "    __builtin_frame_address(0);"), "__builtin_frame_address"),
    ("dlsym_string", c_candidate("#include <cstddef>", '    void* p = dlsym((void*)0, "sys" "tem");'), "dlsym"),
    ("cuGetProcAddress", c_candidate("", '    void* p; cuGetProcAddress("cuLaunchKernel", &p, 12000, 0);'),
     "cuGetProcAddress"),
    ("reference_pointer", c_candidate('extern "C" void reference(const float*, const float*, float*, float, int);',
                                      "    auto r = &reference; (void)r;"), "reference"),
    ("environ", c_candidate("extern char** environ;"), "environ"),
    ("split_identifier", c_candidate("", '    sys\\\ntem("ls");'), "line continuation"),
    ("raw_string_desync", c_candidate("", '    const char* s = R"(")"; system("ls"); // "'), "raw string"),
    ("digit_separator_desync", c_candidate("", "    int a = 1'0; system(0); int b = 1'0;"), "digit separator"),
    ("define_static_keyword", c_candidate("#define static"), "keyword"),
    ("static_in_macro", c_candidate("#define KEEP static", ""), "static"),
    ("define_global_qualifier", c_candidate("#define __global__"), "keyword"),
    ("nvrtc", c_candidate("", "    nvrtcCompileProgram(0, 0, 0);"), "run time"),
    ("module_load", c_candidate("", "    cuModuleLoadData(0, 0);"), "run time"),
    ("mprotect", c_candidate("", "    mprotect(0, 0, 7);"), "mprotect"),
    ("syscall", c_candidate("", "    syscall(59, 0, 0, 0);"), "syscall"),
    ("ifstream", c_candidate("#include <iostream>", '    std::ifstream f("/etc/passwd");'), "ifstream"),
    ("cin", c_candidate("#include <iostream>", "    float v; std::cin >> v;"), "standard input"),
    ("raw_read", c_candidate("", "    char b[8]; read(0, b, 8);"), "read()"),
    ("libc_internal", c_candidate("", '    __libc_system("ls");'), "__libc_"),
    ("mangled_name", c_candidate('extern "C" long _ZNSt6chrono3_V212steady_clock3nowEv() { return 0; }'),
     "mangled"),
    ("namespace_std_clock", c_candidate("#include <chrono>\nnamespace std { namespace chrono { } }"),
     "namespace std"),
    ("interpose_fwrite", c_candidate('#include <cstdio>\nextern "C" size_t fwrite(const void* p, size_t s, '
                                     'size_t n, FILE* f) { return n; }'), "defines fwrite()"),
    ("interpose_memcpy", c_candidate('extern "C" void* memcpy(void* d, const void* s, size_t n) { return d; }'),
     "defines memcpy()"),
    ("operator_new", c_candidate("#include <new>\nvoid* operator new(size_t n) { return nullptr; }"),
     "operator new"),
    ("ucn_identifier", c_candidate("", '    sys\\u0074em("ls");'), "universal character"),
    ("pragma_omp_host", c_candidate("", "    #pragma omp parallel for\n    for (int i = 0; i < 1; ++i) {}"),
     "#pragma"),
    ("weakref_nested_parens", c_candidate('static int run(const char*) __attribute__(( (weakref(("x")))));'),
     "weakref"),
    ("host_alias_index", c_candidate("", "    const float* p = x + 1;\n    float v = p[0]; (void)v;"), "directly"),
    ("host_helper_param", c_candidate("static float first(const float* a) { return a[0]; }",
                                      "    float v = first(x); (void)v;"), "directly"),
    ("host_memcpy_device", c_candidate("#include <cstring>", "    float h[4]; memcpy(h, x, sizeof h);"),
     "memcpy"),
    ("d2h_kind_variable", c_candidate("#include <vector>\n#include <numeric>", (
        "    std::vector<float> h(n);\n    cudaMemcpyKind kind = (cudaMemcpyKind)2;\n"
        "    cudaMemcpy(h.data(), x, n * sizeof(float), kind);\n"
        "    float s = std::accumulate(h.begin(), h.end(), 0.f); (void)s;")), "host-side computation"),
    ("d2h_helper_loop", c_candidate(
        "static void relu_host(float* h, int n) { for (int i = 0; i < n; ++i) h[i] = h[i] > 0 ? h[i] : 0; }",
        "    float* h = new float[n];\n    cudaMemcpy(h, x, n * 4, cudaMemcpyDeviceToHost);\n"
        "    relu_host(h, n);\n    delete[] h;"), "host-side computation"),
    ("dl_internal", c_candidate("", '    _dl_sym(0, "system", 0);'), "_dl_sym"),
]

C_KNOWN_EVASIONS: list[tuple[str, str, str]] = [
    # Patching the GOT / another function through pointer arithmetic from a legitimate address: nothing is
    # named, so nothing is visible to a text scan. The CPU runtime's sandbox and the GPU back-end's timer
    # checks are the barrier.
    ("pointer_arith_patch", c_candidate("", "    unsigned char* p = (unsigned char*)&cudaDeviceSynchronize;\n"
                                            "    p[0] = 0xc3;"), "patch"),
    # A device pointer wrapped in a struct and read on the host: the alias tracking follows assignments and
    # calls, not aggregate initialisation. On the CPU runtime this works; on a GPU it crashes.
    ("host_read_through_struct", c_candidate("struct Box { const float* p; };",
                                             "    Box b{x};\n    float v = b.p[0]; (void)v;"), "directly"),
    # Host-side computation after a copy to the host, written as recursion (no loop, no std:: algorithm).
    ("host_compute_recursion", c_candidate(
        "static void r(float* h, int i, int n) { if (i < n) { h[i] = h[i] > 0 ? h[i] : 0; r(h, i + 1, n); } }",
        "    float* h = new float[n];\n    cudaMemcpy(h, x, n * 4, cudaMemcpyDeviceToHost);\n"
        "    r(h, 0, n);\n    delete[] h;"), "host-side computation"),
]


@pytest.mark.parametrize("source,expected", [v[1:] for v in C_VARIANTS], ids=[v[0] for v in C_VARIANTS])
def test_c_variant_rejected(source: str, expected: str) -> None:
    findings = scan_c(source)
    assert any(expected.lower() in f.lower() for f in findings), findings


@pytest.mark.parametrize("source,expected", [pytest.param(*v[1:], marks=pytest.mark.xfail(strict=True))
                                              for v in C_KNOWN_EVASIONS], ids=[v[0] for v in C_KNOWN_EVASIONS])
def test_c_known_evasions(source: str, expected: str) -> None:
    findings = scan_c(source)
    assert any(expected.lower() in f.lower() for f in findings), findings


def test_c_honest_template_passes() -> None:
    assert scan_c(c_candidate()) == []


# --- no false positives on the bundled implementations ------------------------------------------------

def _implementations() -> list[tuple[Path, Path]]:
    folders = bundled_tasks() + sorted(p.parent for p in TEST_TASKS.glob("*/*/task.toml"))
    out = []
    for folder in folders:
        spec = load_task(folder)
        out.extend((folder, folder / impl.file) for impl in spec.implementations)
    return out


def test_bundled_implementations_found() -> None:
    impls = _implementations()
    assert len(impls) > 150  # the bundled dataset plus the test tasks
    assert any(p.suffix == ".py" for _, p in impls) and any(p.suffix == ".cu" for _, p in impls)


@pytest.mark.parametrize("folder,impl", _implementations(), ids=lambda p: f"{p.parent.name}/{p.name}"
                         if p.suffix else p.name)
def test_no_false_positive_on_implementation(folder: Path, impl: Path) -> None:
    spec = load_task(folder)
    source = impl.read_text()
    if spec.family == "c2cuda":
        assert scan_c(source, spec) == [], impl
    else:
        assert scan_torch(source, spec.allowed_dtypes) == [], impl


def test_runtime_hooks_are_refused_but_vf_prefixed_variables_are_not() -> None:
    from veriforge.cuda.evaluate.anticheat_c import scan_c

    kernel = "__global__ void k(float* y) { y[0] = 1.f; }\n"
    hooks = [
        'extern "C" void solve(float* y) { vf::set_reverse_order(false); k<<<1, 1>>>(y); }',
        'namespace vf { void reset_copy_counters(); }\nextern "C" void solve(float* y) { k<<<1, 1>>>(y); }',
        'extern "C" void vf_switch_context(void*, void*);\nextern "C" void solve(float* y) { k<<<1, 1>>>(y); }',
    ]
    for src in hooks:
        assert any("veriforge's runtime" in f for f in scan_c(kernel + src)), src
    ok = 'extern "C" void solve(float* y) { int vf_base = 0; k<<<1 + vf_base, 1>>>(y); }'
    assert not any("veriforge's runtime" in f for f in scan_c(kernel + ok))
