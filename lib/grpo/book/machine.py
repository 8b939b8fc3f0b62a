"""The machine a run happened on, and the kernel paths its libraries chose: ``make test`` prints
this first (``python -m grpo.book.machine``), so a reader can compare their CPU with the one that
stored the book's outputs (README, "Reproducible on any x86-64 CPU").

Which kernels run decides a float's last bits: MKL (torch's matrix products) and ATen (torch's
own ops) pick a code path by CPU vendor and instruction set, NumPy dispatches its loops on the
SIMD extensions it finds, and OpenBLAS (NumPy's matrix products) on its detected core type. The
book computes its small models in float64, so those choices move results by about 1e-15, never
a printed digit; ``tests/test_portability.py`` re-runs a sample of the book under other kernel
paths to show it.
"""
from __future__ import annotations

import ctypes
import glob
import os
import platform

FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
         "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_int8", "amx_tile")
PINS = ("OMP_NUM_THREADS", "ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA",
        "NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def _cpuinfo() -> tuple[str, str, set]:
    vendor = model = ""
    flags: set = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "vendor_id" and not vendor:
                    vendor = value
                elif key == "model name" and not model:
                    model = value
                elif key == "flags" and not flags:
                    flags = set(value.split())
    except OSError:                                   # not Linux: what platform knows
        model = platform.processor()
    return vendor, model, flags


def _openblas_core() -> str:
    """The core type NumPy's OpenBLAS picked (or was told by OPENBLAS_CORETYPE)."""
    import numpy
    libs = os.path.join(os.path.dirname(numpy.__file__), "..", "numpy.libs", "*openblas*")
    for path in glob.glob(libs):
        lib = ctypes.CDLL(path)
        for name in ("scipy_openblas_get_corename64_", "openblas_get_corename"):
            if hasattr(lib, name):
                fn = getattr(lib, name)
                fn.restype = ctypes.c_char_p
                return fn().decode()
    return "unknown"


def fingerprint() -> dict:
    """CPU, the instruction-set flags that steer kernel choice, and each library's dispatch."""
    import numpy as np
    import torch
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    vendor, model, flags = _cpuinfo()
    return {
        "cpu": model or platform.machine(), "vendor": vendor, "cores": os.cpu_count(),
        "flags": [f for f in FLAGS if f in flags],
        "numpy": np.__version__,
        "numpy_simd": [f for f in __cpu_dispatch__ if __cpu_features__.get(f)],
        "openblas_core": _openblas_core(),
        "torch": torch.__version__, "torch_capability": torch.backends.cpu.get_cpu_capability(),
        "mkl": torch.backends.mkl.is_available(),
        "pins": {k: os.environ[k] for k in PINS if k in os.environ},
    }


def main() -> None:
    f = fingerprint()
    print("Machine fingerprint (README, 'Reproducible on any x86-64 CPU'):")
    print(f"  cpu              {f['cpu']} ({f['vendor']}, {f['cores']} cores)")
    print(f"  flags            {' '.join(f['flags']) or 'none of ' + ' '.join(FLAGS)}")
    simd = " ".join(f["numpy_simd"]) or "baseline only"
    print(f"  numpy {f['numpy']:<10} SIMD dispatch: {simd}; "
          f"OpenBLAS core: {f['openblas_core']}")
    print(f"  torch {f['torch']:<10} ATen capability: {f['torch_capability']}; MKL: {f['mkl']}")
    print(f"  pins             {' '.join(f'{k}={v}' for k, v in f['pins'].items()) or 'none'}")


if __name__ == "__main__":
    main()
