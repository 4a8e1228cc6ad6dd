"""Static anti-cheat for C→CUDA candidates (comments and strings stripped before scanning).

Each rule names a known way to pass the check without doing the work on the GPU, and returns a
sentence the candidate's author (often a model) can act on. Dynamic counterparts live in the
harness: fresh inputs per trial (caching, constant outputs), poisoned outputs (partial writes),
memcheck (reads outside the inputs). The CPU runtime keeps device memory in host memory, so
``solve`` touching device pointers directly would pass here and crash on a GPU: it is refused.

The scan does not expand macros. Instead it refuses what would let a macro, a pointer or the
preprocessor hide a name from it: ``##`` token pasting, computed ``#include``s, ``#pragma``s and
``_Pragma`` other than harmless ones, ``#define`` of keywords, ``static`` inside macros, symbol
aliasing attributes (``alias``, ``weakref``, ``section``...), raw string literals and digit
separators (both desynchronise the comment/string stripping), and a line continuation inside an
identifier. Forbidden host functions (``system``, ``popen``, ``fopen``, ``dlsym``, ``getenv``...) are
refused wherever their name appears - a call, ``&system``, a function-pointer table, a ``using``
declaration, a macro body - except as a member (``obj.open``). ``#include`` must name a standard C/C++
or CUDA header with ``<...>``; absolute and ``..`` paths are refused (compiler errors would echo the
file). :func:`scan_c_source_hygiene` is the part of these rules that also applies to the CUDA/C++
sources a PyTorch candidate embeds (``load_cuda``/``load_inline``).
"""

from __future__ import annotations

import functools
import re

from veriforge.cuda.source_reader import blank, blank_directives, functions, line_of
from veriforge.cuda.tasks.schema import TaskSpec

__all__ = ["ALLOWED_HEADERS", "FORBIDDEN_IDENTIFIERS", "scan_c", "scan_c_source_hygiene"]

_FORBIDDEN_HEADERS = re.compile(
    r"^(dlfcn\.h|fstream|filesystem|unistd\.h|fcntl\.h|sys/[\w/]+\.h|signal\.h|csignal|setjmp\.h|csetjmp|"
    r"pthread\.h|thread|future|spawn\.h|link\.h|stdio_ext\.h|dirent\.h|syscall\.h|netdb\.h|netinet/.*|"
    r"arpa/.*|ucontext\.h|execinfo\.h|elf\.h|libgen\.h|wordexp\.h|glob\.h|ftw\.h|pwd\.h|grp\.h|"
    r"shadow\.h|sched\.h|semaphore\.h|mqueue\.h|poll\.h|termios\.h|utmp\.h|dlfcn|cstdio_ext)$")
_VENDOR_LIBRARY = re.compile(r"^(cublas\w*|cublasLt\w*|cudnn\w*|cufft\w*|cusparse\w*|cusolver\w*|nccl\w*|"
                             r"nvrtc\w*|nvJitLink\w*|cutlass|cute|nvml\w*|cupti\w*|npp\w*|nvblas\w*)(/.*|\.h)?$")
