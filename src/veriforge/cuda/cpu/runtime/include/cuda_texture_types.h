// veriforge CPU runtime shim: the device-side declarations of this CUDA header are provided by the
// force-included runtime header (vf_cuda.h); including it adds nothing.
#pragma once
