"""The one CUDA source reader: blanking, directives, brackets, functions — and the cases on which the
copies it replaced disagreed (each test names the copy that got it wrong)."""

from __future__ import annotations

import pytest

from veriforge.cuda.cpu.source import mask_source
from veriforge.cuda.evaluate.anticheat_c import scan_c, scan_c_source_hygiene
from veriforge.cuda.source_reader import (
    Refuse,
    balanced,
    blank,
    blank_directives,
    close_of,
    directive_spans,
    functions,
    lex,
    line_end,
    line_of,
    top_level,
)
from veriforge.cuda.tasks.ctypes_map import find_signature
from veriforge.cuda.torchbind import parse_extern_c
from veriforge.cudaperf.dataset.dedup import normalised_tokens
from veriforge.cudaperf.rank_features import normalise_source
from veriforge.optiml.source_scan import scan


def test_blank_keeps_offsets_lines_and_quotes() -> None:
    src = 'int a; // k<<<1,1>>>()\n/* asm(\n */ const char* s = "<<<x>>>"; char c = \'"\';\nint b;'
    out = blank(src)
    assert len(out) == len(src) and out.count("\n") == src.count("\n")
    assert "<<<" not in out and "asm" not in out
    assert 's = "       "; char c = \' \';' in out and out.endswith("int b;")
    kept = blank(src, literals=False)
    assert '"<<<x>>>"' in kept and "'\"'" in kept and "asm" not in kept
    assert [lit.kind for lit in lex(src)] == ["comment", "comment", "string", "char"]


def test_prefixed_char_literals_are_literals() -> None:
    """mask_source read ``L'x'`` as a digit separator and blanked the rest of the line as a char."""
    src = "char c = L'x'; int y = 2; auto s = U\"z\"; // tail\nint z;"
    out = blank(src)
    assert out == "char c = L' '; int y = 2; auto s = U\" \";        \nint z;"
    assert mask_source(src) == out  # the CPU front end now reads it the same way


def test_digit_separators_stay_code() -> None:
    """strip_c (anti-cheat, OptiML) read ``'000'`` of ``1'000'000`` as a char literal."""
    src = "int x = 1'000'000 + 0x1'F; float f = 1'0.5e+1'0f; char c = 'q';"
    out = blank(src)
    assert "1'000'000 + 0x1'F" in out and "1'0.5e+1'0f" in out and "c = ' ';" in out


def test_raw_strings_keep_their_quotes_and_hide_everything_inside() -> None:
    """strip_c did not know raw strings (the inner quote ended it and ``//`` started a comment);
    mask_source blanked the quotes too. Now: like every literal, quotes kept, contents blanked."""
    src = 'auto s = R"xy(a "quoted" )" // not end)xy"; int after; // c'
    assert blank(src) == 'auto s = R"' + " " * 30 + '"; int after;     '
    assert blank(src, literals=False) == src[:src.index("// c")] + "    "
    assert blank('u8R"(x)" LR"(y)"') == 'u8R"   " LR"   "'


def test_backslash_newline_continues_a_line_comment() -> None:
    """The torchbind signature reader, ctypes_map, the rank features and dedup stopped a ``//``
    comment at the newline even when a backslash continued it."""
    src = 'extern "C" void f(int a); // gone \\\nextern "C" void hidden(int b);\nint k;'
    out = blank(src)
    assert "hidden" not in out and out.count("\n") == 2
    assert list(parse_extern_c(src)) == ["f"]
    assert "hidden" not in normalise_source(src)
    assert "hidden" not in normalised_tokens(src)


def test_comment_markers_inside_literals_are_not_comments() -> None:
    """ctypes_map cut the line at the ``//`` of a string (no definition found), dedup too; the rank
    features took ``'"'`` for the start of a string and kept the comment after it."""
    src = 'static const char* tag = "//"; void solve(const char* u, int n) { char q = \'"\'; } // a "b" c'
    assert [p.name for p in find_signature(src, "solve")] == ["u", "n"]
    assert normalise_source(src) == src[:src.index(" // a")] + "\n"
    assert '"//"' in normalised_tokens(src) and "solve" in normalised_tokens(src)


def test_splice_and_squeeze() -> None:
    src = "#define F(x) \\\n  ((x) + 1) /* a\n b */\nint k;"
    spliced = blank(src, splice=True)
    assert len(spliced) == len(src) and spliced.count("\n") == 2  # the continuation is one line now
    assert spliced.splitlines()[0].rstrip() == "#define F(x)     ((x) + 1)"
    assert blank(src, squeeze=True) == "#define F(x) \\\n  ((x) + 1)  \nint k;"
    assert line_of(src, src.index("int k")) == 4 and line_end(src, 0) == src.index("\n b */")


def test_directives_span_their_continuations() -> None:
    text = "#include <x.h>\n  # define M(a) \\\n   { a; }\nint k;\n#pragma unroll\n"
    spans = list(directive_spans(text))
    assert [(text[a:b], name) for a, b, name in spans] == [
        ("#include <x.h>", "include"), ("  # define M(a) \\\n   { a; }", "define"), ("#pragma unroll", "pragma")]
    only = blank_directives(text, ("pragma",))
    assert "#include" in only and "#pragma" not in only and len(only) == len(text)
    assert "{" not in blank_directives(text)


