#!/usr/bin/env bash
# Installs everything hcomm/msparse need from Debian 12 packages and prepares the default
# corpus. Idempotent: packages already present are skipped by apt, the corpus is only
# written when missing. Run as root (or with sudo available).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  clang libclang-rt-14-dev            # libFuzzer + sanitizers
  libzfp-dev zfp                      # ZFP oracle and CLI
  libopenmpi-dev openmpi-bin          # MPI transport
  catch2                              # tests (Catch2 v2.13)
  libopenblas-dev                     # sgemm for the trainer and the baselines
  libbenchmark-dev                    # Google Benchmark
  libcli11-dev nlohmann-json3-dev     # command lines and JSON of the tools and examples (not hcomm's headers)
  libtrilinos-kokkos-dev              # optional Kokkos backend (Serial)
  python3 python3-numpy python3-torch python3-matplotlib   # PyTorch reference, plots
  bible-kjv                           # default text corpus
  hyperfine iproute2                  # whole-command timing, netns benchmarks
)

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: all Debian packages present"
fi

# Default corpus: the King James Bible (4.3 MB of UTF-8 text), no download needed.
mkdir -p data
if [ ! -s data/kjv.txt ]; then
  bible -m 8192 "gen1:1-rev22:21" > data/kjv.txt.tmp
  mv data/kjv.txt.tmp data/kjv.txt
fi
echo "setup: ok ($(wc -c < data/kjv.txt) bytes of corpus in data/kjv.txt)"
