# Installs the hcomm build tree into a fresh prefix, then configures, builds and runs the
# consumer project against that prefix only (cmake -P; see tests/consumer/CMakeLists.txt).
#   -DBUILD_DIR= -DSOURCE= -DWORK= -DGENERATOR= -DCXX=
foreach(v BUILD_DIR SOURCE WORK GENERATOR CXX)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_consumer.cmake: -D${v}=... is required")
  endif()
endforeach()

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("== ${what}\n${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer test: ${what} failed (exit ${rc})")
  endif()
endfunction()

file(REMOVE_RECURSE "${WORK}")
set(prefix "${WORK}/prefix")
# Installs everything the build installs, so the tree must be fully built (cmake --build)
# first, as for every other test; a missing installed program fails here with its path.
run("install hcomm to ${prefix}" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")
if(NOT EXISTS "${prefix}/include/hcomm/core/config.hpp")
  message(FATAL_ERROR "consumer test: the install has no generated hcomm/core/config.hpp")
endif()
# No package registry and no source tree on the search path: only the prefix can satisfy it.
run("configure consumer" "${CMAKE_COMMAND}" -S "${SOURCE}" -B "${WORK}/build" -G "${GENERATOR}"
    "-DCMAKE_CXX_COMPILER=${CXX}" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}"
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "-DHCOMM_EXPECT_PREFIX=${prefix}")
run("build consumer" "${CMAKE_COMMAND}" --build "${WORK}/build")
run("run consumer" "${WORK}/build/consumer")