#: Headers a candidate may include with ``<...>``: the C and C++ standard libraries (minus process,
#: file-system and thread headers) and the CUDA toolkit's device-side headers.
ALLOWED_HEADERS = frozenset("""
assert.h complex.h ctype.h errno.h fenv.h float.h inttypes.h iso646.h limits.h locale.h math.h stdalign.h
stdarg.h stdbool.h stddef.h stdint.h stdio.h stdlib.h string.h tgmath.h time.h uchar.h wchar.h wctype.h
stdatomic.h strings.h alloca.h malloc.h memory.h
cassert ccomplex cctype cerrno cfenv cfloat cinttypes ciso646 climits clocale cmath cstdalign cstdarg
cstdbool cstddef cstdint cstdio cstdlib cstring ctgmath ctime cuchar cwchar cwctype
algorithm any array atomic barrier bit bitset charconv chrono codecvt compare complex concepts deque
exception execution expected format forward_list functional initializer_list iomanip ios iosfwd iostream
istream iterator latch limits list locale map memory memory_resource mutex new numbers numeric optional
ostream queue random ranges ratio regex scoped_allocator set shared_mutex source_location span sstream stack
stdexcept streambuf string string_view strstream system_error tuple type_traits typeindex typeinfo
unordered_map unordered_set utility valarray variant vector version cstdfloat stdfloat mdspan print
cuda.h cuda_runtime.h cuda_runtime_api.h cuda_fp16.h cuda_fp16.hpp cuda_bf16.h cuda_bf16.hpp cuda_fp8.h
cuda_fp8.hpp cuda_fp6.h cuda_fp4.h cuda_pipeline.h cuda_pipeline_primitives.h cuda_awbarrier.h
cuda_awbarrier_primitives.h cuda_device_runtime_api.h cuda_occupancy.h cuda_texture_types.h
cuda_surface_types.h cuda_vector_types.h cooperative_groups.h mma.h math_constants.h math_functions.h
device_launch_parameters.h device_functions.h device_atomic_functions.h device_types.h driver_types.h
vector_types.h vector_functions.h vector_functions.hpp builtin_types.h host_defines.h texture_types.h
surface_types.h texture_fetch_functions.h texture_indirect_functions.h surface_functions.h
surface_indirect_functions.h channel_descriptor.h library_types.h common_functions.h curand.h
curand_kernel.h curand_philox4x32_x.h curand_normal.h curand_uniform.h nvToolsExt.h nvtx3/nvToolsExt.h
""".split())
_ALLOWED_HEADER_PREFIXES = ("cooperative_groups/", "cub/", "thrust/", "cuda/", "sm_", "crt/", "nv/")
_TORCH_HEADER_PREFIXES = ("torch/", "ATen/", "c10/", "pybind11/", "caffe2/")
_DIRECTIVE = re.compile(r"^[^\S\n]*#[^\S\n]*(\w+)(.*)$", re.M)
_INCLUDE_TARGET = re.compile(r"\s*(<([^>\n]*)>|\"([^\"\n]*)\")\s*$")
_ALLOWED_PRAGMAS = re.compile(r"^\s*(unroll\b|nounroll\b|once\s*$|pack\b|message\b|(GCC|clang)\s+diagnostic\b|"
                              r"nv_diag_\w+|diag_\w+|nv_exec_check_disable\b|hd_warning_disable\b|warning\b)")
_API_DEFINE = re.compile(r"^\s*#\s*(define|undef)\s+(cuda\w+|cu[A-Z]\w*|nvtx\w*|__syncthreads|clock\w*)\b", re.M)
_KEYWORDS = frozenset("""
static extern const constexpr consteval constinit volatile auto register thread_local inline void int float
double char long short unsigned signed bool return if else for while do switch case break continue goto
struct class union enum typedef using namespace template typename sizeof alignof new delete operator this
public private protected friend virtual explicit mutable static_cast reinterpret_cast const_cast
dynamic_cast true false nullptr decltype noexcept static_assert main __global__ __device__ __host__
__shared__ __constant__ __managed__ __restrict__ __forceinline__ __noinline__ __launch_bounds__ __grid_constant__
asm __asm __asm__ __volatile__ __attribute__ __declspec __inline__ __inline _Pragma
""".split())
_ASM = re.compile(r"\b(asm|__asm__|__asm|__asm_volatile__)\b")
_ATTRIBUTE_SPAN = re.compile(r"__attribute__\s*\(\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)\)|\[\[.*?\]\]|"
                             r"__declspec\s*\((?:[^()]|\([^()]*\))*\)", re.S)
_ATTRIBUTE_WORD = re.compile(r"\b_*(constructor|destructor|weakref|alias|ifunc|section|init_priority|symver|"
                             r"used|retain)_*\b")
_ATTRIBUTE_ANYWHERE = re.compile(r"\b_*(weakref|ifunc|symver|init_priority)_*\b")
_ATTRIBUTE_WHY = {
    "constructor": "runs code outside solve", "destructor": "runs code outside solve",
    "init_priority": "runs code outside solve", "section": "places code or data in a chosen section "
    "(e.g. .init_array, which runs it outside solve)", "used": "keeps hidden symbols alive for other sections",
    "retain": "keeps hidden symbols alive for other sections",
    "weakref": "binds a function to another symbol by name (a way to reach forbidden functions)",
    "alias": "binds a function to another symbol by name", "ifunc": "picks a function at load time",
    "symver": "binds a function to another symbol version",
}
_ALLOWED_BUILTINS = re.compile(
    r"__builtin_(expect|expect_with_probability|assume|assume_aligned|unreachable|clz\w*|ctz\w*|popcount\w*|"
    r"ffs\w*|parity\w*|bswap\d*|isnan|isinf|isfinite|isnormal|signbit|fabs\w*|fma\w*|sqrt\w*|huge_val\w*|"
    r"inf\w*|nan\w*|copysign\w*|fmin\w*|fmax\w*|memcpy|memset|prefetch|constant_p|offsetof|"
    r"is_constant_evaluated|launder|addressof|bit_cast|abs|labs|llabs|trap)$")
