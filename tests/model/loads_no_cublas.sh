#!/bin/sh
# loads_no_cublas.sh COMMAND...: runs COMMAND (train_gpt on a device other than cuda) under the
# dynamic loader's file trace and passes when it succeeds without loading cuBLAS
# (examples/gpt/cublas_library.hpp opens it for --device cuda only). OpenBLAS must show in the
# trace, so that a trace that says nothing cannot pass.
out=$(LD_DEBUG=files "$@" 2>&1)
rc=$?
if [ $rc -ne 0 ]; then printf '%s\n' "$out" | grep -v 'file=\|calling init\|calling fini\|^ *[0-9]*:\s*$' | tail -20; echo "loads_no_cublas: exit code $rc"; exit 1; fi
if ! printf '%s\n' "$out" | grep -q 'file=libopenblas'; then echo "loads_no_cublas: no loader trace (LD_DEBUG=files)"; exit 1; fi
if printf '%s\n' "$out" | grep 'file=libcublas'; then echo "loads_no_cublas: cuBLAS was loaded"; exit 1; fi
echo "loads_no_cublas: ran without loading cuBLAS"
