"""The veriforge binding: call ``extern "C"`` CUDA host functions from PyTorch, on a CPU or a GPU.

    from veriforge.cuda.torchbind import load_cuda
    ext = load_cuda("relu_ext", CUDA_SRC)     # backend=None: "gpu" if torch.cuda.is_available() else "cpu"
    ext.relu(x, y, x.numel())                 # tensors -> device pointers; numbers -> the C scalar type

PyTorch→CUDA candidates (``ModelNew``) use this instead of ``torch.utils.cpp_extension`` so the
same file is verified on the CPU runtime and timed on a GPU. Contract and limits: docs/torchbind.md.
Importing this package is cheap; torch is imported when an extension is loaded.
"""

from .args import BindingTypeError, BindingValueError
from .extension import BoundFunction, Extension, clear_cache, load_cuda, resolve_backend
from .signature import BindingSignatureError, CFunction, CParam, parse_extern_c

__all__ = [
    "BindingSignatureError",
    "BindingTypeError",
    "BindingValueError",
    "BoundFunction",
    "CFunction",
    "CParam",
    "Extension",
    "clear_cache",
    "load_cuda",
    "parse_extern_c",
    "resolve_backend",
]
