// veriforge CPU runtime: dynamic parallelism - kernels launched from device code.
//
// A child grid may start any time after its launch and must complete before its parent grid is
// considered complete; a tail launch (cudaStreamTailLaunch) runs after the parent grid and all of
// its other children; a fire-and-forget launch (cudaStreamFireAndForget) is independent of the
// parent. One valid schedule of all three on a CPU: queue each launch made by the running grid and
// run the queue once the grid's blocks have finished - the plain and fire-and-forget children in
// launch order (each with its own descendants, recursively), then the tail launches. run_grid
// (scheduler.cpp) calls run_child_grids after every grid, so this holds for launches from whole
// programs, graphs and Module.launch alike. As on a GPU, nesting is limited to 24 levels
// (cudaErrorLaunchMaxDepthExceeded) and the launches waiting to run to
// cudaLimitDevRuntimePendingLaunchCount (default 2048; cudaErrorLaunchPendingCountExceeded). The
// order of device printf output between blocks and children can differ from a GPU's.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "vf_core.h"
#include "vf_launch.h"

namespace vf {
namespace {

constexpr int kMaxDepth = 24;                 // CUDA's maximum nesting depth of device launches
constexpr int kErrMaxDepth = 65;              // cudaErrorLaunchMaxDepthExceeded
constexpr int kErrPendingCount = 69;          // cudaErrorLaunchPendingCountExceeded
constexpr size_t kDefaultPendingLimit = 2048;  // cudaLimitDevRuntimePendingLaunchCount's default

enum Kind { kChild, kFireAndForget, kTail };
struct Pending {
    DeferredLaunch* launch;
    Kind kind;
};

std::mutex g_mutex;
std::unordered_map<const GridSpec*, std::vector<Pending>> g_children;  // by the launching grid
std::atomic<size_t> g_pending{0};     // launched, not yet started
std::atomic<int> g_depth{0};          // nesting depth of the grid running now (0: launched by the host)
thread_local int tl_device_error = 0;  // cudaGetLastError in device code (per worker thread)

size_t pending_limit() {
#if defined(VF_HAVE_CUDA_HEADERS)
    size_t v = kDefaultPendingLimit;
    if (cudaDeviceGetLimit(&v, cudaLimitDevRuntimePendingLaunchCount) == cudaSuccess) return v;
#endif
    return kDefaultPendingLimit;
}

}  // namespace

int submit_device_launch(DeferredLaunch* launch, cudaStream_t stream) {
    const GridSpec* parent = current_grid();
    const char* why = "";
    int err = check_launch_config(launch->spec.grid, launch->spec.block, launch->spec.shared_bytes, &why);
    if (!err && g_depth.load() + 1 >= kMaxDepth) err = kErrMaxDepth;
    if (!err && g_pending.load() >= pending_limit()) err = kErrPendingCount;
    if (err || !parent) {
        delete launch;
        tl_device_error = err ? err : 801;
        return tl_device_error;
    }
    uintptr_t s = reinterpret_cast<uintptr_t>(stream);
    Kind kind = s == 0x3 ? kTail : s == 0x4 ? kFireAndForget : kChild;
    std::lock_guard<std::mutex> lock(g_mutex);
    g_children[parent].push_back(Pending{launch, kind});
    g_pending.fetch_add(1);
    return 0;
}

int device_last_error(bool reset) {
    int e = tl_device_error;
    if (reset) tl_device_error = 0;
    return e;
}

int device_synchronize_refused() {
    trap("cudaDeviceSynchronize() in device code (dynamic parallelism's CDP1 synchronisation, removed in CUDA 12) "
         "is not supported by the CPU runtime",
         0);
}

int run_child_grids(const GridSpec* grid, int err) {
    std::vector<Pending> mine;
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (g_children.empty()) return err;
        auto it = g_children.find(grid);
        if (it == g_children.end()) return err;
        mine = std::move(it->second);
        g_children.erase(it);
    }
    int result = err;  // a faulted grid's children never start
    g_depth.fetch_add(1);
    for (int pass = 0; pass < 2; ++pass) {
        for (Pending& p : mine) {
            if ((p.kind == kTail) != (pass == 1)) continue;
            g_pending.fetch_sub(1);
            if (!result) result = run_grid(p.launch->spec);  // runs the child's own children too
            delete p.launch;
            p.launch = nullptr;
        }
    }
    g_depth.fetch_sub(1);
    return result;
}

}  // namespace vf