def test_brackets() -> None:
    assert close_of("f(a, (b))", 1) == 8 and close_of("f(a", 1) is None
    assert close_of("(a[b]{c})", 0, "([{", typed=True) == 8
    assert [k for k in top_level("a, f(b, c), d", 0, 13) if "a, f(b, c), d"[k] == ","] == [1, 10]
    with pytest.raises(Refuse):
        list(top_level("a) b", 0, 4, balanced=True))
    assert balanced("{ { } }") and not balanced("} {") and not balanced("{")


FILE = r'''
#include <cstdio>
#define B 16
namespace ns {
template <int N> __global__ void red(float* x) { if (x) { x[0] = 1; } }
}
extern "C" {
__global__ void inside(float* p) {}
void launch(float* p) { inside<<<1, 1>>>(p); }
int helper(void);
}
__global__
#ifdef X
__launch_bounds__(256)
#endif
void split(int n) {}
extern "C" __global__ void kern(float* x) {}
struct S { int a; void m() {} };
static __device__ __forceinline__ float sq(float v) noexcept { return v * v; }
bool operator==(const S& a, const S& b) { return true; }
auto tr(int x) -> int { return x; }
int g = f(3);
__host__ __device__ inline int hd(int (*fp)(int, int), int n) __attribute__((noinline)) { return 0; }
int main() { return 0; }
'''


def test_functions_qualifiers_names_and_spans() -> None:
    text = blank(FILE)
    found = {f.qualified_name: f for f in functions(text, declarations=True)}
    assert list(found) == ["ns::red", "inside", "launch", "helper", "split", "kern", "sq", "operator==", "tr",
                           "hd", "main"]
    assert found["ns::red"].kernel and "template" in found["ns::red"].qualifiers
    assert found["inside"].kernel and found["inside"].extern_c and found["launch"].extern_c
    assert found["helper"].body is None and found["helper"].extern_c
    assert found["split"].kernel  # a directive inside the declaration does not cut it
    assert found["kern"].extern_c and found["kern"].kernel
    assert found["sq"].device and found["hd"].device and "__host__" in found["hd"].qualifiers
    hd = found["hd"]
    assert text[hd.params[0]:hd.params[1] + 1] == "(int (*fp)(int, int), int n)"
    assert text[hd.body[0]] == "{" and text[hd.body[1]] == "}"
    assert "m" not in found and "f" not in found  # struct members, initialisers are not functions
    assert [f.name for f in functions(text)] == [n.split("::")[-1] for n in found if n != "helper"]


def test_optiml_scan_sees_what_the_old_scanner_missed() -> None:
    """source_scan missed the functions of ``extern "C" { }`` (its blanked text reads ``extern " "``),
    dropped ``__global__`` when a directive stood inside the declaration and took ``__attribute__``
    for a name."""
    sc = scan(FILE)
    names = {f.name: f for f in sc.functions}
    assert {"inside", "launch", "split", "sq", "hd"} <= set(names) and "__attribute__" not in names
    assert names["inside"].kernel and names["split"].kernel and names["sq"].device
    assert [launch.kernel for launch in sc.launches] == ["inside"] and sc.launches[0].host == "launch"


def test_anticheat_reads_functions_in_extern_c_blocks_and_counts_lines_in_the_source() -> None:
    src = ('#include <cuda_runtime.h>\n#define SCALE(x) \\\n  ((x) * 2.0f)\nextern "C" {\n'
           '__global__ void k(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = SCALE(y[i]); }\n'
           'void solve(float* y, int n) { k<<<1, 256>>>(y, n); }\n}\n')
    findings = scan_c(src)
    assert not any("defines no __global__ kernel" in f for f in findings), findings
    bad = src.replace("void solve(float* y, int n) {", "void solve(float* y, int n) { system(\"ls\");")
    lines = [f for f in scan_c_source_hygiene(bad) if "system" in f]
    assert lines and lines[0].startswith("line 6:"), lines  # strip_c's splice made it line 5


def test_cpu_front_end_reads_functions_through_the_reader() -> None:
    """The CPU front end's old statement scanner took a function-like ``#define`` for the head of the
    next declaration and missed that function (Rodinia's avilib.c, ``long2str``)."""
    from veriforge.cuda.cpu.source import scan as cpu_scan

    src = ('extern "C" {\n#define PAD_EVEN(x) ( ((x)+1) & ~1 )\n\nstatic void long2str(unsigned char *d, int n)\n'
           '{ d[0] = n; }\nint after(int a) { return a; }\n}\n'
           'namespace ns { template <typename T, int N> __global__ void tk(T* p) {} __global__ void k(float* p) {} }\n')
    found = cpu_scan(src)
    assert [(h.name, h.line) for h in found.host_functions] == [("long2str", 4), ("after", 6)]
    kernels = {k.name: k for k in found.kernels}
    assert set(kernels) == {"ns::tk", "ns::k"}
    assert kernels["ns::tk"].is_template and kernels["ns::tk"].template_params == 2
    assert not kernels["ns::k"].is_template and kernels["ns::k"].line == 8


def test_enclosing_heads_name_every_brace_around_a_position() -> None:
    from veriforge.cuda.source_reader import enclosing_heads

    text = blank('namespace n {\n__global__ void k(int* p) {\n  auto f = [&](int i) { if (i) { /*}*/ X; } };\n}\n}\n')
    heads = [h.strip() for h in enclosing_heads(text, text.index("X"))]
    assert heads == ["namespace n", "__global__ void k(int* p)", "auto f = [&](int i)", "if (i)"]
    assert enclosing_heads(text, len(text)) == []
