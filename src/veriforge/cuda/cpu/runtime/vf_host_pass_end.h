// veriforge CPU runtime: restores what vf_host_pass_begin.h hid. No include guard: nests.
#pragma pop_macro("__CUDA_ARCH__")
#pragma pop_macro("__CUDACC_VER_BUILD__")
#pragma pop_macro("__CUDACC_VER_MINOR__")
#pragma pop_macro("__CUDACC_VER_MAJOR__")
#pragma pop_macro("__NVCC__")
#pragma pop_macro("__CUDACC__")
