// veriforge CPU runtime: launches that run later - kernels recorded by stream capture or added to a
// CUDA graph as kernel nodes, and kernels launched from device code (dynamic parallelism).
//
// A `<<<...>>>` launch normally runs at once with arguments that live on the launching frame.
// A deferred launch owns copies of the kernel's callable and of its arguments (a DeferredLaunch,
// cloned when a graph is cloned or instantiated) and is run later through the same GridSpec path.
// graphs.cpp owns stream capture and graphs; device_launch.cpp the grids launched by kernels.
#pragma once

#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace vf {

struct DeferredLaunch {
    GridSpec spec{};                 // fn / loop / ctx / args point into this object
    const void* func = nullptr;      // the kernel's address when known (kernel nodes, cudaLaunchKernel)
    std::vector<void*> arg_ptrs;     // one pointer per stored argument (cudaKernelNodeParams::kernelParams)
    std::vector<unsigned> arg_sizes;
    DeferredLaunch() = default;
    DeferredLaunch(const DeferredLaunch& other);  // graphs.cpp: vector code compiled once, not per launch
    virtual ~DeferredLaunch();
    virtual DeferredLaunch* clone() const = 0;
    // Records where each stored argument lives and its size (graphs.cpp).
    void set_layout(void* const* ptrs, const unsigned* sizes, size_t n);
    // Overwrites the stored arguments from an array of pointers (cudaKernelNodeParams::kernelParams),
    // each copied as the kernel's own parameter type.
    void set_args(void** args) {
        for (size_t i = 0; i < arg_ptrs.size(); ++i) std::memcpy(arg_ptrs[i], args[i], arg_sizes[i]);
    }
};

// A launch's callable and arguments, owned. `F` is the launch's callable (the front end's lambda
// around the kernel, or KernelCall below); `A...` the kernel's parameter types.
template <class F, class... A> struct OwnedLaunch final : DeferredLaunch {
    F f;
    std::tuple<A...> args;
    const void* addresses[sizeof...(A) + 1];
    OwnedLaunch(const GridSpec& s, F fn, std::tuple<A...> a) : f(std::move(fn)), args(std::move(a)) {
        spec = s;
        bind(std::index_sequence_for<A...>{});
    }
    OwnedLaunch(const OwnedLaunch& o) : DeferredLaunch(o), f(o.f), args(o.args) {
        bind(std::index_sequence_for<A...>{});
    }
    DeferredLaunch* clone() const override { return new OwnedLaunch(*this); }
    template <size_t... I> void bind(std::index_sequence<I...>) {
        spec.fn = &one_thread;
        // No thread loop of its own: the scheduler loops over one_thread (an indirect call per
        // CUDA thread). A flattened loop here would be a whole extra copy of the kernel for g++
        // to optimise at every launch site, for the rare launch that is deferred.
        spec.loop = nullptr;
        spec.ctx = this;
        void* const ptrs[sizeof...(A) + 1] = {static_cast<void*>(&std::get<I>(args))..., nullptr};
        static constexpr unsigned sizes[sizeof...(A) + 1] = {static_cast<unsigned>(sizeof(A))..., 0};
        set_layout(ptrs, sizes, sizeof...(A));
        const void* a[sizeof...(A) + 1] = {arg_address(std::get<I>(args))..., nullptr};
        for (size_t i = 0; i <= sizeof...(A); ++i) addresses[i] = a[i];
        spec.args = addresses;
        spec.nargs = sizeof...(A);
    }
    static void one_thread(void* c) {
        OwnedLaunch* x = static_cast<OwnedLaunch*>(c);
        std::apply(x->f, x->args);
    }
};

// A kernel called through its address (kernel nodes built from cudaKernelNodeParams).
template <class... P> struct KernelCall {
    void (*fn)(P...);
    void operator()(P... p) const { fn(p...); }
};

// Whether a `<<<...>>>` launch into `stream` must be deferred: the stream is capturing, or the
// launch is made from device code (dynamic parallelism).
bool launch_is_deferred(cudaStream_t stream);
// Hands a deferred launch over (ownership included): recorded as a kernel node of the capture,
// or queued as a child grid of the running grid. Returns the launch's cudaError_t.
int submit_deferred(DeferredLaunch* launch, cudaStream_t stream);
// A deferred launch the runtime cannot own (a launch through a function pointer or table whose
// callable refers to the launching frame): fails with cudaErrorNotSupported, naming it.
int refuse_deferred(const char* name, cudaStream_t stream);

// Kernel nodes and cudaLaunchKernel by address: builds an owned launch of the kernel at `fn` with
// arguments copied from `args` (registered next to the args launcher, vf_launch.h).
using ArgsDeferrer = DeferredLaunch* (*)(const void* fn, const char* name, dim3 grid, dim3 block, void** args,
                                         size_t shared);
void register_deferrer(const void* fn, const char* name, ArgsDeferrer make);
bool find_deferrer(const void* fn, const char** name, ArgsDeferrer* make);
// The address of a registered kernel with this name (captured launches know only the name), or null.
const void* find_kernel_by_name(const char* name);

template <class... P, size_t... I>
inline DeferredLaunch* make_deferred_from_args(void (*fn)(P...), const char* name, dim3 grid, dim3 block,
                                               void** args, size_t shared, std::index_sequence<I...>) {
    if (sizeof...(P) > 0 && !args) return nullptr;
    GridSpec spec{};
    spec.kernel_name = name;
    spec.grid = grid;
    spec.block = block;
    spec.shared_bytes = shared;
    auto* d = new OwnedLaunch<KernelCall<P...>, std::remove_cv_t<P>...>(
        spec, KernelCall<P...>{fn}, std::tuple<std::remove_cv_t<P>...>(*static_cast<std::remove_cv_t<P>*>(args[I])...));
    d->func = reinterpret_cast<const void*>(fn);
    return d;
}

// ---- dynamic parallelism (device_launch.cpp) ------------------------------------------------------
// The device-side error of the calling CUDA thread's last launch (cudaGetLastError in device code).
int device_last_error(bool reset);
// cudaDeviceSynchronize() in device code (CDP1, removed in CUDA 12): a fault naming it.
int device_synchronize_refused();
// Called by run_grid (scheduler.cpp) once a grid has run: runs the grids its threads launched
// (dynamic parallelism), then its tail launches. `grid` identifies the finished grid (the
// GridSpec the workers ran); returns `err`, or the first child grid's error.
int run_child_grids(const GridSpec* grid, int err);
// The grid the calling worker runs right now (scheduler.cpp), or null outside a kernel.
const GridSpec* current_grid();

}  // namespace vf

// Device-side streams of dynamic parallelism (cuda_device_runtime_api.h declares them for nvcc only).
#ifndef cudaStreamTailLaunch
#define cudaStreamTailLaunch ((cudaStream_t)0x3)
#endif
#ifndef cudaStreamFireAndForget
#define cudaStreamFireAndForget ((cudaStream_t)0x4)
#endif

#if defined(VF_HAVE_CUDA_HEADERS)
// Sets a conditional node's value from device code (graphs.cpp).
extern "C" void cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned int value);
// CUDA 11's cudaGraphExecUpdate (cuda_runtime.h declares it for nvcc only).
inline cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph, cudaGraphNode_t* error_node,
                                       cudaGraphExecUpdateResult* result) {
    cudaGraphExecUpdateResultInfo info{};
    cudaError_t status = cudaGraphExecUpdate(exec, graph, &info);
    if (error_node) *error_node = info.errorNode;
    if (result) *result = info.result;
    return status;
}
#endif
