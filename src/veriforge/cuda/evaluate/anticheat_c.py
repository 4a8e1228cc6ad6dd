"""Static anti-cheat for C→CUDA candidates (comments and strings stripped before scanning).

Each rule names a known way to pass the check without doing the work on the GPU, and returns a
sentence the candidate's author (often a model) can act on. Dynamic counterparts live in the
harness: fresh inputs per trial (caching, constant outputs), poisoned outputs (partial writes),
memcheck (reads outside the inputs). The CPU runtime keeps device memory in host memory, so
``solve`` touching device pointers directly would pass here and crash on a GPU: it is refused.
"""

from __future__ import annotations

import re

from veriforge.cuda.tasks.schema import TaskSpec

from .cleanup import function_bodies, line_of, strip_c

__all__ = ["scan_c"]

_FORBIDDEN_HEADERS = re.compile(
    r"^\s*#\s*include\s*<\s*(dlfcn\.h|fstream|filesystem|unistd\.h|fcntl\.h|sys/[\w/]+\.h|signal\.h|setjmp\.h|"
    r"pthread\.h|thread|future|spawn\.h|link\.h)\s*>", re.M)
_QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"', re.M)
_API_DEFINE = re.compile(r"^\s*#\s*(define|undef)\s+(cuda\w+|cu[A-Z]\w*|nvtx\w*|__syncthreads|clock\w*)\b", re.M)
_FORBIDDEN_CALLS = {
    "dlsym": "looks up symbols at run time (dlsym) - the way timers and CUDA calls get patched",
    "dlopen": "loads libraries at run time (dlopen)",
    "system": "runs shell commands",
    "popen": "runs shell commands",
    "fork": "starts processes",
    "execv": "starts programs",
    "execve": "starts programs",
    "execl": "starts programs",
    "execlp": "starts programs",
    "execvp": "starts programs",
    "fopen": "opens files (a candidate may only compute from its arguments)",
    "freopen": "opens files",
    "open": "opens files",
    "mmap": "maps memory or files",
    "getenv": "reads the environment",
    "setenv": "changes the environment",
    "putenv": "changes the environment",
    "syscall": "makes raw system calls",
    "ptrace": "traces processes",
    "atexit": "registers exit handlers",
    "signal": "installs signal handlers",
    "sigaction": "installs signal handlers",
    "longjmp": "jumps out of the harness's control flow",
    "clock_gettime": "reads or patches clocks",
    "gettimeofday": "reads or patches clocks",
}
_ASM = re.compile(r"\b(asm|__asm__|__asm)\b")
_CONSTRUCTOR = re.compile(r"__attribute__\s*\(\(\s*(constructor|destructor)")
_STREAM_CREATE = re.compile(r"\bcuda(StreamCreate\w*)\s*\(")
_STREAM_WAIT = re.compile(r"\bcuda(StreamSynchronize|DeviceSynchronize|EventSynchronize|StreamWaitEvent)\s*\(")
_D2H = re.compile(r"\bcudaMemcpy\w*\s*\([^;]*cudaMemcpy(DeviceToHost|Default)")
_LOOP = re.compile(r"\b(for|while|do)\b")
_DEVICE_QUAL = re.compile(r"\b(__global__|__device__)\b")


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


def scan_c(source: str, spec: TaskSpec | None = None) -> list[str]:
    """Reasons to reject ``source`` without running it (empty list: nothing found)."""
    findings: list[str] = []
    nocomment = strip_c(source, keep_strings=True)
    text = strip_c(source)
    entry = spec.entry if spec else "solve"
    for m in _QUOTED_INCLUDE.finditer(nocomment):
        findings.append(f"line {line_of(nocomment, m.start())}: #include \"...\" of another file; a candidate is one "
                        f"self-contained source file")
    for m in _FORBIDDEN_HEADERS.finditer(text):
        findings.append(f"line {line_of(text, m.start())}: #include <{m.group(1)}> is not allowed in a candidate "
                        f"(file, process or dynamic-loading APIs)")
    for m in _API_DEFINE.finditer(text):
        findings.append(f"line {line_of(text, m.start())}: #{m.group(1)} of the CUDA/timing name {m.group(2)!r} "
                        f"(redefining CUDA API names is timer/API patching)")
    if re.search(r"\breference\s*\(", text):
        findings.append("calls the task's reference function `reference` (the reference is not available to "
                        "candidates; implement the computation)")
    for name, why in _FORBIDDEN_CALLS.items():
        m = re.search(rf"(?<![\w.>:]){name}\s*\(", text)
        if m:
            findings.append(f"line {line_of(text, m.start())}: calls {name}(), which {why}")
    m = _ASM.search(text)
    if m:
        findings.append(f"line {line_of(text, m.start())}: inline assembly (asm) is not allowed: it cannot be "
                        f"checked or run on the CPU runtime")
    m = _CONSTRUCTOR.search(text)
    if m:
        findings.append(f"line {line_of(text, m.start())}: __attribute__(({m.group(1)})) runs code outside solve")
    funcs = function_bodies(text)
    for name, _header, _body, line in funcs:
        if re.match(r"cuda[A-Z]\w*$|cu[A-Z]\w*$|nvtx\w*$", name):
            findings.append(f"line {line}: defines {name}(), a CUDA API name (timer/API patching)")
    host = [(n, h, b, ln) for n, h, b, ln in funcs if not _DEVICE_QUAL.search(h)]
    kernels = [n for n, h, _b, _ln in funcs if "__global__" in h]
    if not kernels:
        findings.append("defines no __global__ kernel: the work must be done by CUDA kernels")
    elif "<<<" not in text and "cudaLaunchKernel" not in text:
        findings.append(f"{entry}() launches no kernel (no <<<...>>> launch)")
    pointer_names = [p.name for p in spec.params if p.role != "scalar"] if spec else []
    for name, header, body, line in host:
        for m in re.finditer(r"\bstatic\b(?!\s+(const|constexpr)\b)(?![^;(]*\()", body):
            findings.append(f"line {line_of(text, text.find(body) + m.start())}: `static` variable in host function "
                            f"{name}() keeps state across calls (results cached between calls are not allowed)")
            break
        if name == entry or any(re.search(rf"\b{re.escape(p)}\b", header) for p in pointer_names):
            for p in pointer_names:
                if not re.search(rf"\b{re.escape(p)}\b", header):
                    continue
                if re.search(rf"(?<![\w.]){re.escape(p)}\s*\[", body) or \
                        re.search(rf"(?:^|[=(,;{{\s])\*\s*{re.escape(p)}\b(?!\s*\))", body):
                    findings.append(f"line {line}: host function {name}() reads or writes device buffer {p!r} "
                                    f"directly; device memory must be accessed by kernels")
                    break
        if _D2H.search(body):
            plain_loops = [lp for lp in _loop_bodies(body) if "<<<" not in lp and "cuda" not in lp]
            if plain_loops:
                findings.append(f"line {line}: host function {name}() copies device data to the host and loops over "
                                f"it on the CPU (host-side computation is not allowed)")
    if _STREAM_CREATE.search(text) and not _STREAM_WAIT.search(text):
        findings.append("creates a stream but never synchronises it (cudaStreamSynchronize/cudaDeviceSynchronize): "
                        "work left running on a side stream when solve returns is not allowed")
    findings.extend(_global_state(text))
    return findings


def _global_state(text: str) -> list[str]:
    """Mutable host variables at file scope (state that survives between calls)."""
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
                out.append(f"line {line_of(text, k)}: file-scope variable `{decl[:60]}` keeps host state across "
                           f"calls (caching results between calls is not allowed)")
    return out
