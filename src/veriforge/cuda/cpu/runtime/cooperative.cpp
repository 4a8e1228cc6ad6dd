// veriforge CPU runtime: cooperative launches - cudaLaunchCooperativeKernel and cudaLaunchKernelEx
// with cudaLaunchAttributeCooperative. The kernel is launched like cudaLaunchKernel (the registry of
// kernels launchable by address); the scheduler then runs every block at once, one OS thread each,
// so this_grid().sync() can wait for all of them (scheduler.cpp, "cooperative launches").
#include <cstdio>
#include <string>

#include "vf_core.h"

#if !defined(VF_HAVE_CUDA_HEADERS)
extern "C" cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shared,
                                        cudaStream_t stream);
#endif

namespace {
// Marks the launch this host thread makes next as cooperative, and clears the mark however the
// launch ends (a launch refused before it reaches the scheduler must not leave it set).
struct CooperativeScope {
    explicit CooperativeScope(bool on) { vf::set_next_launch_cooperative(on); }
    ~CooperativeScope() { vf::set_next_launch_cooperative(false); }
    CooperativeScope(const CooperativeScope&) = delete;
    CooperativeScope& operator=(const CooperativeScope&) = delete;
};
}  // namespace

// The most blocks a cooperative grid may have: as many as can be resident at once, i.e. the
// occupancy per SM (threads and dynamic shared memory, cudaOccupancyMaxActiveBlocksPerMultiprocessor)
// times the SMs the device reports - what cudaLaunchCooperativeKernel checks on a GPU.
int vf::cooperative_grid_limit(dim3 block, size_t dynamic_shared) {
    int per_sm = 0, sms = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, static_cast<const void*>(nullptr),
                                                  (int)(block.x * block.y * block.z),
                                                  dynamic_shared);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    return per_sm * sms;
}

#if defined(VF_HAVE_CUDA_HEADERS)
namespace vf {
int launch_attributes(const cudaLaunchConfig_t* config, bool* cooperative) {
    *cooperative = false;
    if (!config) return vf::record_launch_error(cudaErrorInvalidValue, "cudaLaunchKernelEx: config is NULL");
    for (unsigned i = 0; i < config->numAttrs; ++i) {
        const cudaLaunchAttribute& a = config->attrs[i];
        if (a.id == cudaLaunchAttributeCooperative) {
            *cooperative = a.val.cooperative != 0;
        } else if (a.id == cudaLaunchAttributeClusterDimension) {
            const auto& c = a.val.clusterDim;
            if ((unsigned long long)c.x * c.y * c.z > 1) {
                char msg[200];
                snprintf(msg, sizeof msg, "cudaLaunchKernelEx: thread block clusters (cluster dimension %u x %u x %u) "
                         "are not supported by the CPU runtime", c.x, c.y, c.z);
                return vf::record_launch_error(cudaErrorNotSupported, msg);
            }
        }
    }
    return 0;
}
}  // namespace vf
#endif

extern "C" {

cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shared,
                                        cudaStream_t stream) {
    CooperativeScope scope(true);
    return cudaLaunchKernel(func, grid, block, args, shared, stream);
}

#if defined(VF_HAVE_CUDA_HEADERS)
// The C form of cudaLaunchKernelEx (cuda_runtime.h's variadic template calls it). Attributes:
// cooperative (honoured), cluster dimensions (only 1x1x1: clusters are not supported), the others
// (priority, access policy window, programmatic serialisation, memory sync domain...) are hints
// without effect on a CPU.
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
    bool cooperative = false;
    if (int err = vf::launch_attributes(config, &cooperative)) return (cudaError_t)err;
    CooperativeScope scope(cooperative);
    return cudaLaunchKernel(func, config->gridDim, config->blockDim, args, config->dynamicSmemBytes, config->stream);
}
#endif

}  // extern "C"
