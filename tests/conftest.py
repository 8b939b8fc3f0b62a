"""Pin what the Makefile pins, so a bare `pytest` behaves like `make test`."""
import os

for key, value in {
    "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
    "ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2,STRICT", "ONEDNN_MAX_CPU_ISA": "AVX2",
    "MPLBACKEND": "Agg", "TQDM_DISABLE": "1",
}.items():
    os.environ.setdefault(key, value)
