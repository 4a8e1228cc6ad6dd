// veriforge CPU runtime: force-included (`g++ -include vf_cuda.h`) before every user .cu file.
//
// It turns CUDA C++ into ordinary C++20: the execution-space qualifiers disappear, `__shared__`
// becomes per-worker-thread storage, the built-in index variables are thread_local values the
// fiber scheduler keeps current, and the device intrinsics (warp shuffles, atomics, fast math,
// integer bit tricks) are implemented on the host. The standard library is included *first*
// because some of CUDA's macro names (__noinline__) collide with GCC attribute spellings used
// inside libstdc++.
#pragma once
#include "vf_macro_guard_begin.h"
#define VERIFORGE_CPU_RUNTIME 1

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cassert>
#include <cfloat>
#include <chrono>
#include <climits>
#include <cmath>
#include <complex>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>
// libstdc++'s <math.h> exports std::lerp to the global namespace in C++20; CUDA code (compiled as
// C++17 by nvcc) defines its own `lerp(float, float, float)` (helper_math.h), which would then
// conflict. The global using-declaration is made to name a harmless placeholder instead;
// std::lerp itself is untouched.
namespace std {
template <class T> void vf_global_lerp_hidden_(T) = delete;
}
#define lerp vf_global_lerp_hidden_
#include <math.h>
#undef lerp
#include <stdlib.h>

#define __host__
#define __device__
#define __global__
#define __shared__ thread_local
#define __constant__
#define __managed__

#include "vf_core.h"

// CUDA's host_defines.h (pulled in with the types) maps these onto attributes GCC does not know.
#undef __forceinline__
#define __forceinline__ inline
#undef __noinline__
#define __noinline__ __attribute__((noinline))
#undef __launch_bounds__
#define __launch_bounds__(...)
#undef __maxnreg__
#define __maxnreg__(...)
#undef __grid_constant__
#define __grid_constant__
#undef __restrict__
#define __restrict__ __restrict
#undef __align__
#define __align__(n) __attribute__((aligned(n)))
#undef __builtin_align__
#define __builtin_align__(n) __attribute__((aligned(n)))
#undef __nv_pure__
#define __nv_pure__
#ifndef __CUDACC_RTC__
#define __CUDA_RUNTIME_CPU__ 1
#endif

static constexpr int warpSize = 32;

#include "vf_intrinsics.h"
#include "vf_rounding.h"  // intrinsics with an explicit IEEE rounding mode
#include "vf_atomics.h"
#include "vf_warp.h"
#include "vf_regions.h"
#include "vf_launch.h"
#include "vf_cooperative.h"
#include "vf_lockstep.h"
#include "vf_probe.h"
#include "vf_ptx.h"  // helpers of the inline PTX the front end translates (ptx.py)
#include "vf_texture.h"

// Pre-included (and so precompiled with this header) because kernels use them often; the user's
// own #include of them is then free. Skipped under ASan, where no precompiled header is used.
#if defined(VF_HAVE_CUDA_HEADERS) && !defined(__SANITIZE_ADDRESS__)
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#endif
#include <cooperative_groups.h>

// nvcc defines __CUDACC__ (and __NVCC__, __CUDACC_VER_*__) in both of its passes over a .cu file,
// and __CUDA_ARCH__ only in the device pass. A CUDA unit here is compiled once: it sees the
// former (defined last, so CUDA's own headers above were read as a host compiler reads them; the
// shims in include/ hide them again around every later #include_next), and device code sees
// __CUDA_ARCH__ through the front end, which rewrites it to VF_CUDA_ARCH_DEVICE_ where the device
// pass would see it (veriforge/cuda/cpu/arch.py). 900: the compute capability 9.0 that
// cudaGetDeviceProperties reports. Plain host .cpp units never include this header.
#ifndef __CUDACC__
#define __CUDACC__ 1
#endif
#ifndef __NVCC__
#define __NVCC__ 1
#endif
#ifndef __CUDACC_VER_MAJOR__
#define __CUDACC_VER_MAJOR__ (CUDART_VERSION / 1000)
#define __CUDACC_VER_MINOR__ (CUDART_VERSION % 1000 / 10)
#define __CUDACC_VER_BUILD__ 0
#endif
#define VF_CUDA_ARCH_DEVICE_ 900
#include "vf_macro_guard_end.h"
