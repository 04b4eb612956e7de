#!/usr/bin/env bash
# Tests of the hcomm-codec command-line tool, run by ctest (see tests/codec/extra.cmake).
#
#   cli_test.sh TOOL WORKDIR roundtrip CODEC DTYPE   # compress + decompress files, cmp / error bound
#   cli_test.sh TOOL WORKDIR stats CODEC DTYPE       # stats prints one JSON object with every field
#   cli_test.sh TOOL WORKDIR bad                     # bad arguments (exit 2) and inputs (exit 1): one
#                                                    #   stderr line naming the option, OUT kept
#   cli_test.sh TOOL WORKDIR huge FRAME_EDIT         # frames forging a huge count: corrupt_frame, no allocation
#   cli_test.sh TOOL WORKDIR device CUDA             # --device cuda (CUDA: the build's HCOMM_ENABLE_CUDA):
#                                                    #   exit 3 and one line saying why, or (with a GPU)
#                                                    #   the host's frames and values
#
# Lossy codecs: zfp:RATE, bf16 and int8[:B], each with its own error bound on smooth data.
# Exit 77 (ctest SKIP_RETURN_CODE) when CODEC is not registered in this build, so a missing
# codec shows up as "skipped" rather than as a pass.
set -uo pipefail
TOOL=$1; WORK=$2; WHAT=$3; shift 3
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1

die() { echo "FAIL: $*" >&2; exit 1; }

# gen FILE DTYPE N KIND: smooth field plus a little noise (KIND=smooth), raw random bits
# including NaN/Inf patterns (KIND=bits) -- little-endian.
gen() {
  "$PY" - "$@" <<'EOF'
import math, random, struct, sys
path, dt, n, kind = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
random.seed(12345)
size = {'f32': 4, 'f64': 8, 'bf16': 2, 'f16': 2}[dt]
code = '<%d%s' % (n, {'f32': 'f', 'f64': 'd', 'bf16': 'f', 'f16': 'e'}[dt])
if kind == 'smooth':
    vals = [math.sin(i * 0.01) * 3.0 + 0.5 * math.cos(i * 0.0037) + random.gauss(0, 1e-4) for i in range(n)]
    data = struct.pack(code, *vals)
    if dt == 'bf16':  # the top half of each float32
        data = b''.join(data[4 * i + 2:4 * i + 4] for i in range(n))
else:
    data = bytes(random.getrandbits(8) for _ in range(n * size))
open(path, 'wb').write(data)
EOF
}

registered() {  # is codec $1 in this build's registry?
  local err
  : > probe.bin
  err=$("$TOOL" stats --codec "$1" --dtype f32 --reps 1 probe.bin 2>&1 >/dev/null)
  if printf '%s' "$err" | grep -q "not in this build's registry"; then
    echo "SKIP: codec $1 is not registered in this build (include/hcomm/codec/registry.hpp)"
    exit 77
  fi
}

# json FILE EXPR: evaluates a Python expression over the parsed object `j`; fails unless true.
json_check() {
  "$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); ok=eval(sys.argv[2]); sys.exit(0 if ok else 1)' "$1" "$2" \
    || die "JSON check failed: $2 on $(cat "$1")"
}

lossless() { case $1 in none*|mpc*) return 0;; *) return 1;; esac; }

# nrmse_bound CODEC: the normalised RMSE a lossy codec must stay under on the smooth field
# (1023 values or more), or nothing when the codec promises none (ZFP below rate 8).
# bf16 keeps 8 significant bits (relative error <= 2^-8); int8 rounds to 1/127 of a
# block's largest magnitude.
nrmse_bound() {
  case $1 in
    zfp:*) [ "${1#zfp:}" -ge 8 ] && echo 1e-2 ;;
    bf16) echo 1e-3 ;;
    int8*) echo 5e-3 ;;
  esac
}

