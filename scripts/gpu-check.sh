#!/usr/bin/env bash
# GPU check in two halves, so that a short GPU lease is spent on running, not building.
#
#   scripts/gpu-check.sh --prepare [--no-build] [--kit DIR]
#       here (no GPU needed): build core_test_cuda, core_cuda_throughput, core_gpu_smoke,
#       comm_test_device_transports, comm_test_nccl, hcomm-collective,
#       model_test_cuda_portable_kernels, model_test_cuda_model and train_gpt (sm_90: H100,
#       H200; CUDA_ARCHS="80;90" adds A100), pack them with the runtime pieces a bare GPU
#       machine lacks into DIR (default build-gpu/kit, git-ignored), files over 1 MiB
#       xz-compressed; fails if the kit and the checkout's files (what the device tool sends)
#       are over 64 MiB. --no-build packs what $BUILD_DIR (default build-gpu) already holds.
#   scripts/gpu-check.sh [--kit DIR]
#       on the GPU machine: run the kit, at most BUDGET_S seconds (default 290; give the
#       device tool's call a limit of at least 330 s, so that the summary is still written and
#       comes back); $OUT (default
#       DIR/../kit-out) receives summary.md, gpu-check.log and gpu-check-logs.tar.gz, nothing else.
#       STAGES=a,b,...: only those stages after the smoke stage (a second call for the stages
#       the first left "not run (no time left)"). A TERM or INT still writes the summary.
#   scripts/gpu-check.sh --dry-run [--kit DIR]     (may follow --prepare in one call)
#       here, without a GPU: every step but the GPU ones. The carried mpirun starts 2 ranks of
#       core_gpu_smoke --no-gpu in an environment that cannot see the system's MPI, and the
#       shared objects the ranks and the launcher map are checked to come from the kit.
#       ctest runs this as gpu_kit_dry_run (labels cuda, gpu-kit; about 30 s, skips with 77
#       where Debian's Open MPI is not installed). By hand:
#         bash scripts/gpu-check.sh --prepare && bash scripts/gpu-check.sh --dry-run
#
# The kit: bin/ (the programs, stripped), lib/ (the CUDA runtime they were linked
# against, used only where the machine lacks it; lib/host: the other libraries they need,
# OpenBLAS and libgfortran for train_gpt say), data/corpus.txt (the first 2 MB of data/kjv.txt, for train_gpt),
# mpi/ (Debian 12's Open MPI 4.1 runtime:
# mpirun (orterun), orted, ompi_info, libmpi and every library it, the launcher and the
# plugins need beyond glibc/libstdc++/libgcc, the MCA plugins (mpi/lib/openmpi), PMIx's
# plugins (mpi/lib/pmix), the help files (mpi/share), mpi/etc/openmpi-mca-params.conf and
# mpi/env.sh, which relocates it: OPAL_PREFIX and the OPAL_*DIR, PMIX_*DIR variables,
# HWLOC_PLUGINS_PATH, PATH, LD_LIBRARY_PATH), requirements.txt (the newest GLIBC_, GLIBCXX_,
# CXXABI_ and GCC_ symbol versions the kit's files need), MANIFEST, commit. Files over 1 MiB
# are xz-compressed (name.xz); the run unpacks them into a copy of the kit in its own folder.
#
# The run goes in stages, each under what is left of the budget, in priority order: smoke,
# then the trainer's (2b-2e: the open work), then 2 correctness, 3 and 4:
#   1 smoke (at most SMOKE_S=90 s in all)
#     smoke-env    driver (nvidia-smi), toolkit (nvcc), glibc and libstdc++ new enough for
#                  the kit (requirements.txt), NCCL, cuBLAS and cuBLASLt found
#     smoke-gpu    core_gpu_smoke: versions, device, a context and a kernel, a cuBLAS sgemm,
#                  cuBLASLt's bias and bias + GELU epilogues, a 1-rank NCCL all-reduce
#     smoke-mpi    the kit's mpirun starts 2 ranks of core_gpu_smoke sharing the GPU (each
#                  repeats the GPU checks; MPI_Allreduce of the ranks), in an environment
#                  of the kit alone (env -i); the ranks' and the launcher's MPI libraries
#                  must come from the kit
#     smoke-collectives, smoke-roundtrip: the team collectives on the GPU; a 1 MiB round
#                  trip of every codec (if these or the GPU context fail, the rest is skipped)
#   2 correctness  core_test_cuda: executor members, team kernels, streams and events, every
#                  registered codec giving the host's frame bytes
#   2b trainer-kernels  model_test_cuda_portable_kernels: train_gpt's portable kernels
#                  (examples/gpt/portable/: LayerNorm, GELU, AdamW) on the GPU against the host
#   2c trainer-model  model_test_cuda_model: the whole model (GPT-2, NeoX, BERT, bf16) in
#                  device memory with cuBLAS GEMMs, with cuBLASLt's epilogues (bias, GELU)
#                  and without: loss, logits, gradients against the host, and the PyTorch
#                  debug states (kit/data/debug_*.bin) replayed on the GPU
#   2c' trainer-pytorch-gpu  the GPT-2 and NeoX debug states computed by PyTorch on this GPU
#                  (reference_gpt.py --device cuda, fp32, TF32 off), replayed by the same test
#   2d trainer-cuda  train_gpt --device cuda (the kit's mpirun; a dry run instead starts it
#                  there, trainer-kit, and sees it refuse without a GPU): 10 steps of the tiny model
#                  against host-check (fp32 1e-5, bf16 1e-3), with --gemm-epilogues off
#                  too; --kernel-times' table (CUDA events) adds up and changes no loss
#                  (check_kernel_times.py); 2x1x1, 1x2x1, 1x1x2 and 2x1x2 sharing the GPU
#                  reproduce the 1-rank losses to 1e-5; resume is bitwise; 2 ranks without
#                  --share-gpu stop with one line
#   2e trainer-throughput  gpt2-124m (B THROUGHPUT_BATCH, default 32: about 20 GB of fp32
#                  activations by model.hpp's buffer sizes, T 1024) on one GPU, 10 steps each, median of steps
#                  3-10: train_gpt --device cuda fp32, bf16 and bf16 with --gemm-epilogues
#                  off, and in the same run PyTorch
#                  (the machine's, kit/py/reference_gpt.py: the same model) fp32 with TF32
#                  off and bf16 autocast, its fused attention (SDPA), eager, then
#                  torch.compile'd (at most 80 s) if 150 s of the budget and 90 s of the
#                  stage are left; a table in summary.md (ms/step, tokens/s, TFLOP/s by
#                  train_gpt's FLOP count of the step, MFU against the device's peak for the
#                  precision: mfu.hpp; PyTorch's rows by the same count and peak); then where the time goes: train_gpt bf16 --kernel-times (5
#                  steps, CUDA events per kernel) and PyTorch bf16 --profile 3 (torch.profiler),
#                  both tables in summary.md
#   2f trainer-cuda-3d  8 ranks sharing the GPU (the tiny model, 10 steps): 2x2x2 reproduces
#                  1 rank's cuda losses to 1e-5; zhybrid:16,8 on 2x2x2 tracks host-check's to
#                  1e-4, zhybrid:16,6+ef too (residual in device memory) and resumes bitwise;
#                  --zero 1 on 2x2x2 reproduces 1 rank, in bf16 (16-bit wire) host-check's;
#                  --overlap on (DP on its own stream) equals off bitwise
#   3 device-collectives  2 ranks sharing the GPU: comm_test_device_transports (every
#                  collective on exec::cuda over mpi_staged, and mpi_device where MPI is
#                  CUDA-aware, bitwise against the host context)
#   3b nccl        comm_test_nccl on 1 rank (transport::nccl: the lanes, a round to itself,
#                  NCCL's collectives), then on 2 ranks sharing the GPU (refused, clearly)
#   3c device-timing  2 ranks sharing the GPU: hcomm-collective --device cuda (device-resident
#                  allreduce: none, mpc, zfp:8 and MPI, COLLECTIVE_MIB=64 per rank), JSON lines
#   4 throughput   core_cuda_throughput at THROUGHPUT_MIB (256) for THROUGHPUT_DTYPES (f32 bf16 f64),
#                  each with a device-to-device copy of the same size first (the roofline)
# then one table (summary.md: stage, result, seconds, and the throughput figures), printed
# last, and one tarball of every log.
#
# Exit status: 0 all stages passed; 1 a stage failed; 77 no usable GPU (nothing was run) or,
# with --no-build/--dry-run, no Debian Open MPI to pack.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
SRC=$PWD
KIT=$SRC/build-gpu/kit
PREPARE=0 BUILD=1 DRY=0
while [ $# -gt 0 ]; do
  case $1 in
    --prepare) PREPARE=1 ;;
    --no-build) BUILD=0 ;;
    --dry-run) DRY=1 ;;
    --kit) KIT=$(realpath -m "$2"); shift ;;
    -h|--help) sed -n '2,/^set -uo pipefail/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "gpu-check.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
