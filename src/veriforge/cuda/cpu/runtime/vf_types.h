// CUDA's vector types, dim3 and the runtime API's types. Taken from CUDA's own headers when the
// build found them (VF_HAVE_CUDA_HEADERS, set by the Python build), so user code sees the real
// definitions; otherwise from a minimal fallback (no __half / __nv_bfloat16 then).
#pragma once

#if defined(VF_HAVE_CUDA_HEADERS)
// The qualifiers must be defined (by vf_cuda.h or here) before CUDA's host_defines.h, which
// only defines them `#if !defined(...)`; otherwise it turns them into unknown GCC attributes.
#ifndef __host__
#define __host__
#endif
#ifndef __device__
#define __device__
#endif
#ifndef __global__
#define __global__
#endif
#ifndef __shared__
#define __shared__ thread_local
#endif
#ifndef __constant__
#define __constant__
#endif
#ifndef __managed__
#define __managed__
#endif
// The C API first, then the C++ overloads nvcc would declare (they must precede cuda_runtime.h,
// whose occupancy templates call them), then the rest of cuda_runtime.h.
//
// CUDA 13 removed cudaDeviceProp fields that a generation of samples and deviceQuery-style code
// reads (clockRate, memoryClockRate, deviceOverlap, ...). So CUDA's struct is renamed while its
// headers are read, and `cudaDeviceProp` is a struct derived from it that adds them back (zero
// cost for code that does not use them; the API takes it through the base pointer).
#define cudaDeviceProp vf_cuda_device_prop_base
#include <cuda_runtime_api.h>
#include "vf_api_templates.h"
// cuda_runtime.h's cudaLaunchKernelEx templates pass the kernel on as a void* (the registry knows
// no template instantiations): vf_cooperative.h defines typed ones instead.
#define cudaLaunchKernelEx vf_cuda_launch_kernel_ex_hidden_
#include <cuda_runtime.h>
#undef cudaLaunchKernelEx
#undef cudaDeviceProp
struct cudaDeviceProp : vf_cuda_device_prop_base {
#if CUDART_VERSION >= 13000
    int clockRate;                 // kHz
    int memoryClockRate;           // kHz
    int deviceOverlap;
    int kernelExecTimeoutEnabled;
    int computeMode;
    int maxTexture1DLinear;
    int singleToDoublePrecisionPerfRatio;
    int cooperativeMultiDeviceLaunch;
#endif
};
#define VF_DEVICE_PROP_PARAM vf_cuda_device_prop_base
// Our units pass the extended struct: this overload (an exact match, so preferred) fills all of it.
// CUDA's own entry point fills only CUDA's part, so a plain host .cpp of a project, compiled against
// CUDA's header with the smaller struct, is never written past its end.
extern "C" cudaError_t vf_get_device_properties(cudaDeviceProp* prop, int device);
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
    return vf_get_device_properties(prop, device);
}
#else
#include "vf_fallback_types.h"
#include "vf_api_templates.h"
#define VF_DEVICE_PROP_PARAM cudaDeviceProp
extern "C" cudaError_t vf_get_device_properties(cudaDeviceProp* prop, int device);
#endif