case $WHAT in
roundtrip)
  CODEC=$1; DT=$2; registered "$CODEC"
  for n in 0 1 5 1023 1025 70001; do
    for kind in smooth bits; do
      if ! lossless "$CODEC" && [ $kind = bits ]; then continue; fi  # lossy: NaN/Inf tested in Catch2
      f=in_${n}_${kind}.$DT
      gen "$f" "$DT" $n $kind
      "$TOOL" compress --codec "$CODEC" --dtype "$DT" "$f" || die "compress $f"
      [ -s "$f.hcf" ] || die "no frame for $f"
      "$TOOL" decompress --dtype "$DT" "$f.hcf" "$f.out" || die "decompress $f.hcf"
      if lossless "$CODEC"; then
        cmp "$f" "$f.out" || die "$CODEC round trip of $f is not bit-exact"
      else
        [ "$(stat -c %s "$f")" = "$(stat -c %s "$f.out")" ] || die "decoded size differs for $f"
        "$TOOL" decompress "$f.hcf" "$f.out2" && cmp "$f.out" "$f.out2" || die "decompress not deterministic"
        "$TOOL" stats --codec "$CODEC" --dtype "$DT" --reps 1 "$f" > s.json || die "stats $f"
        bound=$(nrmse_bound "$CODEC")
        if [ "$n" -ge 1023 ] && [ -n "$bound" ]; then json_check s.json "j['nrmse'] < $bound"; fi
        if [ "$CODEC" = bf16 ] && [ "$n" -ge 1 ]; then  # round to nearest: relative error <= 2^-8, |x| < 3.6
          json_check s.json "j['max_abs_error'] <= 3.6 * 2**-8"
        fi
      fi
      "$TOOL" compress --no-checksum --threads 1 --codec "$CODEC" --dtype "$DT" "$f" nock.hcf || die "compress --no-checksum"
      "$TOOL" decompress --threads 2 --codec "$CODEC" nock.hcf nock.out || die "decompress of a frame without checksum"
      if lossless "$CODEC"; then cmp "$f" nock.out || die "no-checksum round trip differs"; fi
    done
  done
  # default output names: IN.hcf, and IN without .hcf
  gen x.$DT "$DT" 100 smooth && cp x.$DT keep.$DT && "$TOOL" compress --codec "$CODEC" --dtype "$DT" x.$DT \
    && rm x.$DT && "$TOOL" decompress x.$DT.hcf && [ -s x.$DT ] || die "default output names"
  if lossless "$CODEC"; then cmp x.$DT keep.$DT || die "default-name round trip differs"; fi
  ls | grep -q '\.tmp\.' && die "temporary files left behind"
  echo "ok: $CODEC $DT round trips"
  ;;
stats)
  CODEC=$1; DT=$2; registered "$CODEC"
  gen in.$DT "$DT" 4099 smooth
  "$TOOL" stats --codec "$CODEC" --dtype "$DT" --reps 2 in.$DT > s.json 2> err.txt || die "stats exit $?: $(cat err.txt)"
  [ "$(wc -l < s.json)" = 1 ] || die "stats printed more than one line"
  [ -s err.txt ] && die "stats wrote to stderr: $(cat err.txt)"
  "$PY" -c 'import json,sys; json.load(sys.stdin)' < s.json || die "stats output is not JSON: $(cat s.json)"
  json_check s.json 'all(k in j for k in ["codec","dtype","count","raw_bytes","frame_bytes","ratio","compress_gbps","decompress_gbps","max_abs_error","rmse","psnr_db","nonfinite","bit_exact"])'
  json_check s.json "j['count'] == 4099 and j['dtype'] == '$DT' and j['raw_bytes'] == 4099 * (4 if '$DT' == 'f32' else 8)"
  json_check s.json "j['ratio'] > 0 and abs(j['ratio'] - j['raw_bytes'] / j['frame_bytes']) < 1e-4 * j['ratio']"
  json_check s.json "j['compress_gbps'] > 0 and j['decompress_gbps'] > 0 and j['nonfinite'] == 0"
  if lossless "$CODEC"; then
    json_check s.json "j['bit_exact'] is True and j['max_abs_error'] == 0 and j['rmse'] == 0 and j['psnr_db'] is None"
  else
    json_check s.json "j['max_abs_error'] > 0 and j['rmse'] > 0 and j['rmse'] <= j['max_abs_error'] and j['psnr_db'] > 0"
  fi
  # non-finite input is counted; an empty input gives null speeds, not a division by zero
  fmt=d; [ "$DT" = f32 ] && fmt=f
  "$PY" -c "import struct; open('nf.$DT','wb').write(struct.pack('<4$fmt', 1.0, float('nan'), float('inf'), 2.0))"
  "$TOOL" stats --codec "$CODEC" --dtype "$DT" nf.$DT > nf.json || die "stats on non-finite input"
  json_check nf.json "j['nonfinite'] == 2 and j['count'] == 4"
  # none, MPC, bf16 and int8 keep NaN and Inf where they were (ZFP too, checked in Catch2)
  case $CODEC in zfp*) ;; *) json_check nf.json "j['nonfinite_mismatch'] == 0 and j['finite_to_nonfinite'] == 0" ;; esac
  json_check s.json "j['finite_to_nonfinite'] == 0"
  # Values at the type's maximum: lossless codecs keep them; ZFP's fixed rate 8 rounds them
  # to Inf, as libzfp does, and stats counts them as finite values decoded as non-finite.
  "$PY" -c "import struct, sys; open('max.$DT','wb').write(struct.pack('<8$fmt', *([3.4028234663852886e38 if '$DT' == 'f32' else 1.7976931348623157e308] * 4 + [1.0, 2.0, 3.0, 4.0])))"
  "$TOOL" stats --codec "$CODEC" --dtype "$DT" --reps 1 max.$DT > max.json || die "stats on values at the maximum"
  if lossless "$CODEC"; then json_check max.json "j['finite_to_nonfinite'] == 0 and j['bit_exact']"; fi
  if [ "$CODEC" = zfp:8 ]; then
    json_check max.json "j['finite_to_nonfinite'] >= 1 and j['finite_to_nonfinite'] == j['nonfinite_mismatch']"
  fi
  # bf16 rounds values past 3.39e38 to Inf, as the IEEE conversion does; int8 never decodes a
  # finite value as non-finite.
  if [ "$CODEC" = bf16 ]; then json_check max.json "j['finite_to_nonfinite'] == 4 and j['nonfinite_mismatch'] == 4"; fi
  case $CODEC in int8*) json_check max.json "j['finite_to_nonfinite'] == 0 and j['nonfinite_mismatch'] == 0" ;; esac
  : > empty.$DT
  "$TOOL" stats --codec "$CODEC" --dtype "$DT" empty.$DT > e.json || die "stats on an empty file"
  json_check e.json "j['count'] == 0 and j['compress_gbps'] is None and j['psnr_db'] is None"
  echo "ok: $CODEC $DT stats JSON"
  ;;