RUN=$([ $PREPARE = 0 ] || [ $DRY = 1 ] && echo 1 || echo 0)

# Libraries every target machine has (glibc, the compiler's runtime): never carried; their
# symbol versions go into requirements.txt instead.
BASE_LIBS='^(linux-vdso|linux-gate|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libutil\.so|libresolv|libgcc_s|libstdc\+\+|libatomic\.so)'
# The Open MPI runtime's own libraries and what they need beyond BASE_LIBS: carried. An MCA
# plugin needing anything else (UCX, libfabric, verbs, PSM, libnl, liboshmem, ...) is left
# out (mpi/DROPPED says why): 2 ranks on one machine need self, vader (shared memory), tcp.
MPI_LIBS='^(libmpi\.so|libopen-(pal|rte)\.so|libpmix\.so|libhwloc\.so|libevent_(core|pthreads)-|libmunge\.so|libudev\.so|libz\.so|libmca_common_(sm|ompio|monitoring)\.so)'

# --- prepare: build here, pack the kit ------------------------------------------------------------
# pack_mpi DIR: Debian's Open MPI runtime into DIR, relocatable. 77: none to pack.
pack_mpi() {
  local M=$1 ma root="" tmp
  ma=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
  local L=/usr/lib/$ma
  if ! dpkg -s libopenmpi3 openmpi-bin libpmix2 >/dev/null 2>&1 || [ -n "${MPI_FROM_DEBS:-}" ]; then
    # Not installed: the packages' files, unpacked into a temporary root.
    tmp=$(mktemp -d)
    root=$tmp/root
    echo "gpu-check: Open MPI not installed: apt-get download into $tmp"
    (cd "$tmp" && apt-get download libopenmpi3 openmpi-bin openmpi-common libpmix2 libhwloc15 \
       libevent-core-2.1-7 libevent-pthreads-2.1-7 libmunge2 >"$tmp/download.log" 2>&1) ||
      { tail -5 "$tmp/download.log"; echo "gpu-check: no Debian Open MPI to pack (neither installed nor downloadable)" >&2; return 77; }
    for d in "$tmp"/*.deb; do dpkg -x "$d" "$root"; done
  fi
  local R=$root$L
  [ -e "$R/libmpi.so.40" ] && [ -e "$root/usr/bin/orterun" ] ||
    { echo "gpu-check: no Open MPI 4.1 (libmpi.so.40, orterun) under ${root:-/}usr" >&2; return 77; }
  local resolve=$R:$R/openmpi/lib:$R/pmix2/lib:$root/lib/$ma
  rm -rf "$M"
  mkdir -p "$M/bin" "$M/lib/openmpi" "$M/lib/pmix" "$M/lib/hwloc" "$M/share/openmpi" "$M/share/pmix" "$M/etc"
  cp -L "$root/usr/bin/orterun" "$M/bin/mpirun"
  cp -L "$root/usr/bin/orterun" "$root/usr/bin/orted" "$root/usr/bin/ompi_info" "$M/bin/"
  : >"$M/DROPPED"
  # deps FILE: "name path" of every library FILE needs (transitively), as ldd resolves it.
  deps() {
    LD_LIBRARY_PATH=$resolve ldd "$1" 2>/dev/null |
      awk '/=>/ {n = $1; sub(".*/", "", n); print n, $3} !/=>/ && NF > 1 {n = $1; sub(".*/", "", n); print n, $1}'
  }
  local f n p bad
  for f in "$R"/openmpi/lib/openmpi3/mca_*.so; do
    bad=$(deps "$f" | awk '{print $1 ($2=="not" ? "(not found)" : "")}' | grep -v -E "$BASE_LIBS|$MPI_LIBS" | tr '\n' ' ')
    if [ -n "$bad" ]; then echo "$(basename "$f"): needs $bad" >>"$M/DROPPED"; continue; fi
    cp -L "$f" "$M/lib/openmpi/"
  done
  cp -L "$R"/pmix2/lib/pmix/*.so "$M/lib/pmix/" 2>/dev/null
  # Every library the launcher, libmpi and the kept plugins need, under its soname.
  for f in "$M"/bin/* "$R/libmpi.so.40" "$M"/lib/openmpi/*.so "$M"/lib/pmix/*.so; do
    deps "$f"
  done | sort -u | while read -r n p; do
    [[ $n =~ $BASE_LIBS ]] && continue
    if [ "$p" = not ] || [ ! -e "$p" ]; then echo "gpu-check: $n not found (for the MPI runtime)" >&2; exit 1; fi
    [ -e "$M/lib/$n" ] || cp -L "$p" "$M/lib/$n"
  done || return 1
  cp "$root"/usr/share/openmpi/help-*.txt "$M/share/openmpi/"
  cp "$R"/pmix2/share/pmix/help-*.txt "$M/share/pmix/" 2>/dev/null
  : >"$M/etc/openmpi-default-hostfile"
  : >"$M/etc/pmix-mca-params.conf"
  cat >"$M/etc/openmpi-mca-params.conf" <<'EOF'
# scripts/gpu-check.sh's kit: one machine, 2 ranks, as root, no ssh, maybe no ptrace.
plm = isolated
btl = self,vader,tcp
pml = ob1
osc = ^pt2pt
btl_base_warn_component_unused = 0
btl_vader_single_copy_mechanism = none
rmaps_base_oversubscribe = 1
hwloc_base_binding_policy = none
EOF
  cat >"$M/env.sh" <<'EOF'
# source this (bash): the kit's Open MPI runtime (Debian 12's 4.1.x), relocated to this folder.
# OPAL_PREFIX moves prefix-relative paths; Debian's layout (lib/<multiarch>/openmpi/lib/openmpi3,
# sysconfdir /etc/openmpi) needs the folders one by one, PMIx's (pmix2/) too.
_hk=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export OPAL_PREFIX=$_hk OPAL_EXEC_PREFIX=$_hk OPAL_BINDIR=$_hk/bin OPAL_SBINDIR=$_hk/bin OPAL_LIBEXECDIR=$_hk/bin
export OPAL_LIBDIR=$_hk/lib OPAL_PKGLIBDIR=$_hk/lib/openmpi OPAL_INCLUDEDIR=$_hk/include OPAL_PKGINCLUDEDIR=$_hk/include
export OPAL_DATAROOTDIR=$_hk/share OPAL_DATADIR=$_hk/share OPAL_PKGDATADIR=$_hk/share/openmpi OPAL_SYSCONFDIR=$_hk/etc
export PMIX_PREFIX=$_hk PMIX_EXEC_PREFIX=$_hk PMIX_BINDIR=$_hk/bin PMIX_LIBDIR=$_hk/lib PMIX_PKGLIBDIR=$_hk/lib/pmix
export PMIX_DATADIR=$_hk/share PMIX_PKGDATADIR=$_hk/share/pmix PMIX_SYSCONFDIR=$_hk/etc
export HWLOC_PLUGINS_PATH=$_hk/lib/hwloc
export PATH=$_hk/bin${PATH:+:$PATH} LD_LIBRARY_PATH=$_hk/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset _hk
EOF
  if [ -z "$root" ]; then
    dpkg-query -W -f '${Package} ${Version}\n' libopenmpi3 openmpi-bin libpmix2 libhwloc15 >"$M/VERSIONS" 2>/dev/null
  else
    (cd "$tmp" && ls ./*.deb) >"$M/VERSIONS"
    rm -rf "$tmp"
  fi
  return 0
}

# requirements FILE...: the newest GLIBC_/GLIBCXX_/CXXABI_/GCC_ version each family needs.
requirements() {
  local fam
  for fam in GLIBC GLIBCXX CXXABI GCC; do
    objdump -T "$@" 2>/dev/null | grep -o "[( ]${fam}_[0-9][0-9.]*" | sed "s/^.${fam}_//" | sort -V | tail -1 |
      sed "s/^/$fam /"
  done
}

if [ $PREPARE = 1 ]; then
  BUILD_DIR=${BUILD_DIR:-$SRC/build-gpu}
  PROGRAMS="core_test_cuda core_cuda_throughput core_gpu_smoke comm_test_device_transports comm_test_nccl hcomm-collective model_test_cuda_portable_kernels model_test_cuda_model train_gpt"
  if [ $BUILD = 1 ]; then
    NVCC=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
    [ -x "$NVCC" ] || { echo "gpu-check: no nvcc (set CUDACXX)" >&2; exit 1; }
    echo "gpu-check: configure $BUILD_DIR (CUDA architectures ${CUDA_ARCHS:-90})"
    mkdir -p "$BUILD_DIR"
    cmake -S "$SRC" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$NVCC" \
          -DHCOMM_ENABLE_CUDA=ON -DHCOMM_ENABLE_MPI=ON "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHS:-90}" \
          -DHCOMM_BUILD_TESTS=ON -DHCOMM_BUILD_BENCH=OFF -DHCOMM_BUILD_EXAMPLES=ON -DHCOMM_BUILD_TOOLS=ON \
          -DHCOMM_TOOLS=hcomm-collective \
          "-DHCOMM_TEST_AREAS=core;comm;model" >"$BUILD_DIR/kit-configure.log" 2>&1 || { tail -30 "$BUILD_DIR/kit-configure.log"; exit 1; }
    echo "gpu-check: build $PROGRAMS"
    # shellcheck disable=SC2086
    cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" --target $PROGRAMS \
          >"$BUILD_DIR/kit-build.log" 2>&1 || { grep -E "error|FAILED" "$BUILD_DIR/kit-build.log" | head -30; exit 1; }
  fi
  rm -rf "$KIT"
  mkdir -p "$KIT/bin" "$KIT/lib"
  for p in $PROGRAMS; do
    f=$BUILD_DIR/tests/core/$p
    [ -x "$f" ] || f=$BUILD_DIR/tests/comm/$p
    [ -x "$f" ] || f=$BUILD_DIR/tests/model/$p
    [ -x "$f" ] || f=$BUILD_DIR/tools/$p/$p
    [ -x "$f" ] || f=$BUILD_DIR/examples/gpt/$p
    if [ -x "$f" ]; then
      cp "$f" "$KIT/bin/" && strip --strip-unneeded "$KIT/bin/$p"
    elif [ $BUILD = 1 ] || [ "$p" = core_gpu_smoke ]; then
      echo "gpu-check: $f was not built" >&2; exit 1
    fi
  done
  # The CUDA runtime the programs were linked against, used there only if the machine's
  # toolkit lacks that version.
  for lib in $(ldd "$KIT/bin/core_gpu_smoke" | awk '/libcudart/ {print $3}'); do cp -L "$lib" "$KIT/lib/"; done
  # Other libraries the programs need beyond glibc/libstdc++/libgcc, the CUDA runtime and MPI
  # (libgomp, say): in lib/host, used there only if the machine lacks one of them. NCCL and
  # cuBLAS are not carried (NCCL alone is over 200 MB): the GPU machine's toolkit or its
  # PyTorch wheels have them (find_lib below).
  mkdir -p "$KIT/lib/host"
  for f in "$KIT"/bin/*; do ldd "$f"; done | awk '/=>/ && $3 ~ /^\// {print $1, $3}' | sort -u | while read -r n p; do
    [[ $n =~ $BASE_LIBS || $n =~ $MPI_LIBS || $n == libcudart* || $n == libnccl* || $n == libcublas* ]] ||
      cp -L "$p" "$KIT/lib/host/$n"
  done
  # train_gpt's corpus: the first 2 MB of the default one (the machine has no data/).
  if [ -x "$KIT/bin/train_gpt" ]; then
    [ -s "$SRC/data/kjv.txt" ] || { echo "gpu-check: no data/kjv.txt for train_gpt (run scripts/setup.sh)" >&2; exit 1; }
    mkdir -p "$KIT/data" && head -c 2000000 "$SRC/data/kjv.txt" >"$KIT/data/corpus.txt" &&
      cp "$SRC"/tests/model/data/debug_*.bin "$KIT/data/"
    mkdir -p "$KIT/py" && cp "$SRC/scripts/reference_gpt.py" "$SRC/scripts/openblas_core.py" "$SRC/tests/model/check_kernel_times.py" "$KIT/py/"  # the PyTorch side of trainer-throughput
  fi
  pack_mpi "$KIT/mpi"
  rc=$?
  if [ $rc -ne 0 ]; then
    [ $rc -eq 77 ] && [ $BUILD = 0 ] && { echo "SKIPPED: no Debian Open MPI to pack"; exit 77; }
    exit 1
  fi
  { git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown; } | tr -d '\n' >"$KIT/commit"
  [ -n "$(git -C "$SRC" status --porcelain --untracked-files=no 2>/dev/null)" ] && printf -- '-dirty' >>"$KIT/commit"
  echo >>"$KIT/commit"
  {
    echo "# newest symbol versions the kit's files need from the GPU machine (scripts/gpu-check.sh)"
    requirements "$KIT"/bin/* "$KIT"/lib/*.so* "$KIT"/lib/host/* | sed 's/^/core /'
    mapfile -t mpi_files < <(find "$KIT/mpi" -type f \( -name '*.so*' -o -path '*/bin/*' \))
    requirements "${mpi_files[@]}" | sed 's/^/mpi /'
  } >"$KIT/requirements.txt"
  # Files over 1 MiB (the programs, OpenBLAS, libmpi, the corpus) travel xz-compressed, which
  # keeps their mode; the run unpacks them into a copy of the kit (unpack_kit below).
  # KIT_XZ_LEVEL (default 6): CI's dry run takes 1, faster and a bigger kit (a stricter check).
  find "$KIT" -type f -size +1M -print0 | xargs -0 -r -P "$(nproc)" -n 1 xz "-${KIT_XZ_LEVEL:-6}" ||
    { echo "gpu-check: xz could not compress the kit's big files" >&2; exit 1; }
  (cd "$KIT" && find . -type f ! -name MANIFEST -printf '%s\t%P\n' | sort -k2) >"$KIT/MANIFEST"
  echo "gpu-check: kit $KIT:"
  du -sh "$KIT/bin" "$KIT/lib" "$KIT/mpi" | sed 's/^/  /'
  echo "  $(wc -l <"$KIT/mpi/DROPPED") MCA plugins left out (mpi/DROPPED), $(ls "$KIT/mpi/lib/openmpi" | wc -l) kept"
  grep -v '^#' "$KIT/requirements.txt" | tr '\n' ';' | sed 's/;$//; s/;/; /g; s/^/  needs: /'; echo
  # What the device tool sends is the kit (carried) and the checkout's tracked and untracked,
  # not ignored, files: together at most 64 MiB.
  bytes=$(du -sb "$KIT" | cut -f1)
  tree=$(git -C "$SRC" ls-files -z --cached --others --exclude-standard 2>/dev/null |
         (cd "$SRC" && xargs -0 -r stat -c %s -- 2>/dev/null) | awk '{s += $1} END {print s + 0}')
  echo "gpu-check: kit $bytes bytes + checkout $tree bytes = $(((bytes + tree) / 1024 / 1024)) MiB (limit 64 MiB)"
  if [ $((bytes + tree)) -gt $((64 * 1024 * 1024)) ]; then
    echo "gpu-check: the kit ($bytes bytes) and the checkout's files ($tree bytes) are over the device" \
         "tool's 64 MiB" >&2
    exit 1
  fi
  echo "gpu-check: kit ready (commit $(cat "$KIT/commit")); run: scripts/gpu-check.sh --kit $KIT"
  [ $RUN = 1 ] || exit 0
fi

# --- run: on the GPU machine (or --dry-run here) --------------------------------------------------
BUDGET_S=${BUDGET_S:-290}
SMOKE_S=${SMOKE_S:-90}
OUT_DIR=${OUT:-$(dirname "$KIT")/kit-out}
START=$(date +%s)
mkdir -p "$OUT_DIR"
rm -f "$OUT_DIR/summary.md" "$OUT_DIR/gpu-check.log" "$OUT_DIR/gpu-check-logs.tar.gz"
# Logs go to WORK and travel in the tarball: the device tool brings back only 8 files.
# (canonical: check_maps compares the kit's path with the paths the ranks map)
WORK=$(realpath "$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")")
LOG=$OUT_DIR/gpu-check.log
: >"$LOG"
TABLE=$WORK/stages.tsv
: >"$TABLE"
say() { echo "[gpu-check $(($(date +%s) - START))s] $*" | tee -a "$LOG"; }
left() { echo $((BUDGET_S - ($(date +%s) - START))); }
status=0
record() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$TABLE"; }  # name result seconds
# stage NAME CAP_SECONDS CMD...: runs CMD under min(CAP, time left), logs to WORK/NAME.log,
# records the result in the table.
stage() {
  local name=$1 cap=$2
  shift 2
  case $name in smoke-*) ;; *)
    if [ -n "${STAGES-}" ] && [[ ",$STAGES," != *",$name,"* ]]; then
      record "$name" "not selected (STAGES)" 0
      return 0
    fi ;;
  esac
  local t
  t=$(left)
  [ "$t" -gt "$cap" ] && t=$cap
  # not started with under 10 s, nor (but for the smoke stages, which share SMOKE_S) cut to
  # under 30 s of a longer cap: it would only time out
  local floor=30
  case $name in smoke-*) floor=10 ;; esac
  if [ "$t" -lt 10 ] || { [ "$t" -lt "$cap" ] && [ "$t" -lt "$floor" ]; }; then
    say "stage $name: no time left (budget ${BUDGET_S}s): not run"
    record "$name" "not run (no time left)" 0
    status=1
    return 1
  fi
  say "stage $name (at most ${t}s): $*"
  local s0 rc
  s0=$(date +%s)
  CUR_STAGE=$name
  export STAGE_END=$((s0 + t))  # what a stage's own sub-steps may plan by (trainer_throughput)
  # in the background, so that a signal to this script is handled at once (trap below)
  timeout -k 5 "$t" "$@" >"$WORK/$name.log" 2>&1 &
  STAGE_PID=$!
  wait "$STAGE_PID"
  rc=$?
  STAGE_PID=""
  CUR_STAGE=""
  local dt=$(($(date +%s) - s0)) result=pass
  # 137: killed after the grace period, or by the kernel (out of memory) before the cap
  if [ $rc -eq 124 ] || { [ $rc -eq 137 ] && [ "$dt" -ge "$t" ]; }; then result="timed out after ${t}s"; status=1
  elif [ $rc -ne 0 ]; then
    result="failed (exit $rc)"; status=1
    local failed
    failed=$(grep -o ': [a-z]*: FAIL' "$WORK/$name.log" | awk '{print $2}' | tr -d : | sort -u | tr '\n' ' ')
    [ -n "$failed" ] && result="$result: ${failed% }"
  fi
  tail -5 "$WORK/$name.log" | tee -a "$LOG"
  record "$name" "$result" "$dt"
  say "stage $name: $result in ${dt}s"
  [ $rc -eq 0 ]
}
# gpu_stage: stage, or in a dry run the line it would have run.
gpu_stage() {
  if [ $DRY = 1 ]; then
    say "dry run: stage $1 (at most $2 s) needs a GPU: ${*:3}"
    record "$1" "dry run: not run (needs a GPU)" 0
    return 0
  fi
  stage "$@"
}
# smoke_cap CAP: CAP, or what is left of the smoke stage's SMOKE_S if less.
SMOKE_T0=$START  # (set again once the kit is unpacked)
smoke_cap() {
  local l=$((SMOKE_S - ($(date +%s) - SMOKE_T0)))
  [ "$l" -lt "$1" ] && echo "$l" || echo "$1"
}
# json_table KEY...: JSON lines on stdin as markdown table rows of those keys ("" where absent).
json_table() {
  python3 -c '
import json, sys
keys = sys.argv[1:]
for line in sys.stdin:
    d = json.loads(line)
    print("| " + " | ".join(str(d.get(k, "")) for k in keys) + " |")
' "$@"
}
finish() {
  trap '' TERM INT  # once begun, the summary and the tarball are written whatever comes
  {
    echo "# GPU check $(date -u +%Y-%m-%dT%H:%M:%SZ)$([ $DRY = 1 ] && echo ' (dry run, no GPU)')"
    echo
    echo "GPU: ${GPU:-none}; host $(uname -n), $(nproc) cores; kit commit $(cat "$KIT/commit" 2>/dev/null)"
    echo
    echo "| stage | result | seconds |"
    echo "|---|---|---:|"
    awk -F'\t' '{printf "| %s | %s | %s |\n", $1, $2, $3}' "$TABLE"
    local rest
    rest=$(awk -F'\t' '$2 == "not run (no time left)" {printf "%s%s", (n++ ? "," : ""), $1}' "$TABLE")
    [ -n "$rest" ] && { echo; echo "not run for lack of time; the next call: STAGES=$rest scripts/gpu-check.sh"; }
    local tp
    tp=$(cat "$WORK"/throughput-*.log 2>/dev/null | grep '^{' || true)
    if [ -n "$tp" ]; then
      echo
      echo "| codec | dtype | data | MiB | compress GB/s | decompress GB/s | copy GB/s | ratio | round trip |"
      echo "|---|---|---|---:|---:|---:|---:|---:|---|"
      echo "$tp" | json_table codec dtype data mib compress_GBps decompress_GBps copy_GBps ratio round_trip 2>/dev/null ||
        echo "$tp"
    fi
    local tt
    tt=$(grep -h '^{"impl"' "$WORK"/trainer-throughput.log 2>/dev/null || true)
    if [ -n "$tt" ]; then
      echo
      echo "gpt2-124m, B ${THROUGHPUT_BATCH:-32} x T 1024, one GPU (median of steps 3-10; TFLOP/s: train_gpt's count of the step's FLOPs, for PyTorch's rows too; MFU: against the device's peak for the precision, mfu.hpp):"
      echo
      echo "| implementation | precision | attention | ms/step | tokens/s | TFLOP/s | MFU |"
      echo "|---|---|---|---:|---:|---:|---:|"
      echo "$tt" | json_table impl precision attention ms tokens_per_s tflops mfu 2>/dev/null || echo "$tt"
    fi
    local kt
    for kt in "$WORK/kernels-train_gpt.txt" "$WORK/kernels-pytorch.txt"; do
      [ -s "$kt" ] || continue
      echo
      echo "$(basename "$kt" .txt), gpt2-124m bf16:"
      echo
      echo '```'
      cat "$kt"
      echo '```'
    done
    echo
    echo "status: $([ $status -eq 0 ] && echo pass || echo fail), $(($(date +%s) - START)) s"
  } >"$OUT_DIR/summary.md"
  cp "$LOG" "$WORK/" 2>/dev/null
  cp "$KIT/requirements.txt" "$KIT/MANIFEST" "$KIT/mpi/DROPPED" "$KIT/mpi/VERSIONS" "$WORK/" 2>/dev/null
  tar -czf "$OUT_DIR/gpu-check-logs.tar.gz" --exclude=./kit --exclude=./home -C "$WORK" . 2>/dev/null
  rm -rf "$WORK"
  tee -a "$LOG" <"$OUT_DIR/summary.md"
  exit $status
}

# Stopped from outside (the lease's own limit): the running stage ends, the summary and the
# tarball of what ran are still written.
STAGE_PID="" CUR_STAGE=""
stopped() {
  trap '' TERM INT
  say "stopped by a signal${CUR_STAGE:+ in stage $CUR_STAGE}"
  # the stage's timeout passes the signal on and kills what is left after 5 s
  [ -n "$STAGE_PID" ] && { kill "$STAGE_PID" 2>/dev/null; wait "$STAGE_PID" 2>/dev/null; }
  [ -n "$CUR_STAGE" ] && tail -5 "$WORK/$CUR_STAGE.log" >>"$LOG" 2>/dev/null
  record "${CUR_STAGE:-signal}" "stopped by a signal" 0
  status=1
  finish
}
trap stopped TERM INT

# unpack_kit: the kit's xz-compressed files (prepare) unpacked, in a copy of the kit in WORK
# that the run uses from here on (xz, else python3's lzma; modes kept).
unpack_kit() {
  [ -n "$(find "$KIT" -name '*.xz' -print -quit 2>/dev/null)" ] || return 0
  cp -a "$KIT" "$WORK/kit" || return 1
  local f
  while IFS= read -r -d '' f; do
    if command -v xz >/dev/null; then xz -d "$f"
    else python3 -c 'import lzma, os, shutil, sys
s = sys.argv[1]; d = s[:-3]
with lzma.open(s) as i, open(d, "wb") as o: shutil.copyfileobj(i, o)
os.chmod(d, os.stat(s).st_mode & 0o7777); os.remove(s)' "$f"
    fi || { say "FAIL: could not unpack $f"; return 1; }
  done < <(find "$WORK/kit" -name '*.xz' -print0)
  KIT=$WORK/kit
}
unpack_kit || { record unpack "failed (gpu-check.log says why)" 0; status=1; finish; }
SMOKE_T0=$(date +%s)
[ -x "$KIT/bin/core_gpu_smoke" ] && [ -f "$KIT/mpi/env.sh" ] ||
  { say "FAIL: no kit in $KIT (run scripts/gpu-check.sh --prepare first)"; rm -rf "$WORK"; exit 1; }
GPU=""
# the driver's own folder, where images mount it (its nvidia-smi, and libcuda for kit_env)
[ -d /usr/local/nvidia/bin ] && case ":$PATH:" in *:/usr/local/nvidia/bin:*) ;; *) PATH=$PATH:/usr/local/nvidia/bin ;; esac
if [ $DRY = 0 ]; then
  if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi >"$WORK/nvidia-smi.txt" 2>&1; then
    say "SKIPPED: no usable NVIDIA driver (nvidia-smi missing or failing): nothing to check"
    rm -rf "$WORK"
    exit 77
  fi
  GPU=$(nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>/dev/null | head -1)
fi
say "GPU: ${GPU:-none (dry run)}; kit commit $(cat "$KIT/commit" 2>/dev/null); budget ${BUDGET_S}s"

# Library folders: the machine's CUDA toolkit (and the wheels of its PyTorch, where NCCL
# may be the only copy) for cuBLAS and NCCL, the kit's CUDA runtime only where the machine
# lacks that version, the kit's MPI runtime always.
CUDA_DIRS=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && CUDA_DIRS=$CUDA_DIRS${CUDA_DIRS:+:}$d
done
sys_lib() {  # sys_lib SONAME: the folder holding it among CUDA_DIRS and the loader's cache
  local d p
  for d in ${CUDA_DIRS//:/ }; do [ -e "$d/$1" ] && { echo "$d"; return 0; }; done
  p=$(ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n && /x86-64/ {print $NF; exit}')
  [ -n "$p" ] && { dirname "$p"; return 0; }
  return 1
}
find_lib() {  # find_lib SONAME: sys_lib, else the wheels of python3's nvidia/* packages
  local p
  sys_lib "$1" && return 0
  if [ -z "${PY_SITE+x}" ]; then
    PY_SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null || true)
  fi
  [ -n "$PY_SITE" ] && [ -d "$PY_SITE/nvidia" ] &&
    p=$(find "$PY_SITE/nvidia" -maxdepth 4 -name "$1" 2>/dev/null | head -1) && [ -n "$p" ] && { dirname "$p"; return 0; }
  return 1
}
EXTRA_DIRS=""
LIB_NOTES=""
# The sonames core_gpu_smoke dlopens (it needs the kit's libmpi to start).
SMOKE_SONAMES=$(env LD_LIBRARY_PATH="$KIT/mpi/lib:$KIT/lib${CUDA_DIRS:+:$CUDA_DIRS}" "$KIT/bin/core_gpu_smoke" --lib-names 2>/dev/null ||
                echo libcublas.so.13 libnccl.so.2)
for so in $SMOKE_SONAMES; do
  if d=$(find_lib "$so"); then
    LIB_NOTES="$LIB_NOTES$so in $d; "
    case ":$CUDA_DIRS:$EXTRA_DIRS:" in *":$d:"*) ;; *) EXTRA_DIRS=$EXTRA_DIRS${EXTRA_DIRS:+:}$d ;; esac
  else
    LIB_NOTES="$LIB_NOTES$so NOT FOUND; "
  fi
done
KIT_CUDART=""
for f in "$KIT"/lib/libcudart*; do [ -e "$f" ] && KIT_CUDART=$(basename "$f") && break; done
LIBPATH=$KIT/mpi/lib
if [ -n "$KIT_CUDART" ] && ! sys_lib "$KIT_CUDART" >/dev/null; then
  LIBPATH=$LIBPATH:$KIT/lib
  say "using the kit's $KIT_CUDART"
fi
# lib/host (unpacked by unpack_kit)
HOST_LIB=$KIT/lib/host
for f in "$HOST_LIB"/*; do
  [ -e "$f" ] || continue
  # (a dry run always takes them: the kit's unpacked copies are what it checks)
  if [ $DRY = 1 ] || ! sys_lib "$(basename "$f")" >/dev/null; then
    LIBPATH=$LIBPATH:$HOST_LIB
    say "using the kit's lib/host ($([ $DRY = 1 ] && echo "dry run: the kit's copies checked" || echo "$(basename "$f") missing here"))"
    break
  fi
done
LIBPATH=$LIBPATH${CUDA_DIRS:+:$CUDA_DIRS}${EXTRA_DIRS:+:$EXTRA_DIRS}
# The driver's libcuda: where the loader's cache does not know it, its folder (from the
# machine's LD_LIBRARY_PATH, or the driver's mounted folder) goes last, so that kit_env's
# programs, which inherit no path, find it; nothing else of the machine's path goes there
# (a plugin the machine finds only through its path, e.g. an NCCL net plugin, is not seen:
# one node needs none).
# PyTorch runs with the machine's own path (PT_LD, plus that folder): its wheels bring their
# own CUDA libraries, which the toolkit's of another minor version would shadow.
ORIG_LD=${LD_LIBRARY_PATH-}
PT_LD=$ORIG_LD
if ! sys_lib libcuda.so.1 >/dev/null; then
  for d in ${ORIG_LD//:/ } /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
    [ -e "$d/libcuda.so.1" ] || continue
    LIBPATH=$LIBPATH:$d
    case ":$PT_LD:" in *":$d:"*) ;; *) PT_LD=$PT_LD${PT_LD:+:}$d ;; esac
    break
  done
fi
export LD_LIBRARY_PATH=$LIBPATH${ORIG_LD:+:$ORIG_LD} PT_LD
BIN=$KIT/bin

# kit_env CMD...: CMD in an environment of the kit alone: no inherited MPI variables, paths
# or options; the MPI runtime relocated by mpi/env.sh.
HOME_TMP=$WORK/home
mkdir -p "$HOME_TMP"
kit_env() {
  env -i PATH=/usr/bin:/bin HOME="$HOME_TMP" TMPDIR="${TMPDIR:-/tmp}" LD_LIBRARY_PATH="$LIBPATH" \
      ${CUDA_VISIBLE_DEVICES:+CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES} \
      bash -c '. "$0/mpi/env.sh" && exec "$@"' "$KIT" "$@"
}

# smoke-env: versions and whether this machine's C and C++ runtimes are new enough.
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }  # $1 >= $2
smoke_env() {
  local fails=0 have need fam group lib
  echo "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1 || echo '?')"
  echo "toolkit: $( (nvcc --version 2>/dev/null || /usr/local/cuda/bin/nvcc --version 2>/dev/null) | grep -m1 release || echo 'no nvcc')"
  echo "kernel: $(uname -r); $(grep -m1 PRETTY_NAME /etc/os-release 2>/dev/null)"
  echo "libraries: $LIB_NOTES"
  have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
  lib=$(ldconfig -p 2>/dev/null | awk '$1 == "libstdc++.so.6" && /x86-64/ {print $NF; exit}')
  [ -n "$lib" ] || lib=$(ls /usr/lib/x86_64-linux-gnu/libstdc++.so.6 /lib64/libstdc++.so.6 2>/dev/null | head -1)
  local gcclib
  gcclib=$(ldconfig -p 2>/dev/null | awk '$1 == "libgcc_s.so.1" && /x86-64/ {print $NF; exit}')
  while read -r group fam need; do
    case $group in core|mpi) ;; *) continue ;; esac
    local got=""
    case $fam in
      GLIBC) got=$have ;;
      GLIBCXX|CXXABI) [ -n "$lib" ] && got=$(grep -a -o "${fam}_[0-9][0-9.]*" "$lib" | sed "s/${fam}_//" | sort -V | tail -1) ;;
      GCC) [ -n "$gcclib" ] && got=$(grep -a -o "GCC_[0-9][0-9.]*" "$gcclib" | sed 's/GCC_//' | sort -V | tail -1) ;;
    esac
    if [ -z "$got" ]; then
      echo "$group needs $fam $need: FAIL this machine has none (libstdc++ ${lib:-not found}, libgcc_s ${gcclib:-not found})"
      fails=$((fails + 1))
    elif version_ge "$got" "$need"; then
      echo "$group needs $fam $need: OK (this machine: $got)"
    else
      echo "$group needs $fam $need: FAIL this machine has only $got: the kit was built on a newer system;" \
           "rebuild it (scripts/gpu-check.sh --prepare) on one no newer than the GPU machine"
      fails=$((fails + 1))
      [ "$group" = mpi ] && MPI_TOO_OLD=1 || CORE_TOO_OLD=1
    fi
  done <"$KIT/requirements.txt"
  case $LIB_NOTES in *"NOT FOUND"*) echo "a library is missing: its smoke check will fail" ;; esac
  echo "dlopen of the kit: $(kit_env "$BIN/core_gpu_smoke" --no-gpu --no-mpi 2>&1 | tail -1)"
  return $fails
}
# check_maps LOG: the MPI family of shared objects that the ranks ("self") and the launcher
# ("parent") mapped must all lie under the kit; libmpi, the PMIx and hwloc libraries and MCA
# plugins must be among them.
check_maps() {
  local dir=$1 fam='/(libmpi|libopen-|libpmix|libhwloc|libevent|libmunge|libmca_common|mca_|pmix_mca_|hwloc_)[^/]*$'
  local all outside n
  all=$(cat "$dir"/maps-rank*.txt 2>/dev/null | grep -E '^(self|parent) ' | grep -E "$fam" | sort -u)
  outside=$(echo "$all" | awk -v k="$KIT/" 'NF && index($2, k) != 1')
  n=$(echo "$all" | grep -c . || true)
  echo "relocation: $n MPI-runtime objects mapped by the ranks and the launcher"
  echo "$all" | awk '{print $1}' | sort | uniq -c | awk '{print "  " $2 ": " $1}'
  if [ -n "$outside" ]; then
    echo "relocation: FAIL, loaded from outside the kit:"; echo "$outside" | sed 's/^/  /'
    return 1
  fi
  local want miss=""
  for want in "self .*/libmpi\.so" "self .*/libopen-pal\.so" "self .*/libpmix\.so" "self .*/libhwloc\.so" \
              "self .*/libevent_core" "self .*/lib/openmpi/mca_btl_vader\.so" "self .*/lib/openmpi/mca_pmix_ext3x\.so" \
              "parent .*/libopen-rte\.so" "parent .*/lib/openmpi/mca_plm_isolated\.so"; do
    echo "$all" | grep -q -E "^$want" || miss="$miss ${want//\\/}"
  done
  if [ -n "$miss" ]; then echo "relocation: FAIL, not mapped:$miss"; return 1; fi
  local exe
  exe=$(sed -n 's/^exe //p' "$dir"/maps-rank*.txt | head -1)
  case $exe in
    "$KIT"/mpi/bin/*) echo "launcher: $exe" ;;
    *) echo "relocation: FAIL, the ranks' parent is ${exe:-unknown}, not the kit's mpirun"; return 1 ;;
  esac
  echo "relocation: OK, every one under $KIT/"
  # The loader's view of every kit file, in the kit's environment: nothing missing, the MPI
  # family from the kit.
  local f bad=""
  for f in "$BIN"/* "$KIT"/mpi/bin/* "$KIT"/mpi/lib/*.so* "$KIT"/mpi/lib/openmpi/*.so "$KIT"/mpi/lib/pmix/*.so; do
    bad=$bad$(kit_env ldd "$f" 2>&1 | awk -v f="$(basename "$f")" -v k="$KIT/" \
      '/not found/ {print f ": " $0} /=>/ && $1 ~ /^(libmpi|libopen-|libpmix|libhwloc|libevent|libmunge|libmca_common|libudev|libz)/ && index($3, k) != 1 {print f ": " $0}')
  done
  if [ -n "$bad" ]; then echo "ldd: FAIL:"; echo "$bad" | sed 's/^/  /'; return 1; fi
  echo "ldd: OK, every kit file resolves, its MPI libraries to the kit"
}
mpi_smoke() {
  local gpu_flag=$1
  # shellcheck disable=SC2086
  local maps=$WORK/smoke-mpi-maps
  mkdir -p "$maps"
  kit_env mpirun -np 2 --oversubscribe --allow-run-as-root --bind-to none \
      "$BIN/core_gpu_smoke" --mpi --list-libs "$maps" $gpu_flag >"$WORK/smoke-mpi-ranks.log" 2>&1
  local rc=$?
  cat "$WORK/smoke-mpi-ranks.log"
  local oks
  oks=$(grep -c ': mpi: OK' "$WORK/smoke-mpi-ranks.log" || true)
  echo "ranks reporting MPI OK: $oks of 2"
  check_maps "$maps" || rc=1
  [ "$oks" = 2 ] || rc=1
  return $rc
}

# 2 ranks sharing the GPU run every collective on exec::cuda over mpi_staged (and
# mpi_device where the MPI is CUDA-aware), compared bitwise with the host context.
device_collectives() {
  kit_env mpirun -np 2 --oversubscribe --allow-run-as-root --bind-to none "$BIN/comm_test_device_transports"
}

# transport::nccl: 1 rank (three lanes' communicators, a round to itself, NCCL's collectives),
# then 2 ranks sharing the GPU, which NCCL must refuse with a clear error on both.
nccl_check() {
  kit_env mpirun -np 1 --allow-run-as-root --bind-to none "$BIN/comm_test_nccl" &&
    kit_env mpirun -np 2 --oversubscribe --allow-run-as-root --bind-to none "$BIN/comm_test_nccl"
}

# 2 ranks sharing the GPU time hcomm-collective's device-resident allreduce (hcomm's ring on
# exec::cuda over the run-time device transport) against MPI on the same device buffers; one
# JSON line per measurement (no throughput claim from one GPU: the ranks share it).
device_timing() {
  kit_env mpirun -np 2 --oversubscribe --allow-run-as-root --bind-to none "$BIN/hcomm-collective" --device cuda \
    --op allreduce --codec none,mpc,zfp:8 --baseline --bytes "${COLLECTIVE_MIB:-64}M" --threshold 0 --iters 5
}

# tg NP ARGS...: train_gpt on NP ranks (sharing the GPU) through the kit's mpirun.
tg() {
  kit_env mpirun -np "$1" --oversubscribe --allow-run-as-root --bind-to none "$BIN/train_gpt" "${@:2}"
}
# train_gpt --device cuda on the kit's corpus, through the kit's mpirun (ranks sharing the GPU).
trainer_cuda() {
  local d=$WORK/trainer-cuda rc=0
  mkdir -p "$d"
  local C="--model tiny --layers 4 --heads 8 --steps 10 --quiet --sample 0 --data $KIT/data/corpus.txt"
  # shellcheck disable=SC2086
  {
    echo "== 1 rank: host-check (the reference), cuda against it (fp32: 1e-5; bf16: 1e-3)"
    tg 1 $C --device host-check --losses-out "$d/hc.txt" || return 1
    tg 1 $C --device cuda --losses-out "$d/cuda.txt" --expect-losses "$d/hc.txt" --expect-rtol 1e-5 || rc=1
    [ -s "$d/cuda.txt" ] || return 1
    tg 1 $C --device host-check --precision bf16 --losses-out "$d/hc-bf16.txt" &&
      tg 1 $C --device cuda --precision bf16 --expect-losses "$d/hc-bf16.txt" --expect-rtol 1e-3 || rc=1
    echo "== without cuBLASLt's epilogues (bias and GELU as separate kernels): the same losses (1e-5)"
    tg 1 $C --device cuda --gemm-epilogues off --expect-losses "$d/cuda.txt" --expect-rtol 1e-5 || rc=1
    tg 1 $C --device cuda --precision bf16 --gemm-epilogues off --expect-losses "$d/hc-bf16.txt" --expect-rtol 1e-3 || rc=1
    echo "== --kernel-times on cuda (CUDA events): the table adds up, names the layers' kernels, changes no loss"
    python3 "$KIT/py/check_kernel_times.py" --steps 9 --expect gemm_fwd=17 --expect attention_fwd=4 -- \
      env -i PATH=/usr/bin:/bin HOME="$HOME_TMP" TMPDIR="${TMPDIR:-/tmp}" LD_LIBRARY_PATH="$LIBPATH" \
      ${CUDA_VISIBLE_DEVICES:+CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES} bash -c '. "$0/mpi/env.sh" && exec "$@"' \
      "$KIT" mpirun -np 1 --allow-run-as-root --bind-to none "$BIN/train_gpt" $C --device cuda --kernel-times || rc=1
    echo "== grids sharing the GPU reproduce the 1-rank cuda losses (1e-5)"
    tg 2 $C --device cuda --share-gpu --dp 2 --expect-losses "$d/cuda.txt" --expect-rtol 1e-5 || rc=1
    tg 2 $C --device cuda --share-gpu --pp 2 --expect-losses "$d/cuda.txt" --expect-rtol 1e-5 || rc=1
    tg 2 $C --device cuda --share-gpu --tp 2 --expect-losses "$d/cuda.txt" --expect-rtol 1e-5 || rc=1
    tg 4 $C --device cuda --share-gpu --dp 2 --tp 2 --expect-losses "$d/cuda.txt" --expect-rtol 1e-5 || rc=1
    echo "== resume on the GPU is bitwise"
    tg 1 $C --device cuda --stop-at 5 --save "$d/ck" &&
      tg 1 $C --device cuda --resume "$d/ck" --expect-losses "$d/cuda.txt" --expect-rtol 0 || rc=1
    echo "== 2 ranks on one GPU without --share-gpu: one line, exit 2"
    tg 2 $C --device cuda --dp 2 >"$d/refused.txt" 2>&1
    local r=$?
    cat "$d/refused.txt"
    { [ $r -eq 2 ] && [ "$(grep -c 'share-gpu' "$d/refused.txt")" = 1 ]; } || { echo "refusal: FAIL (exit $r)"; rc=1; }
  }
  return $rc
}

# The 3-D checks on the GPU (8 ranks sharing it): 2x2x2, compressed DP/PP/TP, ZeRO-1, overlap.
trainer_cuda_3d() {
  local d=$WORK/trainer-cuda-3d rc=0
  mkdir -p "$d"
  local C="--model tiny --layers 4 --heads 8 --steps 10 --quiet --sample 0 --data $KIT/data/corpus.txt"
  # shellcheck disable=SC2086
  {
    echo "== 1 rank on cuda: the reference of the 2x2x2 grids"
    tg 1 $C --device cuda --losses-out "$d/cuda.txt" || return 1
    echo "== 2x2x2 sharing the GPU reproduces it (1e-5)"
    tg 8 $C --device cuda --share-gpu --dp 2 --pp 2 --tp 2 --expect-losses "$d/cuda.txt" --expect-rtol 1e-5 || rc=1
    echo "== zhybrid:16,8 on 2x2x2 (ZFP coded on the GPU) against host-check's (1e-4)"
    tg 8 $C --device host-check --dp 2 --pp 2 --tp 2 --scheme zhybrid:16,8 --compress-min-bytes 0 \
       --losses-out "$d/hc8-zh.txt" &&
      tg 8 $C --device cuda --share-gpu --dp 2 --pp 2 --tp 2 --scheme zhybrid:16,8 --compress-min-bytes 0 \
         --expect-losses "$d/hc8-zh.txt" --expect-rtol 1e-4 || rc=1
    echo "== zhybrid:16,6+ef (the residual in device memory) on 2x2x2 against host-check's (1e-4), resumed bitwise"
    local ef="--dp 2 --pp 2 --tp 2 --scheme zhybrid:16,6+ef --compress-min-bytes 0"
    tg 8 $C --device host-check $ef --losses-out "$d/hc8-ef.txt" &&
      tg 8 $C --device cuda --share-gpu $ef --losses-out "$d/cuda8-ef.txt" --expect-losses "$d/hc8-ef.txt" \
         --expect-rtol 1e-4 &&
      tg 8 $C --device cuda --share-gpu $ef --stop-at 5 --save "$d/ck-ef" &&
      tg 8 $C --device cuda --share-gpu $ef --resume "$d/ck-ef" --expect-losses "$d/cuda8-ef.txt" --expect-rtol 0 || rc=1
    echo "== --zero 1 on the GPU: 2x2x2 reproduces 1 rank (1e-5); with bf16 (16-bit wire) host-check's (1e-3)"
    tg 8 $C --device cuda --share-gpu --dp 2 --pp 2 --tp 2 --zero 1 --expect-losses "$d/cuda.txt" --expect-rtol 1e-5 || rc=1
    tg 8 $C --device host-check --dp 2 --pp 2 --tp 2 --precision bf16 --losses-out "$d/hc8-bf16.txt" &&
      tg 8 $C --device cuda --share-gpu --dp 2 --pp 2 --tp 2 --precision bf16 --zero 1 \
         --expect-losses "$d/hc8-bf16.txt" --expect-rtol 1e-3 || rc=1
    echo "== --overlap on (DP buckets on a communication stream) equals off, bitwise; --zero 1 overlapped too"
    tg 8 $C --device cuda --share-gpu --dp 2 --pp 2 --tp 2 --bucket-mb 0.05 --losses-out "$d/ov-off.txt" &&
      tg 8 $C --device cuda --share-gpu --dp 2 --pp 2 --tp 2 --bucket-mb 0.05 --overlap on \
         --expect-losses "$d/ov-off.txt" --expect-rtol 0 &&
      tg 8 $C --device cuda --share-gpu --dp 2 --pp 2 --tp 2 --bucket-mb 0.05 --overlap on --zero 1 \
         --expect-losses "$d/ov-off.txt" --expect-rtol 0 || rc=1
  }
  return $rc
}

# gpt2-124m throughput, train_gpt and PyTorch side by side: one JSON line per run ({"impl":...}).
trainer_throughput() {
  local d=$WORK/trainer-throughput rc=0 prec
  mkdir -p "$d"
  local B=${THROUGHPUT_BATCH:-32}
  local M="--model gpt2-124m --batch $B --steps 10 --sample 0 --eval-every 0 --eval-batches 1 --quiet --data $KIT/data/corpus.txt"
  local run
  # fp32, bf16, and bf16 without cuBLASLt's epilogues (what fusing bias and GELU buys)
  for run in fp32 bf16 bf16:off; do
    prec=${run%%:*}
    # shellcheck disable=SC2086
    kit_env mpirun -np 1 --allow-run-as-root --bind-to none "$BIN/train_gpt" $M --device cuda --precision $prec \
        $([ "$run" = bf16:off ] && echo --gemm-epilogues off) --metrics "$d/train_gpt-${run/:/-}.jsonl" || rc=1
    python3 - "$d/train_gpt-${run/:/-}.jsonl" "$prec" "$run" "$B" "$d/peak-$prec.json" <<'PY' || rc=1
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])][2:]
ms = statistics.median(r["ms"] for r in rows)
fl = rows[-1]["flops_step"]["actual"]
off = sys.argv[3].endswith(":off")
line = {"impl": "train_gpt --device cuda" + (" --gemm-epilogues off" if off else ""), "precision": sys.argv[2],
        "attention": "own (flash-style" + ("; tensor cores" if sys.argv[2] == "bf16" else "") + ")", "ms": round(ms, 2),
        "tokens_per_s": round(int(sys.argv[4]) * 1024 / ms * 1e3), "tflops": round(fl / ms / 1e9, 1)}
mfu = [r["mfu"] for r in rows if "mfu" in r]
if mfu:  # against the device's peak for this precision (mfu.hpp's table); kept for PyTorch's row
    line["mfu"] = f"{100 * statistics.median(mfu):.1f}%"
    if not off:
        peak = fl / (rows[-1]["ms"] / 1e3) / rows[-1]["mfu"]  # FLOP/s
        json.dump({"flops_step": fl, "peak_flops": peak}, open(sys.argv[5], "w"))
print(json.dumps(line))
PY
  done
  # where the bf16 step's time goes: a short run with every kernel timed by CUDA events (apart
  # from the runs above: the events add a little host work per kernel)
  # shellcheck disable=SC2086
  kit_env mpirun -np 1 --allow-run-as-root --bind-to none "$BIN/train_gpt" ${M/--steps 10/--steps 5} --device cuda \
      --precision bf16 --kernel-times >"$d/kernels-train_gpt.out" 2>&1 || rc=1
  cat "$d/kernels-train_gpt.out"
  sed -n '/^kernel times/,/^  step /p' "$d/kernels-train_gpt.out" >"$WORK/kernels-train_gpt.txt"
  pt() {  # pt PRECISION [--compile|--profile N]: PyTorch's line as JSON
    local out
    out=$(${PT_TIMEOUT:+timeout -k 5 "$PT_TIMEOUT"} env LD_LIBRARY_PATH="$PT_LD" python3 "$KIT/py/reference_gpt.py" \
          --bench --model gpt2-124m \
          --batch "$B" --device cuda --sdpa --steps 10 --data "$KIT/data/corpus.txt" --precision "$@" 2>&1) ||
      { echo "$out" | tail -5; return 1; }
    case " $* " in *" --profile "*) echo "$out" | grep '^pytorch kernel times' -A 40 >"$WORK/kernels-pytorch.txt" ;; esac
    echo "$out" | grep '^pytorch '
    echo "$out" | grep '^pytorch [0-9]' | python3 -c '
import json, os, re, sys
l = sys.stdin.read()
ms = float(re.search(r"median ms/step ([0-9.]+)", l).group(1))
prec = re.search(r"precision=(\S+)", l).group(1)
line = {"impl": "PyTorch " + l.split()[1] + (" compiled" if "compile=yes" in l else " eager"), "precision": prec,
        "attention": "SDPA", "ms": ms, "tokens_per_s": round(int(re.search(r"batch=([0-9]+)", l).group(1)) * 1024 / ms * 1e3)}
# the same model: the FLOPs of train_gpt for its step, and its peak for this precision
peak = sys.argv[1] + "/peak-" + prec + ".json"
if os.path.exists(peak):
    p = json.load(open(peak))
    fl, top = p["flops_step"], p["peak_flops"]
    line["tflops"] = round(fl / ms / 1e9, 1)
    line["mfu"] = "%.1f%%" % (100 * fl / (ms / 1e3) / top)
print(json.dumps(line))' "$d"
  }
  pt fp32 || rc=1
  pt bf16 --profile 3 || rc=1  # then 3 steps under torch.profiler: its kernel times
  # torch.compile's warm-up is long: at most 80 s, and its failure is reported, not the stage's;
  # only where the budget keeps 150 s and the stage 90 s (its cap must not cut the compile off)
  if [ "$(left)" -gt 150 ] && [ $((${STAGE_END:-0} - $(date +%s))) -gt 90 ]; then
    PT_TIMEOUT=80 pt bf16 --compile || echo "torch.compile: failed or over 80 s"
  else echo "torch.compile: not run (less than 150 s of the budget or 90 s of the stage left)"; fi
  return $rc
}

# PyTorch's debug states computed on this GPU (kit/py/reference_gpt.py --device cuda: fp32,
# TF32 off), then replayed by the whole model on the GPU with the trainer-model stage's bounds.
trainer_pytorch_gpu() {
  local d=$WORK/pytorch-gpu-states
  mkdir -p "$d"
  env LD_LIBRARY_PATH="$PT_LD" python3 "$KIT/py/reference_gpt.py" --device cuda --out "$d" || return 1
  cp "$KIT"/data/debug_bert*.bin "$d/" || return 1  # BERT's stay the CPU's (reference_bert.py)
  "$BIN/model_test_cuda_model" "$d"
}

# mpi_stage NAME CAP PROGRAM FUNCTION: a GPU stage that runs FUNCTION (ranks through the kit's
# mpirun), recorded as not run when the kit's MPI cannot start here or PROGRAM is not in the kit.
mpi_stage() {
  if [ "$MPI_TOO_OLD" = 1 ]; then
    record "$1" "not run (C runtime too old for the kit's MPI)" 0
  elif [ -x "$BIN/$3" ]; then
    export -f "$4"
    gpu_stage "$1" "$2" bash -c "$4"
  else
    record "$1" "not in the kit" 0
  fi
}

# 1 smoke.
CORE_TOO_OLD=0 MPI_TOO_OLD=0
t0=$(date +%s)
smoke_env >"$WORK/smoke-env.log" 2>&1
rc=$?
cat "$WORK/smoke-env.log" >>"$LOG"
record smoke-env "$([ $rc -eq 0 ] && echo pass || echo "failed: $rc requirement(s) unmet")" $(($(date +%s) - t0))
[ $rc -eq 0 ] || status=1
grep -E 'FAIL|missing' "$WORK/smoke-env.log" | while read -r l; do say "smoke-env: $l"; done
if [ "$CORE_TOO_OLD" = 1 ]; then
  say "this machine's C/C++ runtime is older than the kit needs: later stages skipped"
  finish
fi
gpu_ok=1
gpu_stage smoke-gpu "$(smoke_cap 30)" "$BIN/core_gpu_smoke" --no-mpi
if [ $DRY = 0 ] && ! grep -q ': context: OK' "$WORK/smoke-gpu.log"; then gpu_ok=0; fi
if [ "$MPI_TOO_OLD" = 1 ]; then
  say "smoke-mpi: this machine's C runtime is older than the kit's MPI needs: not run"
  record smoke-mpi "not run (C runtime too old)" 0
else
  # The 2 ranks share the GPU; in a dry run they skip their GPU checks.
  export -f mpi_smoke check_maps kit_env
  export BIN KIT LIBPATH HOME_TMP WORK
  stage smoke-mpi "$(smoke_cap 40)" bash -c "mpi_smoke $([ $DRY = 1 ] && echo --no-gpu)"
fi
# A dry run: the kit's train_gpt starts through the kit's mpirun, its libraries resolving to
# the kit's (lib/host unpacked), and without a GPU stops before training with one line.
train_gpt_no_gpu() {
  local out r
  out=$(kit_env mpirun -np 1 --allow-run-as-root --bind-to none "$BIN/train_gpt" --model tiny --steps 1 \
        --data "$KIT/data/corpus.txt" --device cuda 2>&1)
  r=$?
  echo "$out"
  [ $r -eq 2 ] && echo "$out" | grep -q '^train_gpt: --device cuda: no'
}
if [ $DRY = 1 ] && [ -x "$BIN/train_gpt" ] && [ "$MPI_TOO_OLD" != 1 ]; then
  export -f train_gpt_no_gpu
  export KIT
  stage trainer-kit 30 bash -c train_gpt_no_gpu
fi
if [ $gpu_ok = 0 ] ||
   ! gpu_stage smoke-collectives "$(smoke_cap 30)" "$BIN/core_test_cuda" "cuda team collectives give their defined results" ||
   ! gpu_stage smoke-roundtrip "$(smoke_cap 30)" "$BIN/core_cuda_throughput" --mib 1; then
  say "smoke failed: later stages skipped"
else
  # the trainer's stages, 2 correctness, 3 device-resident collectives, 4 throughput.
  gpu_stage trainer-kernels 30 "$BIN/model_test_cuda_portable_kernels"
  gpu_stage trainer-model 60 "$BIN/model_test_cuda_model" "$KIT/data"
  export -f trainer_pytorch_gpu
  export BIN KIT WORK PT_LD
  gpu_stage trainer-pytorch-gpu 60 bash -c trainer_pytorch_gpu
  export -f tg
  mpi_stage trainer-cuda 90 train_gpt trainer_cuda
  export -f left
  export START BUDGET_S
  mpi_stage trainer-throughput 180 train_gpt trainer_throughput
  mpi_stage trainer-cuda-3d 90 train_gpt trainer_cuda_3d
  gpu_stage correctness 150 "$BIN/core_test_cuda" --durations yes
  mpi_stage device-collectives 90 comm_test_device_transports device_collectives
  mpi_stage nccl 60 comm_test_nccl nccl_check
  mpi_stage device-timing 60 hcomm-collective device_timing
  for dt in ${THROUGHPUT_DTYPES:-f32 bf16 f64}; do
    gpu_stage "throughput-$dt" 90 "$BIN/core_cuda_throughput" --mib "${THROUGHPUT_MIB:-256}" --dtype "$dt"
  done
fi
finish