#: Names refused wherever they appear (calls, ``&name``, tables, declarations, macro bodies).
FORBIDDEN_IDENTIFIERS: dict[str, str] = {
    "dlsym": "looks up symbols at run time (dlsym) - the way timers and CUDA calls get patched",
    "dlvsym": "looks up symbols at run time",
    "dladdr": "inspects loaded libraries",
    "dlinfo": "inspects loaded libraries",
    "dl_iterate_phdr": "inspects loaded libraries",
    "dlopen": "loads libraries at run time (dlopen)",
    "dlmopen": "loads libraries at run time",
    "cuGetProcAddress": "looks up CUDA driver functions at run time (like dlsym)",
    "cudaGetDriverEntryPoint": "looks up CUDA driver functions at run time (like dlsym)",
    "cudaGetDriverEntryPointByVersion": "looks up CUDA driver functions at run time (like dlsym)",
    "system": "runs shell commands",
    "popen": "runs shell commands",
    "fork": "starts processes",
    "vfork": "starts processes",
    "clone": "starts processes",
    "posix_spawn": "starts programs",
    "posix_spawnp": "starts programs",
    "execv": "starts programs",
    "execve": "starts programs",
    "execvpe": "starts programs",
    "execl": "starts programs",
    "execle": "starts programs",
    "execlp": "starts programs",
    "execvp": "starts programs",
    "fexecve": "starts programs",
    "fopen": "opens files (a candidate may only compute from its arguments)",
    "fopen64": "opens files",
    "freopen": "opens files",
    "fdopen": "opens files",
    "open": "opens files",
    "open64": "opens files",
    "openat": "opens files",
    "creat": "creates files",
    "opendir": "lists directories",
    "ifstream": "opens files",
    "ofstream": "opens files",
    "fstream": "opens files",
    "filebuf": "opens files",
    "stdin": "reads the harness's standard input",
    "mmap": "maps memory or files",
    "mmap64": "maps memory or files",
    "mremap": "maps memory",
    "mprotect": "changes memory protection (code patching)",
    "getenv": "reads the environment",
    "secure_getenv": "reads the environment",
    "environ": "reads the environment",
    "__environ": "reads the environment",
    "_environ": "reads the environment",
    "setenv": "changes the environment",
    "unsetenv": "changes the environment",
    "putenv": "changes the environment",
    "clearenv": "changes the environment",
    "syscall": "makes raw system calls",
    "ptrace": "traces processes",
    "prctl": "changes process attributes",
    "process_vm_readv": "reads other processes' memory",
    "process_vm_writev": "writes other processes' memory",
    "kill": "sends signals",
    "atexit": "registers exit handlers",
    "at_quick_exit": "registers exit handlers",
    "signal": "installs signal handlers",
    "sigaction": "installs signal handlers",
    "setjmp": "jumps out of the harness's control flow",
    "sigsetjmp": "jumps out of the harness's control flow",
    "longjmp": "jumps out of the harness's control flow",
    "siglongjmp": "jumps out of the harness's control flow",
    "clock_gettime": "reads or patches clocks",
    "gettimeofday": "reads or patches clocks",
    "pthread_create": "starts threads",
    "pthread_atfork": "registers fork handlers",
    "wordexp": "runs shell expansions",
    "__cxa_atexit": "registers exit handlers",
    "__cxa_thread_atexit": "registers exit handlers",
    "on_exit": "registers exit handlers",
    "alarm": "arms timers that signal the process",
    "setitimer": "arms timers that signal the process",
    "tmpfile": "creates files",
    "mkstemp": "creates files",
    "mkostemp": "creates files",
    "unlink": "deletes files",
    "unlinkat": "deletes files",
    "rmdir": "deletes directories",
    "chmod": "changes files",
    "chdir": "changes the working directory",
    "chroot": "changes the root directory",
    "symlink": "creates files",
    "readlink": "reads the file system",
    "realpath": "reads the file system",
    "scandir": "lists directories",
    "nftw": "walks directories",
    "cin": "reads the harness's standard input",
    "wcin": "reads the harness's standard input",
    "scanf": "reads the harness's standard input",
    "vscanf": "reads the harness's standard input",
    "getchar": "reads the harness's standard input",
    "gets": "reads the harness's standard input",
    "socket": "opens network connections",
    "socketpair": "opens sockets",
    "getaddrinfo": "resolves network names",
    "gethostbyname": "resolves network names",
}
# Names refused only when called: common words that are also plausible variable names.
_FORBIDDEN_CALL_ONLY = {
    "read": "reads file descriptors (e.g. the harness's standard input)",
    "write": "writes file descriptors (e.g. the harness's output)",
    "pread": "reads file descriptors", "pwrite": "writes file descriptors", "lseek": "moves file descriptors",
    "ioctl": "controls devices", "dup": "duplicates file descriptors", "dup2": "duplicates file descriptors",
    "fcntl": "controls file descriptors", "access": "probes the file system",
}
# C library functions the harness's generated main() (or libc/libstdc++) calls: defining one in a candidate
# would interpose it (e.g. a fwrite that rewrites the outputs, a memcpy that captures the inputs).
_LIBC_NAMES = frozenset("""
malloc calloc realloc free aligned_alloc posix_memalign memalign valloc memcpy memmove memset memcmp memchr strcmp
strncmp strlen strcpy strncpy strcat strdup printf fprintf vprintf vfprintf sprintf snprintf vsnprintf puts fputs
fputc putc putchar fwrite fread fflush fclose fseek ftell rewind perror exit abort rename remove time clock
clock_gettime gettimeofday nanosleep usleep sleep getpid qsort bsearch atoi atof strtol strtod rand srand
""".split())
_MANGLED = re.compile(r"\b_Z[A-Za-z0-9_]+\b|\b__libc_\w+|\b_IO_\w+|\b_dl_\w+|\b__dl\w+")
_STD_NAMESPACE = re.compile(r"\bnamespace\s+(std|__\w+)\b")
_OPERATOR_NEW = re.compile(r"\boperator\s*(new|delete)\b")
_UCN = re.compile(r"\\[uU][0-9a-fA-F]{4}")
_CODE_LOADING = re.compile(r"\b(cuModuleLoad\w*|cuLink\w+|cuLibraryLoad\w*|cudaLibraryLoad\w*|nvrtc\w+|"
                           r"nvJitLink\w+|cuModuleGetFunction|cudaGetFuncBySymbol)\b")
