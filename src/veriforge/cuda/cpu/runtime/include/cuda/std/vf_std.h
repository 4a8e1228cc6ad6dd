// veriforge CPU runtime: cuda::std (libcu++'s C++ standard library for host and device) is the
// host's std here: every name of ::std is visible as cuda::std::name. cuda::std::barrier (in
// <cuda/std/barrier>) is the one exception: it is cuda::barrier, which waits in the fiber scheduler.
#pragma once
namespace cuda {
namespace std {
using namespace ::std;
}  // namespace std
}  // namespace cuda
