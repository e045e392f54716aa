# The test registry's one function (included by the top-level CMakeLists.txt when
# tests or examples are built). Every test of the project is registered through it,
# so every test follows the same conventions:
#
# vkcuda_add_test(<name> <cpu|gpu|sanitizer|bench> COMMAND <cmd> <arg>...
#                 [LABELS <label>...] [ENV <var=value>...] [TIMEOUT <s>]
#                 [PASS <regex>] [FAIL <regex>] [SETUP <fixture>] [NEEDS <fixture>...]
#                 [LOCK <resource>...] [WORKING_DIRECTORY <dir>]
#                 [VVL] [VVL_COMMAND <cmd> <arg>...] [VVL_FAIL <regex>] [ALONE])
#   The kind is the test's first label: `cpu` runs on any machine (lavapipe is
#   enough; scripts/test.sh runs `ctest -L cpu`), `gpu` needs a CUDA GPU paired
#   with a Vulkan device (scripts/gpu-test.sh: `ctest -L gpu`), `sanitizer` is the
#   GPU hardening run (compute-sanitizer, leak and thread checks: `ctest -L
#   sanitizer`), `bench` the long benchmark. gpu and sanitizer tests run with
#   VKCUDA_REQUIRE_GPU=1: no GPU is then a failure, not a skip.
#   Skips: a test that cannot run here prints `SKIPPED: <name>: <why>` and exits 77
#   (SKIP_RETURN_CODE): CTest reports it as skipped.
#   VVL: also registers <name>_vvl (labels <kind>;vvl), the same test (or
#   VVL_COMMAND) under VK_LAYER_KHRONOS_validation with synchronization
#   validation; any message of the layer fails it (FAIL_REGULAR_EXPRESSION, or
#   VVL_FAIL). It needs the fixture vvl_layer: the canary test that proves the
#   layer is loaded and reports a deliberate hazard (tests/CMakeLists.txt).
#   ALONE (and every bench test): RUN_SERIAL, so `ctest -j N` runs nothing beside
#   it, and the label `alone` (`ctest -L '^gpu$' -L '^alone$'` runs only these: one call
#   for them, another for the rest with `-LE '^alone$' -j 4`). For tests that read device-wide figures another process on the GPU moves:
#   cuMemGetInfo's free memory before and after (leak checks) and timings. (Seen on
#   the H200 under `ctest -j 4`: free memory +57 MB and -64 KiB mid-check, from the
#   other tests' processes.)
#
# The validation layer: the system's (Debian's vulkan-validationlayers), or with
# VKCUDA_VVL_DIR the root of an unpacked layer package (the GPU machine's, which
# scripts/gpu-test.sh unpacks into .dev/vvl).
set(VKCUDA_VVL_DIR "" CACHE PATH
  "Root of an unpacked Vulkan validation layer package (default: the system's layer)")
set(VKCUDA_VVL_ENV VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation VK_LAYER_VALIDATE_SYNC=1)
set(VKCUDA_VVL_ENV_MODIFICATION "")
if(VKCUDA_VVL_DIR)
  get_filename_component(_vkcuda_vvl "${VKCUDA_VVL_DIR}" ABSOLUTE)
  list(APPEND VKCUDA_VVL_ENV "VK_LAYER_PATH=${_vkcuda_vvl}/usr/share/vulkan/explicit_layer.d"
    VK_LOADER_DEBUG=error)
  set(VKCUDA_VVL_ENV_MODIFICATION
    "LD_LIBRARY_PATH=path_list_prepend:${_vkcuda_vvl}/usr/lib/x86_64-linux-gnu")
else()
  # Debian 12's layer (1.3.239) reads VK_LAYER_ENABLES; newer ones VK_LAYER_VALIDATE_SYNC
  # (and warn about the older spelling).
  list(APPEND VKCUDA_VVL_ENV
    VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT)
endif()
# The layer's messages ("Validation Error: [ VUID-..." / "[ SYNC-HAZARD-..."), not a
# VUID that the library's own error message names.
set(VKCUDA_VVL_FAIL "Validation Error|\\[ VUID-")

function(_vkcuda_test_properties name labels env timeout pass fail setup needs locks envmod)
  set_tests_properties(${name} PROPERTIES LABELS "${labels}" TIMEOUT ${timeout}
    SKIP_RETURN_CODE 77)
  if(env)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${env}")
  endif()
  if(envmod)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT_MODIFICATION "${envmod}")
  endif()
  if(pass)
    set_tests_properties(${name} PROPERTIES PASS_REGULAR_EXPRESSION "${pass}")
  endif()
  if(fail)
    set_tests_properties(${name} PROPERTIES FAIL_REGULAR_EXPRESSION "${fail}")
  endif()
  if(setup)
    set_tests_properties(${name} PROPERTIES FIXTURES_SETUP "${setup}")
  endif()
  if(needs)
    set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED "${needs}")
  endif()
  if(locks)
    set_tests_properties(${name} PROPERTIES RESOURCE_LOCK "${locks}")
  endif()
endfunction()

# vkcuda_watchdog_env(<out> <timeout>): in <out>, VKCUDA_TEST_WATCHDOG_S=<timeout - 15>
# for a GPU test's environment (nothing for a limit of 30 s or less): a Rust test process
# still running then prints where each of its threads is and aborts
# (tests/support/watchdog.rs), instead of a bare Timeout.
function(vkcuda_watchdog_env out timeout)
  set(v "")
  if(timeout GREATER 30)
    math(EXPR s "${timeout} - 15")
    set(v VKCUDA_TEST_WATCHDOG_S=${s})
  endif()
  set(${out} "${v}" PARENT_SCOPE)