_MEMBER_BEFORE = re.compile(r"(\.|->)\s*$")
_RAW_STRING = re.compile(r"(?<![\w])(?:u8|u|U|L)?R\"[^\s()\\\"]{0,16}\(")
_DIGIT_SEPARATOR = re.compile(r"(?<![\w'])(?!u8')\d[\w]*'[0-9a-fA-F]")
_SPLIT_IDENTIFIER = re.compile(r"\w\\\r?\n\w")
_STATIC_IN_MACRO = re.compile(r"\bstatic\b(?!_)")
_STREAM_CREATE = re.compile(r"\bcuda(StreamCreate\w*)\s*\(")
_STREAM_WAIT = re.compile(r"\bcuda(StreamSynchronize|DeviceSynchronize|EventSynchronize|StreamWaitEvent)\s*\(")
_LOOP = re.compile(r"\b(for|while|do)\b")
_DEVICE_QUAL = re.compile(r"\b(__global__|__device__)\b")


def _normalise(source: str) -> str:
    """``%:`` is the C++ digraph for ``#`` (``%:%:`` for ``##``), ``??=`` and ``??/`` the trigraphs for ``#``
    and ``\\``: spell them out before scanning."""
    return source.replace("%:", "#").replace("??=", "#").replace("??/", "\\")


def _header_problem(name: str, torch_headers: bool) -> str:
    path = name.strip()
    if path.startswith(("/", "\\")) or ".." in path or "\\" in path or re.match(r"^[A-Za-z]:", path) or "~" in path:
        return (f"#include <{path}> reads a file outside the standard headers (absolute or '..' path); compiler "
                f"errors would echo it. Include only standard C/C++ and CUDA headers")
    if _FORBIDDEN_HEADERS.match(path):
        return (f"#include <{path}> is not allowed in a candidate (file, process or dynamic-loading APIs)")
    if _VENDOR_LIBRARY.match(path):
        return (f"#include <{path}>: vendor libraries (cuBLAS, cuDNN, CUTLASS, NVRTC...) are not allowed; the work "
                f"must be done by your own kernels")
    if path in ALLOWED_HEADERS or path.startswith(_ALLOWED_HEADER_PREFIXES):
        return ""
    if torch_headers and path.startswith(_TORCH_HEADER_PREFIXES):
        return ""
    return (f"#include <{path}> is not a standard C/C++ or CUDA header a candidate may use (allowed: the C/C++ "
            f"standard library and CUDA headers such as cuda_runtime.h, cuda_fp16.h, cooperative_groups.h, cub/, "
            f"thrust/)")


