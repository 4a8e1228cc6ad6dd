// veriforge CPU runtime: the launch server linked into every compiled Module.
//
// Python keeps one of these processes per Module and talks to it over two pipes; argument
// arrays travel through a shared memfd, so a launch costs a few syscalls, not a process start.
// Running kernels in a separate process means a segfault, an abort() from assert, an ASan report
// or an endless loop only ever kills this server - the caller's Python process survives and turns
// it into a KernelFault / KernelTimeoutError.
//
// Protocol (little-endian, native struct layout; see veriforge/cuda/cpu/worker.py):
//   request  = u32 magic, u32 op, then op-specific payload
//   op 1 DESCRIBE -> reply text: one line per kernel (see describe())
//   op 2 LAUNCH   -> LaunchHeader, blob, nbufs x BufferSpec, npatches x Patch
//   op 3 QUIT
//   op 4 DESCRIBE_FUNCTIONS -> reply text: one line per extern "C" host function
//   op 5 CALL     -> CallHeader, blob, nbufs x BufferSpec, npatches x Patch; reply text = the 8-byte
//                    return value (status 0) or the first failed launch's message
//   reply    = i32 status, u32 length, f64 seconds, then `length` bytes of text
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "vf_core.h"

namespace vf {
static std::vector<KernelEntry*>& registry() {
    static std::vector<KernelEntry*> r;
    return r;
}
void register_kernel(KernelEntry* entry) { registry().push_back(entry); }
const std::vector<KernelEntry*>& registered_kernels() { return registry(); }
static std::vector<FunctionEntry*>& function_registry() {
    static std::vector<FunctionEntry*> r;
    return r;
}
void register_function(FunctionEntry* entry) { function_registry().push_back(entry); }

std::string raw_type_name(const char* pretty) {
    if (pretty == nullptr) return "?";
    std::string s = pretty;  // "... [with T = const float*; std::string = ...]"
    size_t a = s.find("T = ");
    if (a == std::string::npos) return "?";
    a += 4;
    size_t b = s.find_first_of(";]", a);
    return s.substr(a, b - a);
}
static ParamInfo describe(const RawParam& r, unsigned& offset) {
    ParamInfo p{};
    p.kind = r.kind;
    p.type = raw_type_name(r.pretty);
    if (!r.layout) return p;
    p.size = r.size;
    p.align = r.align;
    offset = (offset + p.align - 1) / p.align * p.align;
    p.offset = offset;
    offset += p.size;
    p.pointee_kind = r.pointee_kind;
    p.pointee_size = r.pointee_size;
    p.pointee_const = r.pointee_const;
    return p;
}
size_t describe_params(std::vector<ParamInfo>& out, const RawParam* raw, size_t n) {
    unsigned offset = 0;
    for (size_t i = 0; i < n; ++i) out.push_back(describe(raw[i], offset));
    return offset;
}
void init_kernel_entry(KernelEntry& entry, const char* name, void* fn, const RawParam* raw, size_t n,
                       int (*run)(const KernelEntry&, const char*, GridSpec)) {
    entry.name = name;
    entry.fn = fn;
    entry.blob_size = describe_params(entry.params, raw, n);
    entry.run = run;
    register_kernel(&entry);
}
void init_function_entry(FunctionEntry& entry, const char* name, void* fn, const RawParam* ret, const RawParam* raw,
                         size_t n, void (*call)(const FunctionEntry&, const char*, unsigned char*),
                         const char* problem) {
    entry.name = name;
    entry.fn = fn;
    if (ret == nullptr) {
        entry.ret.kind = 'v';
        entry.ret.type = "void";
    } else {
        unsigned zero = 0;
        entry.ret = describe(*ret, zero);
    }
    if (call != nullptr) {
        entry.blob_size = describe_params(entry.params, raw, n);
        entry.call = call;
    } else {
        describe_params(entry.params, raw, n);  // by type only (RawParam::layout is false)
        entry.problem = problem;
    }
    register_function(&entry);
}
const std::vector<FunctionEntry*>& registered_functions() { return function_registry(); }
// Module.call hooks (host_api.cpp).
void call_begin();
int call_end(std::string& message);
void register_device_buffer(void* ptr, size_t size);
void unregister_device_buffers();
}  // namespace vf

