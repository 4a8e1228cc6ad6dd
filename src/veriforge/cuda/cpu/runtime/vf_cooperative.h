// veriforge CPU runtime: cudaLaunchCooperativeKernel with the kernel itself (not cast to void*): its
// parameter types are known, so any kernel - a template instantiation too - launches without the
// registry. More specialised than cuda_runtime.h's `template <class T>
// cudaLaunchCooperativeKernel(const T*, ...)`, so overload resolution picks it. (The C form, and
// cudaLaunchKernelExC behind cuda_runtime.h's cudaLaunchKernelEx, are in cooperative.cpp.)
#pragma once

#if !defined(VF_HAVE_CUDA_HEADERS)
extern "C" cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 grid, dim3 block, void** args,
                                                   size_t shared, cudaStream_t stream);
#endif

template <class... P>
inline cudaError_t cudaLaunchCooperativeKernel(void (*func)(P...), dim3 grid, dim3 block, void** args,
                                               size_t shared = 0, cudaStream_t stream = 0) {
    struct Scope {
        Scope() { ::vf::set_next_launch_cooperative(true); }
        ~Scope() { ::vf::set_next_launch_cooperative(false); }
    } scope;
    return cudaLaunchKernel(func, grid, block, args, shared, stream);
}

#if defined(VF_HAVE_CUDA_HEADERS)
namespace vf {
// The launch attributes of cudaLaunchKernelEx (cooperative.cpp): 0, or the error already recorded
// for an unsupported one (clusters); *cooperative says whether to launch cooperatively.
int launch_attributes(const cudaLaunchConfig_t* config, bool* cooperative);
}  // namespace vf

// cudaLaunchKernelEx with the kernel itself: the arguments convert to its parameter types (as in
// cuda_runtime.h's template) and the kernel launches by type, template instantiations included.
template <class... P, class... A>
inline cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t* config, void (*kernel)(P...), A&&... args) {
    bool cooperative = false;
    if (int err = ::vf::launch_attributes(config, &cooperative)) return (cudaError_t)err;
    struct Scope {
        explicit Scope(bool on) { ::vf::set_next_launch_cooperative(on); }
        ~Scope() { ::vf::set_next_launch_cooperative(false); }
    } scope(cooperative);
    return [&](P... coerced) {
        void* pointers[] = {&coerced..., nullptr};
        return cudaLaunchKernel(kernel, config->gridDim, config->blockDim, pointers, config->dynamicSmemBytes,
                                config->stream);
    }(static_cast<A&&>(args)...);
}
template <class... A>
inline cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t* config, const cudaKernel_t kernel, A&&... args) {
    void* pointers[] = {&args..., nullptr};
    return ::cudaLaunchKernelExC(config, (const void*)kernel, pointers);
}
#endif
