// veriforge CPU runtime: included (with vf_host_pass_end.h) around every #include_next of one of
// CUDA's own headers. CUDA units see __CUDACC__ / __NVCC__ / __CUDACC_VER_*__ (as with nvcc, see
// vf_cuda.h), but CUDA's headers must be read as a host compiler reads them - with those macros
// they would declare device code (inline PTX) g++ cannot compile. No include guard: nests.
#pragma push_macro("__CUDACC__")
#pragma push_macro("__NVCC__")
#pragma push_macro("__CUDACC_VER_MAJOR__")
#pragma push_macro("__CUDACC_VER_MINOR__")
#pragma push_macro("__CUDACC_VER_BUILD__")
#pragma push_macro("__CUDA_ARCH__")
#undef __CUDACC__
#undef __NVCC__
#undef __CUDACC_VER_MAJOR__
#undef __CUDACC_VER_MINOR__
#undef __CUDACC_VER_BUILD__
#undef __CUDA_ARCH__