namespace {

constexpr uint32_t kMagic = 0x56464331;  // "VFC1"

struct LaunchHeader {
    int32_t kernel;
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t flags;  // bit 0: reverse order (race probe)
    uint64_t shared_bytes;
    uint64_t shm_size;
    uint32_t blob_size;
    uint32_t nbufs;
    uint32_t npatches;
    uint32_t pad;
};
struct CallHeader {
    int32_t function;
    uint32_t blob_size;
    uint64_t shm_size;
    uint32_t nbufs;
    uint32_t npatches;
};
static_assert(sizeof(CallHeader) == 24, "CallHeader must match worker.py's _CALL_HEADER");
struct BufferSpec {
    uint64_t offset;
    uint64_t size;
};
struct Patch {
    uint32_t blob_offset;
    int32_t buffer;  // -1: null pointer
};

int g_cmd = -1, g_reply = -1, g_shm = -1;
char* g_shm_base = nullptr;
size_t g_shm_mapped = 0;
const char* g_current_kernel = nullptr;
const char* g_current_function = nullptr;

void read_exact(void* dst, size_t n) {
    char* p = static_cast<char*>(dst);
    while (n) {
        ssize_t r = read(g_cmd, p, n);
        if (r <= 0) _exit(0);  // parent went away
        p += r;
        n -= (size_t)r;
    }
}

void write_exact(const void* src, size_t n) {
    const char* p = static_cast<const char*>(src);
    while (n) {
        ssize_t r = write(g_reply, p, n);
        if (r <= 0) _exit(0);
        p += r;
        n -= (size_t)r;
    }
}

void reply(int32_t status, const std::string& text, double seconds) {
    fflush(stdout);
    struct {
        int32_t status;
        uint32_t length;
        double seconds;
    } head{status, (uint32_t)text.size(), seconds};
    write_exact(&head, sizeof head);
    write_exact(text.data(), text.size());
}

std::string param_text(const vf::ParamInfo& p) {
    return std::string(1, p.kind) + "," + std::to_string(p.size) + "," + std::to_string(p.align) + "," +
           std::to_string(p.offset) + "," + std::string(1, p.pointee_kind ? p.pointee_kind : '-') + "," +
           std::to_string(p.pointee_size) + "," + (p.pointee_const ? "1" : "0") + "," + p.type;
}

std::string describe_functions() {
    // name \t blob_size \t return param \t problem \t param;param;...  (params as in describe())
    std::string out;
    for (const vf::FunctionEntry* e : vf::registered_functions()) {
        out += e->name + "\t" + std::to_string(e->blob_size) + "\t" + param_text(e->ret) + "\t" + e->problem + "\t";
        for (size_t i = 0; i < e->params.size(); ++i) out += (i ? ";" : "") + param_text(e->params[i]);
        out += "\n";
    }
    return out;
}

std::string describe() {
    // name \t blob_size \t param;param;...   param = kind,size,align,offset,pkind,psize,pconst,type
    std::string out;
    for (const vf::KernelEntry* e : vf::registered_kernels()) {
        out += e->name + "\t" + std::to_string(e->blob_size) + "\t";
        for (size_t i = 0; i < e->params.size(); ++i) {
            const vf::ParamInfo& p = e->params[i];
            if (i) out += ";";
            out += std::string(1, p.kind) + "," + std::to_string(p.size) + "," + std::to_string(p.align) + "," +
                   std::to_string(p.offset) + "," + std::string(1, p.pointee_kind ? p.pointee_kind : '-') + "," +
                   std::to_string(p.pointee_size) + "," + (p.pointee_const ? "1" : "0") + "," + p.type;
        }
        out += "\n";
    }
    return out;
}

void map_shm(size_t size) {
    if (size <= g_shm_mapped && g_shm_base) return;
    if (g_shm_base) munmap(g_shm_base, g_shm_mapped);
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, g_shm, 0);
    if (p == MAP_FAILED) {
        perror("veriforge worker: mmap of the argument buffer failed");
        _exit(3);
    }
    g_shm_base = static_cast<char*>(p);
    g_shm_mapped = size;
}

