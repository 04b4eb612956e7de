# tests/codec/extra.cmake: codec tests beyond the Catch2 executables, included by
# tests/codec/CMakeLists.txt. Each block has an owner; add new blocks, do not edit others.

# ===== BEGIN tools/fuzz block: hcomm-codec CLI tests, decoder fuzzing =====================
# CLI: round trips (cmp for lossless codecs, error bounds for the lossy ones: ZFP, bf16,
# int8), stats JSON, bad inputs, --device cuda. Codecs not registered in this build report
# "skipped" (exit 77), not "passed".
if(TARGET hcomm-codec)
  set(_cli ${CMAKE_CURRENT_SOURCE_DIR}/cli_test.sh)
  foreach(dt f32 f64)
    foreach(codec none mpc mpc:1 mpc:4 zfp:4 zfp:8 zfp:16 bf16 int8 int8:64)
      string(REPLACE ":" "_" _cn ${codec})
      add_test(NAME codec_cli_roundtrip_${_cn}_${dt}
               COMMAND bash ${_cli} $<TARGET_FILE:hcomm-codec> ${CMAKE_CURRENT_BINARY_DIR}/cli/rt_${_cn}_${dt}
                       roundtrip ${codec} ${dt})
      add_test(NAME codec_cli_stats_${_cn}_${dt}
               COMMAND bash ${_cli} $<TARGET_FILE:hcomm-codec> ${CMAKE_CURRENT_BINARY_DIR}/cli/st_${_cn}_${dt}
                       stats ${codec} ${dt})
      set_tests_properties(codec_cli_roundtrip_${_cn}_${dt} codec_cli_stats_${_cn}_${dt} PROPERTIES
                           LABELS "codec;cli" SKIP_RETURN_CODE 77 TIMEOUT 300)
    endforeach()
  endforeach()
  add_test(NAME codec_cli_bad_inputs
           COMMAND bash ${_cli} $<TARGET_FILE:hcomm-codec> ${CMAKE_CURRENT_BINARY_DIR}/cli/bad bad)
  set_tests_properties(codec_cli_bad_inputs PROPERTIES LABELS "codec;cli" TIMEOUT 120)
  # Frames whose header forges a huge element count (frame_edit reseals the header).
  add_executable(codec_frame_edit ${CMAKE_CURRENT_SOURCE_DIR}/frame_edit.cpp)
  target_link_libraries(codec_frame_edit PRIVATE hcomm::hcomm)
  add_test(NAME codec_cli_huge_count
           COMMAND bash ${_cli} $<TARGET_FILE:hcomm-codec> ${CMAKE_CURRENT_BINARY_DIR}/cli/huge huge
                   $<TARGET_FILE:codec_frame_edit>)
  set_tests_properties(codec_cli_huge_count PROPERTIES LABELS "codec;cli" TIMEOUT 300)
  # --device cuda: exit 3 and one line without CUDA or a device; the host's bytes with a GPU.
  if(HCOMM_ENABLE_CUDA)
    set(_cuda ON)
  else()
    set(_cuda OFF)
  endif()
  add_test(NAME codec_cli_device
           COMMAND bash ${_cli} $<TARGET_FILE:hcomm-codec> ${CMAKE_CURRENT_BINARY_DIR}/cli/device device ${_cuda})
  set_tests_properties(codec_cli_device PROPERTIES LABELS "codec;cli" TIMEOUT 300)
endif()

# The fuzz target's own driver (any compiler): seeds of every registered codec x dtype plus
# 20000 deterministic mutations; runs in the sanitizer build too (HCOMM_SANITIZE=ON).
add_executable(codec_fuzz_decode_driver ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_decode.cpp)
target_compile_definitions(codec_fuzz_decode_driver PRIVATE HCOMM_FUZZ_STANDALONE)
target_link_libraries(codec_fuzz_decode_driver PRIVATE hcomm::hcomm)
if(TARGET zfp::zfp)
  target_link_libraries(codec_fuzz_decode_driver PRIVATE zfp::zfp)