def scan_c_source_hygiene(source: str, *, torch_headers: bool = False) -> list[str]:
    """Rules about how a C/CUDA source is *spelled*: preprocessor tricks, forbidden host functions
    under any spelling, headers. Shared by :func:`scan_c` and the PyTorch scan of embedded sources
    (``torch_headers`` then allows ``<torch/...>``, ``<ATen/...>``, ``<c10/...>``, ``<pybind11/...>``)."""
    findings: list[str] = []

    def add(pos: int, msg: str) -> None:
        # Every scanned text keeps the offsets of ``source`` (blanking and splicing never move a
        # character), and only ``source`` still has every newline: lines are counted there.
        line = f"line {line_of(source, pos)}: {msg}"
        if line not in findings:
            findings.append(line)

    m = _RAW_STRING.search(source)
    if m:
        add(m.start(), "raw string literal R\"(...)\": not allowed in a candidate (it hides code from the "
                               "checks); use ordinary string literals")
    m = _DIGIT_SEPARATOR.search(source)
    if m:
        add(m.start(), "digit separator (1'000): not allowed in a candidate (it hides code from the checks); "
                               "write the number without separators")
    source = _normalise(source)
    m = _SPLIT_IDENTIFIER.search(source)
    if m:
        add(m.start(), "line continuation (backslash-newline) inside an identifier: write names on one line")
    nocomment = blank(source, literals=False, splice=True)
    text = blank(source, splice=True)
    m = _UCN.search(text)
    if m:
        add(m.start(), "universal character name (\\uXXXX) outside a string: write identifiers in plain ASCII")
    m = _MANGLED.search(text)
    if m:
        add(m.start(), f"{m.group(0)}: mangled or libc-internal symbol names (_Z..., __libc_..., _IO_...) "
                             f"reach library functions the checks cannot see")
    m = next((m for m in _STD_NAMESPACE.finditer(text) if not re.search(r"\busing\s*$", text[:m.start()])), None)
    if m:
        add(m.start(), "opens namespace std (or a reserved namespace): adding to or redefining the standard "
                             "library (e.g. its clocks) is not allowed")
    m = _OPERATOR_NEW.search(text)
    if m:
        add(m.start(), f"defines or calls operator {m.group(1)} directly (replacing the allocator interposes "
                             f"on the harness); use new/delete expressions or cudaMalloc")
    for m in _DIRECTIVE.finditer(nocomment):
        directive, rest = m.group(1), m.group(2)
        if directive == "include":
            target = _INCLUDE_TARGET.match(rest)
            if not target:
                add(m.start(), f"#include{rest.rstrip()}: a computed #include (macro or unusual "
                                          f"spelling); write #include <header> with a standard header")
            elif target.group(3) is not None:
                add(m.start(), f"#include \"{target.group(3)}\" of another file; a candidate is one "
                                          f"self-contained source file (standard headers go in <...>, e.g. "
                                          f"#include <cuda_runtime.h>)")
            else:
                why = _header_problem(target.group(2), torch_headers)
                if why:
                    add(m.start(), why)
        elif directive in ("include_next", "import", "embed"):
            add(m.start(), f"#{directive} is not allowed in a candidate (it reads other files)")
        elif directive == "pragma":
            if not _ALLOWED_PRAGMAS.match(blank(rest, splice=True)):
                add(m.start(), f"#pragma{rest.rstrip()[:60]} is not allowed in a candidate (allowed: "
                                          f"#pragma unroll, once, pack and diagnostic pragmas)")
        elif directive in ("define", "undef"):
            body = blank(rest, splice=True)
            name = re.match(r"\s*(\w+)", body)
            if name and name.group(1) in _KEYWORDS:
                add(m.start(), f"#{directive} of the keyword {name.group(1)!r}: redefining keywords and "
                                          f"CUDA qualifiers hides code from the checks")
            if directive == "define" and _STATIC_IN_MACRO.search(body):
                add(m.start(), "`static` inside a macro hides state kept across calls from the checks; "
                                          "results cached between calls are not allowed")
    if "##" in text:
        pos = text.index("##")
        add(pos, "token pasting (##) in a macro builds names the checks cannot see; write identifiers out")
    m = re.search(r"\b_Pragma\b|\b__pragma\b", text)
    if m:
        add(m.start(), "_Pragma(...) is not allowed in a candidate (it hides directives from the checks)")
    for span in _ATTRIBUTE_SPAN.finditer(text):
        for w in _ATTRIBUTE_WORD.finditer(span.group(0)):
            word = w.group(1)
            if word in ("constructor", "destructor") and span.group(0).startswith("__attribute__"):
                msg = f"__attribute__(({word})) runs code outside solve"
            else:
                msg = f"attribute {word!r} {_ATTRIBUTE_WHY[word]}; not allowed in a candidate"
            add(span.start(), msg)
    m = _ATTRIBUTE_ANYWHERE.search(text)
    if m and not any(f"'{m.group(1)}'" in f for f in findings):
        add(m.start(), f"attribute {m.group(1)!r} {_ATTRIBUTE_WHY[m.group(1)]}; not allowed in a candidate")
    m = re.search(r"\b_*(constructor|destructor)_*\b", text)
    if m and not any(m.group(1) in f for f in findings):
        add(m.start(), f"{m.group(0)}: code that runs outside solve (constructor/destructor attributes) is "
                             f"not allowed")
    m = _CODE_LOADING.search(text)
    if m:
        add(m.start(), f"{m.group(1)}: loading or compiling code at run time (driver modules, NVRTC, "
                             f"nvJitLink) is not allowed; write the kernels in the source")
    scan = blank_directives(text, ("include", "pragma", "line", "error", "warning"))
    for m in re.finditer(r"\b__builtin_\w+", scan):
        if not _ALLOWED_BUILTINS.match(m.group(0)):
            add(m.start(), f"{m.group(0)} is not allowed in a candidate (compiler builtins that reach frames, "
                                 f"return addresses or other functions hide what the code calls)")
    seen: set[str] = set()
    for m in re.finditer(r"\b[A-Za-z_]\w*\b", scan):
        name = m.group(0)
        if name in seen or name not in FORBIDDEN_IDENTIFIERS:
            continue
        if _MEMBER_BEFORE.search(scan[max(0, m.start() - 4): m.start()]):
            continue  # obj.open / ptr->signal: a member, not the C library function
        seen.add(name)
        why = FORBIDDEN_IDENTIFIERS[name]

        if re.match(r"\s*\(", scan[m.end():]):
            add(m.start(), f"calls {name}(), which {why}")
        else:
            add(m.start(), f"refers to {name}, which {why} (taking its address, aliasing or declaring it is "
                                 f"refused like a call)")
    for m in re.finditer(r"(?<![\w.>])(?:::\s*)?\b(" + "|".join(_FORBIDDEN_CALL_ONLY) + r")\s*\(", scan):
        if _MEMBER_BEFORE.search(scan[max(0, m.start() - 4): m.start()]):
            continue
        add(m.start(), f"calls {m.group(1)}(), which {_FORBIDDEN_CALL_ONLY[m.group(1)]}")
    for name, header, _body, line in _definitions(text, source):
        if name in _LIBC_NAMES and not re.search(r"\b__device__\b", header):
            findings.append(f"line {line}: defines {name}(), a C library function the harness itself calls "
                            f"(interposing library functions is not allowed; give your helper another name)")
    return findings