bad)
  gen good.f32 f32 1000 smooth
  "$TOOL" compress --codec none --dtype f32 good.f32 good.hcf || die "setup compress"
  head -c 1001 good.f32 > odd.f32
  head -c 3000 good.hcf > trunc.hcf
  head -c 40 good.hcf > short.hcf
  cp good.hcf flip.hcf && printf '\xff' | dd of=flip.hcf bs=1 seek=2000 conv=notrunc status=none
  cp good.hcf head.hcf && printf '\x07' | dd of=head.hcf bs=1 seek=20 conv=notrunc status=none
  "$PY" -c "import os; open('foreign.hcf','wb').write(b'\x89PNG' + os.urandom(200))"
  : > empty.hcf
  mkdir -p adir
  n=0
  # expect_fail DESCRIPTION EXPECTED_EXIT NAMED ARGS...: non-zero exit (EXPECTED_EXIT unless
  # empty), one "hcomm-codec: " line on stderr that contains NAMED (the option, argument or
  # problem it is about) unless NAMED is empty, nothing on stdout.
  expect_fail() {
    local desc=$1 want=$2 named=$3; shift 3
    n=$((n + 1))
    "$TOOL" "$@" > out.txt 2> err.txt
    local rc=$?
    [ $rc -ne 0 ] || die "$desc: exit 0"
    [ -z "$want" ] || [ $rc -eq "$want" ] || die "$desc: exit $rc, expected $want: $(cat err.txt)"
    [ "$(wc -l < err.txt)" = 1 ] || die "$desc: stderr is not one line: $(cat err.txt)"
    grep -q '^hcomm-codec: ' err.txt || die "$desc: stderr line lacks the hcomm-codec: prefix: $(cat err.txt)"
    [ -z "$named" ] || grep -qF -- "$named" err.txt || die "$desc: the message does not name '$named': $(cat err.txt)"
    [ -s out.txt ] && die "$desc: wrote to stdout"
    echo "  $desc -> $rc: $(cat err.txt)"
  }
  # The command line: exit 2, a line naming the option (or argument) that is wrong.
  expect_fail "no arguments" 2 "missing command"
  expect_fail "unknown command" 2 "squash" squash good.f32
  expect_fail "unknown option" 2 "--fast" compress --fast --codec none --dtype f32 good.f32
  expect_fail "option before the command" 2 "--threads" --threads 2 compress --codec none --dtype f32 good.f32
  expect_fail "missing --codec" 2 "--codec" compress --dtype f32 good.f32
  expect_fail "missing --dtype" 2 "--dtype" stats --codec none good.f32
  expect_fail "--codec without a value" 2 "--codec" compress --dtype f32 good.f32 --codec
  expect_fail "bad --dtype" 2 "--dtype" compress --codec none --dtype f8 good.f32
  expect_fail "unknown codec" 2 "--codec" compress --codec lz4 --dtype f32 good.f32 o1
  expect_fail "bad codec parameter" 2 "--codec" compress --codec none:3 --dtype f32 good.f32 o1
  expect_fail "zfp without rate" 2 "--codec" compress --codec zfp --dtype f32 good.f32 o1
  expect_fail "zfp rate 0" 2 "--codec" compress --codec zfp:0 --dtype f32 good.f32 o1
  expect_fail "zfp rate 65" 2 "--codec" stats --codec zfp:65 --dtype f64 good.f32
  expect_fail "mpc dim 99" 2 "--codec" compress --codec mpc:99 --dtype f32 good.f32 o1
  expect_fail "codec garbage" 2 "--codec" compress --codec zfp:8x --dtype f32 good.f32 o1
  expect_fail "bad --codec to check a decompress" 2 "--codec" decompress --codec zfp:99 good.hcf o2
  expect_fail "--threads not a number" 2 "--threads" compress --codec none --dtype f32 --threads x good.f32
  expect_fail "--threads 0" 2 "--threads" compress --codec none --dtype f32 --threads 0 good.f32 o1
  expect_fail "--threads negative" 2 "--threads" compress --codec none --dtype f32 --threads -1 good.f32 o1
  expect_fail "--threads above 4096" 2 "--threads" compress --codec none --dtype f32 --threads 4097 good.f32 o1
  expect_fail "--threads 2^32 + 1 (wraps to 1 in 32 bits)" 2 "--threads" compress --codec none --dtype f32 --threads 4294967297 good.f32 o1
  expect_fail "--threads over 64 bits" 2 "--threads" compress --codec none --dtype f32 --threads 99999999999999999999 good.f32 o1
  expect_fail "--threads with a fraction" 2 "--threads" compress --codec none --dtype f32 --threads 1.5 good.f32 o1
  expect_fail "--threads in hex" 2 "--threads" compress --codec none --dtype f32 --threads 0x10 good.f32 o1
  expect_fail "--reps 0" 2 "--reps" stats --codec none --dtype f32 --reps 0 good.f32
  expect_fail "--reps negative" 2 "--reps" stats --codec none --dtype f32 --reps -3 good.f32
  expect_fail "--reps over 64 bits" 2 "--reps" stats --codec none --dtype f32 --reps 18446744073709551617 good.f32
  expect_fail "--reps to compress" 2 "--reps" compress --codec none --dtype f32 --reps 2 good.f32 o1
  expect_fail "--max-output 0" 2 "--max-output" decompress --max-output 0 good.hcf o2
  expect_fail "--max-output negative" 2 "--max-output" decompress --max-output -1 good.hcf o2
  expect_fail "--max-output bad suffix" 2 "--max-output" decompress --max-output 4X good.hcf o2
  expect_fail "--max-output over 64 bits" 2 "--max-output" decompress --max-output 20000000000000000000K good.hcf o2
  expect_fail "missing input" 2 "IN" compress --codec none --dtype f32
  expect_fail "missing file" 2 "nonexistent.f32" compress --codec none --dtype f32 nonexistent.f32 o1
  expect_fail "directory input" 2 "adir" compress --codec none --dtype f32 adir o1
  expect_fail "directory frame" 2 "adir" decompress adir o2
  expect_fail "too many files" 2 "o3" stats --codec none --dtype f32 good.f32 o3
  if [ "$(id -u)" != 0 ]; then  # root reads any file
    cp good.f32 noread.f32 && chmod 000 noread.f32
    expect_fail "unreadable input" 2 "noread.f32" compress --codec none --dtype f32 noread.f32 o1
  fi
  # The data, the frame, the file system: exit 1.
  expect_fail "size not a multiple of f32" 1 "" compress --codec none --dtype f32 odd.f32 o1
  expect_fail "size not a multiple of f64" 1 "" stats --codec none --dtype f64 odd.f32
  expect_fail "unwritable output" 1 "" compress --codec none --dtype f32 good.f32 nodir/out.hcf
  expect_fail "decompress raw data" 1 "" decompress good.f32 o2
  expect_fail "decompress empty file" 1 "" decompress empty.hcf o2
  expect_fail "decompress header-only fragment" 1 "" decompress short.hcf o2
  expect_fail "decompress truncated frame" 1 "" decompress trunc.hcf o2
  expect_fail "decompress flipped payload byte" 1 "" decompress flip.hcf o2
  expect_fail "decompress flipped header byte" 1 "" decompress head.hcf o2
  expect_fail "decompress foreign bytes" 1 "" decompress foreign.hcf o2
  expect_fail "decompress with the wrong --dtype" 1 "" decompress --dtype f64 good.hcf o2
  expect_fail "decompress with the wrong --codec" 1 "" decompress --codec zfp:8 good.hcf o2
  expect_fail "decompress above --max-output" 1 "--max-output" decompress --max-output 3999 good.hcf o2
  [ -e o1 ] && die "a failed compress created its output"
  [ -e o2 ] && die "a failed decompress created its output"
  # a failed decompress must not destroy an existing OUT (atomic write)
  echo "precious" > keep.txt
  expect_fail "decompress corrupt frame over an existing file" 1 "" decompress flip.hcf keep.txt
  [ "$(cat keep.txt)" = precious ] || die "failed decompress damaged the existing output file"
  ls | grep -q '\.tmp\.' && die "temporary files left behind"
  echo "ok: $n bad inputs rejected with one-line messages"
  ;;