endif()
add_test(NAME codec_fuzz_mutations COMMAND codec_fuzz_decode_driver --mutate 20000 1)
set_tests_properties(codec_fuzz_mutations PROPERTIES LABELS "codec;fuzz" TIMEOUT 600)

# libFuzzer under ASan+UBSan for a bounded time (scripts/fuzz.sh builds it with clang++).
find_program(HCOMM_CLANGXX NAMES clang++ clang++-14)
if(HCOMM_CLANGXX)
  add_test(NAME codec_fuzz_libfuzzer
           COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/fuzz.sh 20 ${CMAKE_CURRENT_BINARY_DIR}/fuzz)
  set_tests_properties(codec_fuzz_libfuzzer PROPERTIES LABELS "codec;fuzz" SKIP_RETURN_CODE 77 TIMEOUT 600
                       ENVIRONMENT "HCOMM_FUZZ_CXX=${HCOMM_CLANGXX};HCOMM_FUZZ_CXXFLAGS=-I${PROJECT_BINARY_DIR}/generated")
endif()

# With a Clang build and -DHCOMM_FUZZ=ON the fuzzer is also an ordinary build target.
if(HCOMM_FUZZ AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  add_executable(fuzz_decode ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_decode.cpp)
  target_link_libraries(fuzz_decode PRIVATE hcomm::hcomm)
  target_compile_options(fuzz_decode PRIVATE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
  target_link_options(fuzz_decode PRIVATE -fsanitize=fuzzer,address,undefined)
endif()
# ===== END tools/fuzz block ================================================================

# ===== BEGIN zfp block: the baseline (non-AVX2) variant of the ZFP kernels ================
# On an AVX2 host the ZFP group kernels run their AVX2 variant (the batch coders);
# HCOMM_FORCE_PORTABLE=1 (hcomm/core/cpu_features.hpp) forces the portable one (the
# block-at-a-time coders, as on CUDA), so that both are checked against libzfp bit for bit.
# The first case checks that the variable really switches the path.
if(TARGET codec_zfp)
  foreach(_case "zfp group kernels take the portable path when forced"
                "zfp f32 stream and decode are libzfp's, bit for bit"
                "zfp decodes arbitrary stream bits exactly as libzfp does"
                "zfp every rate 3..64 matches libzfp on mixed data")
    string(REGEX REPLACE "[^a-z0-9]+" "_" _cn "${_case}")
    string(REPLACE "," "\\," _spec "${_case}")  # Catch2 reads a bare comma as "or"
    add_test(NAME codec_zfp_baseline_isa_${_cn} COMMAND codec_zfp "${_spec}")
    set_tests_properties(codec_zfp_baseline_isa_${_cn} PROPERTIES LABELS codec TIMEOUT 600
                         ENVIRONMENT "HCOMM_FORCE_PORTABLE=1")
  endforeach()
endif()
# ===== END zfp block ======================================================================

# ===== BEGIN dtype16 block: hcomm-codec round trips of bf16 and f16 files =================
if(TARGET hcomm-codec)
  foreach(dt bf16 f16)
    foreach(codec none mpc mpc:1 zfp:8 zfp:16)
      string(REPLACE ":" "_" _cn ${codec})
      add_test(NAME codec_cli_roundtrip_${_cn}_${dt}
               COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_test.sh $<TARGET_FILE:hcomm-codec>
                       ${CMAKE_CURRENT_BINARY_DIR}/cli/rt_${_cn}_${dt} roundtrip ${codec} ${dt})
      set_tests_properties(codec_cli_roundtrip_${_cn}_${dt} PROPERTIES LABELS "codec;cli" SKIP_RETURN_CODE 77
                           TIMEOUT 300)
    endforeach()
  endforeach()
endif()
# ===== END dtype16 block ==================================================================