// Argument arrays as the called code sees them: the shared memory itself, or under ASan an
// exact-size heap copy of each (so its bounds are known), copied back by finish_buffers().
struct Buffers {
    std::vector<char*> ptrs;
    bool exact = false;
};

Buffers prepare_buffers(const std::vector<BufferSpec>& bufs) {
    Buffers b;
#if defined(__SANITIZE_ADDRESS__)
    b.exact = true;
#endif
    b.ptrs.resize(bufs.size());
    for (size_t i = 0; i < bufs.size(); ++i) {
        char* src = g_shm_base + bufs[i].offset;
        if (b.exact) {
            b.ptrs[i] = static_cast<char*>(malloc(bufs[i].size ? bufs[i].size : 1));
            memcpy(b.ptrs[i], src, bufs[i].size);
        } else {
            b.ptrs[i] = src;
        }
    }
    return b;
}

void finish_buffers(Buffers& b, const std::vector<BufferSpec>& bufs) {
    if (!b.exact) return;
    for (size_t i = 0; i < bufs.size(); ++i) {
        memcpy(g_shm_base + bufs[i].offset, b.ptrs[i], bufs[i].size);
        free(b.ptrs[i]);
    }
}

void launch() {
    LaunchHeader h;
    read_exact(&h, sizeof h);
    std::vector<char> blob(h.blob_size + 16);
    read_exact(blob.data(), h.blob_size);
    std::vector<BufferSpec> bufs(h.nbufs);
    if (h.nbufs) read_exact(bufs.data(), sizeof(BufferSpec) * h.nbufs);
    std::vector<Patch> patches(h.npatches);
    if (h.npatches) read_exact(patches.data(), sizeof(Patch) * h.npatches);

    const auto& kernels = vf::registered_kernels();
    if (h.kernel < 0 || (size_t)h.kernel >= kernels.size()) {
        reply(1, "unknown kernel index", 0);
        return;
    }
    const vf::KernelEntry& k = *kernels[(size_t)h.kernel];
    if (h.shm_size) map_shm(h.shm_size);
    Buffers b = prepare_buffers(bufs);
    for (const Patch& p : patches) {
        char* value = p.buffer < 0 ? nullptr : b.ptrs[(size_t)p.buffer];
        memcpy(blob.data() + p.blob_offset, &value, sizeof value);
    }
    vf::GridSpec spec{k.name.c_str(),
                      dim3(h.grid[0], h.grid[1], h.grid[2]),
                      dim3(h.block[0], h.block[1], h.block[2]),
                      (size_t)h.shared_bytes,
                      nullptr,
                      nullptr,
                      (h.flags & 1u) != 0};
    g_current_kernel = k.name.c_str();
    auto t0 = std::chrono::steady_clock::now();
    int err = k.run(k, blob.data(), spec);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    g_current_kernel = nullptr;
    finish_buffers(b, bufs);
    if (err == 0) reply(0, "", secs);
    else reply((err == 719 || err == 710) ? 2 : 1, vf::last_fault_message(), secs);
}

