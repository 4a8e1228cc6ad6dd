// veriforge CPU runtime shim: this CUDA feature (tensor cores / asynchronous copies / hardware
// barriers) cannot be executed by the CPU runtime. The Python front end reports it as an
// UnsupportedFeatureError naming the feature and line before compiling; this is the backstop.
#pragma once
#error "veriforge CPU runtime: <cuda_pipeline.h> (tensor cores, cp.async pipelines or hardware barriers) is not supported on the CPU"