def _definitions(text: str, source: str) -> list[tuple[str, str, str, int]]:
    """``(name, header, body, line of the brace)`` of each function definition of blanked ``text``."""
    return [(f.name, f.head(text), text[f.body[0] + 1:f.body[1]], line_of(source, f.body[0]))
            for f in functions(text) if f.body is not None]


def _loop_bodies(body: str) -> list[str]:
    """Texts of loops in host code (header + body or single statement)."""
    out = []
    for m in _LOOP.finditer(body):
        start = m.start()
        brace = body.find("{", m.end())
        semi = body.find(";", m.end())
        if m.group(1) == "for":
            # skip the for(...;...;...) header
            p = body.find("(", m.end())
            depth, k = 0, p
            while 0 <= k < len(body):
                depth += {"(": 1, ")": -1}.get(body[k], 0)
                k += 1
                if depth == 0:
                    break
            brace = body.find("{", k)
            semi = body.find(";", k)
        if brace != -1 and (semi == -1 or brace < semi):
            depth, k = 0, brace
            while k < len(body):
                depth += {"{": 1, "}": -1}.get(body[k], 0)
                k += 1
                if depth == 0:
                    break
            out.append(body[start:k])
        elif semi != -1:
            out.append(body[start: semi + 1])
    return out


@functools.lru_cache(maxsize=1)
def _runtime_symbols() -> frozenset[str]:
    """Functions the CPU runtime defines with a ``vf_`` prefix (a candidate declaring one could
    reach the runtime's internals; variables such as OptiML's ``vf_base`` stay allowed)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "cpu" / "runtime"
    names: set[str] = set()
    for path in root.glob("*.[ch]*"):
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        names.update(re.findall(r"\b(vf_\w+)\s*\(", text))
    return frozenset(names)


def scan_c(source: str, spec: TaskSpec | None = None) -> list[str]:
    """Reasons to reject ``source`` without running it (empty list: nothing found)."""
    findings = scan_c_source_hygiene(source)
    source = _normalise(source)
    text = blank(source, splice=True)
    entry = spec.entry if spec else "solve"
    for m in _API_DEFINE.finditer(text):
        findings.append(f"line {line_of(source, m.start())}: #{m.group(1)} of the CUDA/timing name {m.group(2)!r} "
                        f"(redefining CUDA API names is timer/API patching)")
    m = re.search(r"\breference\b", blank_directives(text, ("include", "pragma")))
    if m:
        called = re.match(r"\s*\(", text[m.end():])
        findings.append(f"line {line_of(source, m.start())}: {'calls' if called else 'refers to'} the task's reference "
                        f"function `reference` (the reference is not available to candidates; implement the "
                        f"computation)")
    m = _ASM.search(text)
    if m:
        findings.append(f"line {line_of(source, m.start())}: inline assembly ({m.group(1)}) is not allowed: it cannot "
                        f"be checked or run on the CPU runtime")
    blanked = blank_directives(text, ("include", "pragma"))
    m = re.search(r"\bvf\s*::|\bnamespace\s+vf\b|\b__vf\w*|\bveriforge\w*", blanked)
    if m is None:
        m = next((x for x in re.finditer(r"\bvf_\w+", blanked) if x.group(0) in _runtime_symbols()), None)
    if m:
        findings.append(f"line {line_of(source, m.start())}: refers to {m.group(0).strip()!r}, part of veriforge's "
                        f"runtime and evaluation driver (switching the harness's checks off is not allowed)")
    funcs = _definitions(text, source)
    for name, _header, _body, line in funcs:
        if re.match(r"cuda[A-Z]\w*$|cu[A-Z]\w*$|nvtx\w*$", name):
            findings.append(f"line {line}: defines {name}(), a CUDA API name (timer/API patching)")
    host = [(n, h, b, ln) for n, h, b, ln in funcs if not _DEVICE_QUAL.search(h)]
    kernels = [n for n, h, _b, _ln in funcs if "__global__" in h]
    if not kernels:
        findings.append("defines no __global__ kernel: the work must be done by CUDA kernels")
    elif "<<<" not in text and "cudaLaunchKernel" not in text:
        findings.append(f"{entry}() launches no kernel (no <<<...>>> launch)")
    if spec:
        pointer_names = [p.name for p in spec.params if p.role != "scalar"]
    else:
        pointer_names = next((_pointer_params(h) for n, h, _b, _ln in host if n == entry), [])
    device = _device_pointers(host, entry, pointer_names)
    for name, _header, body, line in host:
        for m in re.finditer(r"\bstatic\b(?!\s+(const|constexpr)\b)(?![^;(]*\()", body):
            findings.append(f"line {line_of(source, text.find(body) + m.start())}: `static` variable in host function "
                            f"{name}() keeps state across calls (results cached between calls are not allowed)")
            break
        for p in sorted(device.get(name, ())):
            if re.search(rf"(?<![\w.]){re.escape(p)}\s*\[", body) or \
                    re.search(rf"(?:^|[=(,;{{\s])\*\s*\(?\s*{re.escape(p)}\b(?!\s*\))", body):
                findings.append(f"line {line}: host function {name}() reads or writes device buffer {p!r} "
                                f"directly; device memory must be accessed by kernels")
                break
            m = re.search(rf"\b(memcpy|memmove|memcmp|memset|copy|copy_n|fill|fill_n|transform|accumulate|for_each|"
                          rf"reduce|sort)\s*\([^;]*\b{re.escape(p)}\b", body)
            if m:
                findings.append(f"line {line}: host function {name}() passes device buffer {p!r} to {m.group(1)}() on "
                                f"the host; device memory must be accessed by kernels (or copied with cudaMemcpy)")
                break
    to_host = [name for name, _h, body, _ln in host if _copies_to_host(body)]
    if to_host:
        for name, _header, body, line in host:
            plain_loops = [lp for lp in _loop_bodies(body) if "<<<" not in lp and "cuda" not in lp]
            algo = _HOST_ALGORITHMS.search(body)
            if plain_loops or algo:
                how = "loops over it" if plain_loops else f"runs std::{algo.group(1)} on it"  # type: ignore[union-attr]
                findings.append(f"line {line}: host code copies device data to the host ({to_host[0]}()) and "
                                f"{name}() {how} on the CPU (host-side computation is not allowed)")
                break
    if _STREAM_CREATE.search(text) and not _STREAM_WAIT.search(text):
        findings.append("creates a stream but never synchronises it (cudaStreamSynchronize/cudaDeviceSynchronize): "
                        "work left running on a side stream when solve returns is not allowed")
    findings.extend(_global_state(text, source))
    return findings


_HOST_ALGORITHMS = re.compile(r"\bstd\s*::\s*(transform|for_each|accumulate|reduce|inner_product|partial_sum|"
                              r"inclusive_scan|exclusive_scan|sort|stable_sort|max_element|min_element|"
                              r"transform_reduce|nth_element|partial_sort|adjacent_difference)\b")
_MEMCPY_CALL = re.compile(r"\bcudaMemcpy\w*\s*\(")


def _copies_to_host(body: str) -> bool:
    """A ``cudaMemcpy*`` in ``body`` whose direction is not literally host→device or device→device."""
    for m in _MEMCPY_CALL.finditer(body):
        if "FromSymbol" in m.group(0):
            return True
        end = body.find(";", m.end())
        args = body[m.end(): end if end >= 0 else len(body)]
        if "ToSymbol" in m.group(0) or re.search(r"\bcudaMemcpy(HostToDevice|DeviceToDevice)\b", args):
            continue
        return True
    return False


def _split_args(text: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [a.strip() for a in out]


def _param_list(header: str) -> list[str]:
    m = re.search(r"\((.*)\)\s*$", header.strip(), re.S)
    return _split_args(m.group(1)) if m else []


def _pointer_params(header: str) -> list[str]:
    """Names of the pointer (or array) parameters in a function header."""
    out = []
    for param in _param_list(header):
        if "*" in param or "[" in param:
            m = re.search(r"([A-Za-z_]\w*)\s*(\[[^\]]*\])?\s*$", param.split("=")[0])
            if m:
                out.append(m.group(1))
    return out


def _device_pointers(host: list[tuple[str, str, str, int]], entry: str,
                     pointer_names: list[str]) -> dict[str, set[str]]:
    """Per host function, the names that hold device pointers: the entry's pointer parameters, local aliases
    of them (``const float* p = x + 4;``) and the parameters of host helpers they are passed to."""
    funcs = {name: (header, body) for name, header, body, _ln in host}
    device: dict[str, set[str]] = {name: set() for name in funcs}
    if entry in device:
        device[entry] |= {p for p in pointer_names if re.search(rf"\b{re.escape(p)}\b", funcs[entry][0])}
    for _ in range(10):
        changed = False
        for name, (_header, body) in funcs.items():
            names = device[name]
            if not names:
                continue
            pattern = "|".join(re.escape(n) for n in sorted(names))
            for m in re.finditer(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*=\s*([^;=][^;]*)", body):
                if re.search(rf"\b({pattern})\b", m.group(2)) and m.group(1) not in names:
                    names.add(m.group(1))
                    changed = True
            for callee, (cheader, _cbody) in funcs.items():
                if callee == name:
                    continue
                params = _param_list(cheader)
                for call in re.finditer(rf"\b{re.escape(callee)}\s*\(", body):
                    depth, k = 1, call.end()
                    while k < len(body) and depth:
                        depth += {"(": 1, ")": -1}.get(body[k], 0)
                        k += 1
                    for i, arg in enumerate(_split_args(body[call.end(): k - 1])):
                        if i < len(params) and re.search(rf"\b({pattern})\b", arg):
                            pname = re.search(r"([A-Za-z_]\w*)\s*(\[[^\]]*\])?\s*$", params[i].split("=")[0])
                            if pname and pname.group(1) not in device[callee]:
                                device[callee].add(pname.group(1))
                                changed = True
        if not changed:
            break
    return device


def _global_state(text: str, source: str) -> list[str]:
    """Mutable host variables at file scope (state that survives between calls) in blanked ``text``
    (lines counted in ``source``)."""
    out = []
    depth = 0
    start = 0
    for k, ch in enumerate(text):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
            start = k + 1
        elif ch == ";" and depth == 0:
            stmt = text[start:k]
            start = k + 1
            lines = [ln for ln in stmt.splitlines() if not ln.lstrip().startswith("#")]
            decl = " ".join(" ".join(lines).split())
            if not decl or "(" in decl.split("=")[0] or re.search(
                    r"\b(const|constexpr|__constant__|__device__|__shared__|__managed__|typedef|using|extern|"
                    r"struct|class|enum|template|namespace|static_assert)\b", decl):
                continue
            if re.match(r"^(static\s+)?[A-Za-z_][\w:<>\s\*]*\s*\*?\s*[A-Za-z_]\w*(\s*\[[^\]]*\])*\s*(=.*)?$", decl):
                out.append(f"line {line_of(source, k)}: file-scope variable `{decl[:60]}` keeps host state across "
                           f"calls (caching results between calls is not allowed)")
    return out
