// veriforge CPU runtime: force-included (`g++ -include vf_cuda.h`) before every user .cu file.
//
// It turns CUDA C++ into ordinary C++20: the execution-space qualifiers disappear, `__shared__`
// becomes per-worker-thread storage, the built-in index variables are thread_local values the
// fiber scheduler keeps current, and the device intrinsics (warp shuffles, atomics, fast math,
// integer bit tricks) are implemented on the host. The standard library is included *first*
// because some of CUDA's macro names (__noinline__) collide with GCC attribute spellings used
// inside libstdc++.
#pragma once
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
#include <math.h>
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
#include "vf_atomics.h"
#include "vf_warp.h"
#include "vf_regions.h"
#include "vf_launch.h"
#include "vf_lockstep.h"
#include "vf_probe.h"

// Pre-included (and so precompiled with this header) because kernels use them often; the user's
// own #include of them is then free. Skipped under ASan, where no precompiled header is used.
#if defined(VF_HAVE_CUDA_HEADERS) && !defined(__SANITIZE_ADDRESS__)
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#endif
#include <cooperative_groups.h>
