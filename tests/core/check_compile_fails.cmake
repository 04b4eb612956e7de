# Must-not-compile test driver (cmake -P). Compiles SRC with -fsyntax-only and passes only if
# the compiler rejects it AND its output matches the regex on SRC's "// expect: " line, so a
# case cannot pass by failing for an unrelated reason (a typo, a missing include path).
# With -DMODE=pass it instead requires SRC to compile (the harness control).
#   cmake -DCXX=g++ -DSRC=file.cpp -DINC1=include -DINC2=generated [-DMODE=pass] -P this.cmake
foreach(v CXX SRC INC1 INC2)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_compile_fails.cmake: -D${v}=... is required")
  endif()
endforeach()

execute_process(COMMAND "${CXX}" -std=c++20 -fsyntax-only "-I${INC1}" "-I${INC2}" "${SRC}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)

if(MODE STREQUAL "pass")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "FAIL: ${SRC} must compile but the compiler said (exit ${rc}):\n${out}")
  endif()
  message(STATUS "OK: ${SRC} compiles")
  return()
endif()

file(STRINGS "${SRC}" expect_lines REGEX "^// expect: ")
list(LENGTH expect_lines n_expect)
if(NOT n_expect EQUAL 1)
  message(FATAL_ERROR "FAIL: ${SRC} needs exactly one '// expect: <regex>' line (found ${n_expect})")
endif()
string(REGEX REPLACE "^// expect: " "" expect "${expect_lines}")

if(rc EQUAL 0)
  message(FATAL_ERROR "FAIL: ${SRC} compiled, but it must be rejected with a message matching: ${expect}")
endif()
if(NOT out MATCHES "${expect}")
  message(FATAL_ERROR "FAIL: ${SRC} was rejected, but not with a message matching '${expect}'. Compiler said:\n${out}")
endif()
message(STATUS "OK: ${SRC} is rejected with: ${CMAKE_MATCH_0}")