void call() {
    CallHeader h;
    read_exact(&h, sizeof h);
    std::vector<char> blob(h.blob_size + 16);
    read_exact(blob.data(), h.blob_size);
    std::vector<BufferSpec> bufs(h.nbufs);
    if (h.nbufs) read_exact(bufs.data(), sizeof(BufferSpec) * h.nbufs);
    std::vector<Patch> patches(h.npatches);
    if (h.npatches) read_exact(patches.data(), sizeof(Patch) * h.npatches);

    const auto& functions = vf::registered_functions();
    if (h.function < 0 || (size_t)h.function >= functions.size() || !functions[(size_t)h.function]->call) {
        reply(1, "unknown or uncallable function index", 0);
        return;
    }
    const vf::FunctionEntry& f = *functions[(size_t)h.function];
    if (h.shm_size) map_shm(h.shm_size);
    Buffers b = prepare_buffers(bufs);
    for (size_t i = 0; i < bufs.size(); ++i) vf::register_device_buffer(b.ptrs[i], bufs[i].size);
    for (const Patch& p : patches) {
        char* value = p.buffer < 0 ? nullptr : b.ptrs[(size_t)p.buffer];
        memcpy(blob.data() + p.blob_offset, &value, sizeof value);
    }
    unsigned char ret[8] = {};
    vf::call_begin();
    g_current_function = f.name.c_str();
    auto t0 = std::chrono::steady_clock::now();
    f.call(f, blob.data(), ret);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    g_current_function = nullptr;
    std::string message;
    int err = vf::call_end(message);
    vf::unregister_device_buffers();
    finish_buffers(b, bufs);
    if (err == 0) reply(0, std::string(reinterpret_cast<char*>(ret), sizeof ret), secs);
    else reply((err == 719 || err == 710) ? 2 : 1, message, secs);
}

void on_crash(int sig, siginfo_t* info, void*) {
    // Async-signal-safe report; Python adds it to the KernelFault it raises.
    char buf[512];
    const char* kernel = vf::running_kernel();
    if (!kernel) kernel = g_current_kernel;
    const char* what = sig == SIGSEGV ? "segmentation fault" : (sig == SIGBUS ? "bus error" : "arithmetic fault");
    int n = kernel || !g_current_function
        ? snprintf(buf, sizeof buf, "veriforge: %s in kernel '%s' (address %p)\n", what, kernel ? kernel : "?",
                   info ? info->si_addr : nullptr)
        : snprintf(buf, sizeof buf, "veriforge: %s in host function '%s' (address %p)\n", what, g_current_function,
                   info ? info->si_addr : nullptr);
    if (n > 0) {
        ssize_t ignored = write(2, buf, (size_t)n);
        (void)ignored;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

}  // namespace

int main(int argc, char** argv) {
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--cmd-fd")) g_cmd = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reply-fd")) g_reply = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--shm-fd")) g_shm = atoi(argv[i + 1]);
    }
    if (g_cmd < 0 || g_reply < 0) {
        fprintf(stderr, "veriforge kernel server: started without --cmd-fd/--reply-fd (it is driven by "
                        "veriforge.cuda.cpu, not run by hand)\n");
        return 2;
    }
#if !defined(__SANITIZE_ADDRESS__)
    struct sigaction sa{};
    sa.sa_sigaction = on_crash;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    static char altstack[64 * 1024];
    stack_t ss{};
    ss.ss_sp = altstack;
    ss.ss_size = sizeof altstack;
    sigaltstack(&ss, nullptr);
    sigaction(SIGSEGV, &sa, nullptr);
    sigaction(SIGBUS, &sa, nullptr);
    sigaction(SIGFPE, &sa, nullptr);
#endif
    for (;;) {
        uint32_t head[2];
        read_exact(head, sizeof head);
        if (head[0] != kMagic) {
            fprintf(stderr, "veriforge kernel server: protocol error\n");
            return 3;
        }
        switch (head[1]) {
            case 1: reply(0, describe(), 0); break;
            case 2: launch(); break;
            case 3: return 0;
            case 4: reply(0, describe_functions(), 0); break;
            case 5: call(); break;
            default: reply(1, "unknown request", 0); break;
        }
    }
}