huge)
  # Frames whose sealed header announces far more values than their payload can hold: each is
  # refused as corrupt_frame (exit 1, one line naming the count) before anything is sized by
  # the count -- under ASan without allocator_may_return_null too, where an attempt to
  # allocate 2^40 values aborts the run.
  EDIT=$1
  for DT in f32 f64; do
    gen in.$DT $DT 1000 smooth
    "$PY" -c "open('zero.$DT','wb').write(bytes(65536 * (4 if '$DT' == 'f32' else 8)))"
    for CODEC in none mpc mpc:1 zfp:3 zfp:8 zfp:64; do
      "$TOOL" compress --codec "$CODEC" --dtype $DT in.$DT f.hcf || die "setup compress $CODEC $DT"
      for count in 2000 1048576 1099511627776 288230376151711743 288230376151711744 \
                   9223372036854775808 18446744073709551615; do
        "$EDIT" f.hcf e.hcf count=$count || die "frame_edit"
        "$TOOL" decompress e.hcf e.out > out.txt 2> err.txt
        rc=$?
        [ $rc = 1 ] || die "$CODEC $DT count $count: exit $rc, expected 1: $(cat err.txt)"
        [ "$(wc -l < err.txt)" = 1 ] || die "$CODEC $DT count $count: stderr is not one line: $(cat err.txt)"
        # (a count the payload could hold is refused by the codec's own checks, in its words)
        if [ ${#count} -le 4 ]; then named=""; else named=".*$count"; fi
        grep -q "^hcomm-codec: corrupt_frame: $named" err.txt ||
          die "$CODEC $DT count $count: not a corrupt_frame naming the count: $(cat err.txt)"
        [ -e e.out ] && die "$CODEC $DT count $count: output created"
      done
      echo "  $CODEC $DT: forged counts refused: $(cat err.txt)"
      # Payload size edited down with the bytes still there: the frame is longer than it says.
      "$EDIT" f.hcf e.hcf payload_bytes=8 count=1099511627776 || die "frame_edit"
      "$TOOL" decompress e.hcf e.out 2> err.txt && die "$CODEC $DT: 8-byte payload for 2^40 values accepted"
    done
    # The bound is tight, not a guess: all-zero MPC input compresses to exactly the least
    # payload, and decodes; one group of values more than it can hold is refused.
    "$TOOL" compress --codec mpc --dtype $DT zero.$DT z.hcf || die "compress zeros"
    "$TOOL" decompress z.hcf z.out || die "decompress of all-zero MPC frame at the least payload"
    cmp zero.$DT z.out || die "all-zero MPC round trip differs"
    W=32; [ $DT = f64 ] && W=64
    "$EDIT" z.hcf e.hcf count=$((65536 + W)) || die "frame_edit"
    "$TOOL" decompress e.hcf e.out 2> err.txt && die "MPC $DT: $((65536 + W)) values in a frame for 65536 accepted"
    grep -q "^hcomm-codec: corrupt_frame: frame announces $((65536 + W)) values" err.txt || die "MPC $DT: $(cat err.txt)"
    # A valid frame above --max-output is refused before allocation, with the option named.
    "$TOOL" decompress --max-output 1K z.hcf e.out 2> err.txt && die "--max-output 1K accepted a larger frame"
    grep -q "^hcomm-codec: invalid_argument: .*(--max-output)" err.txt || die "--max-output: $(cat err.txt)"
    "$TOOL" decompress --max-output $((65536 * W / 8)) z.hcf e.out || die "--max-output equal to the output refused"
    rm -f e.out
  done
  ls | grep -q '\.tmp\.' && die "temporary files left behind"
  echo "ok: forged element counts refused before allocation"
  ;;
device)
  # --device cuda: in a build without CUDA, or without a usable device, every command exits 3
  # with one line saying why, writes nothing and creates no OUT; with a GPU, the device writes
  # the host's frames and decodes them to the host's values.
  CUDA=$1
  gen in.f32 f32 70001 smooth
  "$TOOL" compress --codec mpc --dtype f32 in.f32 host.hcf || die "host compress"
  "$TOOL" stats --device cpu --codec mpc --dtype f32 --reps 1 in.f32 > cpu.json || die "stats --device cpu"
  json_check cpu.json "j['device'] == 'cpu'"
  "$TOOL" compress --device cuda --codec mpc --dtype f32 in.f32 dev.hcf > out.txt 2> err.txt
  rc=$?
  if [ $rc = 3 ]; then
    if [ "$CUDA" = ON ]; then want='^hcomm-codec: --device cuda: no CUDA device: .'; else
      want='^hcomm-codec: --device cuda: built without CUDA'; fi
    for cmd in "compress --codec mpc --dtype f32 in.f32 dev.hcf" "decompress host.hcf dev.out" \
               "stats --codec zfp:8 --dtype f32 in.f32"; do
      # shellcheck disable=SC2086
      "$TOOL" $cmd --device cuda > out.txt 2> err.txt
      rc=$?
      [ $rc = 3 ] || die "$cmd --device cuda: exit $rc, expected 3: $(cat err.txt)"
      [ "$(wc -l < err.txt)" = 1 ] || die "$cmd --device cuda: stderr is not one line: $(cat err.txt)"
      grep -q "$want" err.txt || die "$cmd --device cuda: the line does not match '$want': $(cat err.txt)"
      [ -s out.txt ] && die "$cmd --device cuda: wrote to stdout"
      echo "  $cmd --device cuda -> 3: $(cat err.txt)"
    done
    [ -e dev.hcf ] || [ -e dev.out ] && die "--device cuda without a device created an output"
    "$TOOL" --help | grep -q '3 --device cuda without a usable CUDA' || die "--help lacks exit status 3"
    echo "ok: --device cuda without a device exits 3 with one line"
  elif [ $rc = 0 ] && [ "$CUDA" = ON ]; then
    for CODEC in none mpc zfp:8 bf16 int8; do
      "$TOOL" compress --codec "$CODEC" --dtype f32 in.f32 h.hcf || die "host compress $CODEC"
      "$TOOL" compress --device cuda --codec "$CODEC" --dtype f32 in.f32 d.hcf || die "device compress $CODEC"
      cmp h.hcf d.hcf || die "$CODEC: the device's frame differs from the host's"
      "$TOOL" decompress h.hcf h.out && "$TOOL" decompress --device cuda h.hcf d.out || die "decompress $CODEC"
      cmp h.out d.out || die "$CODEC: the device decodes other values than the host"
      "$TOOL" stats --device cuda --codec "$CODEC" --dtype f32 --reps 2 in.f32 > d.json || die "stats $CODEC"
      json_check d.json "j['device'] == 'cuda' and j['compress_gbps'] > 0 and j['decompress_gbps'] > 0"
    done
    cp host.hcf flip.hcf && printf '\xff' | dd of=flip.hcf bs=1 seek=2000 conv=notrunc status=none
    "$TOOL" decompress --device cuda flip.hcf f.out 2> err.txt && die "device decoded a corrupt frame"
    grep -q '^hcomm-codec: corrupt_frame' err.txt || die "corrupt frame on the device: $(cat err.txt)"
    echo "ok: --device cuda writes the host's frames and values"
  else
    die "compress --device cuda: exit $rc (CUDA=$CUDA): $(cat err.txt)"
  fi
  ;;
*) die "unknown test $WHAT" ;;
esac