endfunction()

# vkcuda_run_alone(<test>): nothing runs beside <test> (RUN_SERIAL); labelled `alone`.
function(vkcuda_run_alone name)
  set_tests_properties(${name} PROPERTIES RUN_SERIAL TRUE)
  set_property(TEST ${name} APPEND PROPERTY LABELS alone)
endfunction()

function(vkcuda_add_test name kind)
  cmake_parse_arguments(PARSE_ARGV 2 T "VVL;ALONE" "TIMEOUT;PASS;FAIL;SETUP;WORKING_DIRECTORY;VVL_FAIL"
    "COMMAND;LABELS;ENV;NEEDS;LOCK;VVL_COMMAND")
  if(NOT VKCUDA_BUILD_TESTS)
    return()
  endif()
  if(NOT kind MATCHES "^(cpu|gpu|sanitizer|bench)$")
    message(FATAL_ERROR "vkcuda_add_test(${name}): the kind is cpu, gpu, sanitizer or bench, not '${kind}'")
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set(env ${T_ENV})
  if(NOT kind STREQUAL cpu)
    list(APPEND env VKCUDA_REQUIRE_GPU=1)
    vkcuda_watchdog_env(_watchdog ${T_TIMEOUT})
    list(APPEND env ${_watchdog})
  endif()
  set(wd "")
  if(T_WORKING_DIRECTORY)
    set(wd WORKING_DIRECTORY "${T_WORKING_DIRECTORY}")
  endif()
  add_test(NAME ${name} COMMAND ${T_COMMAND} ${wd})
  _vkcuda_test_properties(${name} "${kind};${T_LABELS}" "${env}" ${T_TIMEOUT} "${T_PASS}"
    "${T_FAIL}" "${T_SETUP}" "${T_NEEDS}" "${T_LOCK}" "")
  if(kind STREQUAL bench)
    set(T_ALONE TRUE)
  endif()
  if(T_ALONE)
    vkcuda_run_alone(${name})
  endif()
  if(T_VVL OR T_VVL_COMMAND)
    if(NOT T_VVL_COMMAND)
      set(T_VVL_COMMAND ${T_COMMAND})
    endif()
    if(NOT T_VVL_FAIL)
      set(T_VVL_FAIL "${VKCUDA_VVL_FAIL}")
    endif()
    if(T_FAIL)
      set(T_VVL_FAIL "${T_VVL_FAIL}|${T_FAIL}")
    endif()
    set(vvl_env ${env} ${VKCUDA_VVL_ENV})
    add_test(NAME ${name}_vvl COMMAND ${T_VVL_COMMAND} ${wd})
    _vkcuda_test_properties(${name}_vvl "${kind};vvl;${T_LABELS}" "${vvl_env}"
      ${T_TIMEOUT} "${T_PASS}" "${T_VVL_FAIL}" "" "vvl_layer;${T_NEEDS}" "${T_LOCK}"
      "${VKCUDA_VVL_ENV_MODIFICATION}")
    if(T_ALONE)
      vkcuda_run_alone(${name}_vvl)
    endif()
  endif()
endfunction()

# vkcuda_add_sanitizer_tests(<name> [ALONE] COMMAND <cmd> <arg>...): <name>_racecheck and
# <name>_memcheck (label sanitizer): the command under compute-sanitizer's racecheck
# and memcheck (--leak-check full), every child process instrumented; any error fails.
# ALONE: both run with nothing beside them (RUN_SERIAL), for programs seen to hang
# when several compute-sanitizer processes share the GPU (see its callers).
find_program(VKCUDA_COMPUTE_SANITIZER compute-sanitizer HINTS /usr/local/cuda/bin
  DOC "compute-sanitizer (CUDA toolkit), for the tests labelled sanitizer")
mark_as_advanced(VKCUDA_COMPUTE_SANITIZER)
set(VKCUDA_SANITIZER "${VKCUDA_COMPUTE_SANITIZER}")
if(NOT VKCUDA_SANITIZER)
  set(VKCUDA_SANITIZER compute-sanitizer) # not here: the test fails saying so
endif()
function(vkcuda_add_sanitizer_tests name)
  cmake_parse_arguments(PARSE_ARGV 1 S "ALONE" "" "COMMAND")
  set(alone "")
  if(S_ALONE)
    set(alone ALONE)
  endif()
  foreach(tool racecheck memcheck)
    set(extra "")
    if(tool STREQUAL memcheck)
      set(extra --leak-check full)
    endif()
    vkcuda_add_test(${name}_${tool} sanitizer TIMEOUT 150 ${alone}
      COMMAND "${VKCUDA_SANITIZER}" --tool ${tool} ${extra} --target-processes all
              --error-exitcode 1 ${S_COMMAND})
  endforeach()
endfunction()

# Where tests write what a person looks at afterwards (PNGs, CSVs, doctor.json).
set(VKCUDA_TEST_OUTPUT_DIR "${PROJECT_BINARY_DIR}/test-out" CACHE PATH
  "Where the tests write their PNGs, CSVs and JSON")
file(MAKE_DIRECTORY "${VKCUDA_TEST_OUTPUT_DIR}")
