"""OpenBLAS's kernels matched to the CPU, for the PyTorch references and benchmarks: the Python
side of examples/gpt/openblas_core.hpp (which says why). Debian's PyTorch does its matmuls in
OpenBLAS, which picks its kernels when it loads; on a CPU model newer than the library it falls
back to SSE kernels about 3x slower than the CPU's AVX-512 ones. match_cpu() then starts this
script again with OPENBLAS_CORETYPE naming the matching kernels. A value already set is kept.
Call it before any work (before importing torch is cheapest); describe() says what runs.
"""
import ctypes
import os
import sys

SSE_ONLY = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom"}


def better_kernels(chosen, avx512, avx2_fma):
    """The kernels to restart with, or None to keep OpenBLAS's choice."""
    if chosen not in SSE_ONLY:
        return None
    if avx512:
        return "SkylakeX"
    if avx2_fma:
        return "Haswell"
    return None


def _cpu_sets():
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
    except OSError:
        return False, False
    s = set(flags)
    return {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= s, {"avx2", "fma"} <= s


def chosen():
    """OpenBLAS's kernels in this process, or None where there is no libopenblas."""
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
    except OSError:
        return None
    lib.openblas_get_corename.restype = ctypes.c_char_p
    return lib.openblas_get_corename().decode()


def match_cpu():
    if "OPENBLAS_CORETYPE" in os.environ:
        return
    core = chosen()
    if core is None:
        return
    want = better_kernels(core, *_cpu_sets())
    if want is None:
        return
    os.environ["OPENBLAS_CORETYPE"] = want
    os.environ["GPT_OPENBLAS_REPLACED"] = core
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, sys.orig_argv)


def describe():
    core = chosen()
    if core is None:
        return "no libopenblas"
    named, replaced = os.environ.get("OPENBLAS_CORETYPE"), os.environ.get("GPT_OPENBLAS_REPLACED")
    if named and replaced:
        return f"OpenBLAS {core} kernels (OpenBLAS chose {replaced} for this CPU: restarted with OPENBLAS_CORETYPE={named})"
    if named:
        return f"OpenBLAS {core} kernels (OPENBLAS_CORETYPE={named})"
    want = better_kernels(core, *_cpu_sets())
    return f"OpenBLAS {core} kernels" + (f" (slower than this CPU allows: set OPENBLAS_CORETYPE={want})" if want else "")


if __name__ == "__main__":
    match_cpu()
    print(describe())
