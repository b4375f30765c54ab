# Test helpers shared by every folder. Labels: unit, integration, e2e, python.
#
#   korovod_unit_test(NAME name SOURCES a.cc b.cc LIBS lib...)
#       a GoogleTest binary; each TEST() becomes a ctest entry labelled `unit`.
#   korovod_process_test(NAME name SOURCES a.cc b.cc LIBS lib...)
#       the same for GoogleTest cases that start real processes (one ctest entry per TEST(),
#       labelled `integration`): they live with the integration tests, not beside the code.
#   korovod_cluster_test(NAME name SOURCES ... LIBS ... [TIMEOUT s])
#       a GoogleTest binary run once as one ctest entry labelled `integration`, against the real
#       control plane started by the `kube_cluster` fixture (tests/cluster/testcluster);
#       KUBECONFIG and KOROVOD_TESTCLUSTER_DIR are set for it.
#   korovod_mpi_test(NAME name NP n COMMAND exe args... [LABEL l] [TIMEOUT s])
#       runs `mpirun -np n --oversubscribe exe args` as one ctest entry (default label integration).
#   Test binaries have tests/support on their include path (free_port.h: a port for a server a
#   test starts).
#   korovod_tests_left_out(WHY why TESTS name...)
#       notes tests this configuration does not register (no MPI, no operator); the top
#       CMakeLists.txt prints them in one STATUS line per reason after every folder is read.

set(KOROVOD_TESTCLUSTER_DIR ${CMAKE_BINARY_DIR}/testcluster)
# Why korovod_tests_left_out drops the tests that need MPI (no korovod_mpi target); no ";" in a
# reason (a CMake list separator).
set(KOROVOD_NO_MPI_WHY "no MPI found: they run under mpirun or load libkorovod_mpi.so, install MPI: scripts/setup")

# A GoogleTest binary whose TEST()s become ctest entries <name>.<Suite>.<Test> labelled `label`.
function(_korovod_gtest name label)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main korovod_warnings)
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests/support)  # free_port.h
  gtest_discover_tests(${name} TEST_PREFIX "${name}." PROPERTIES LABELS ${label} TIMEOUT 120
                       DISCOVERY_TIMEOUT 60)
endfunction()

function(korovod_unit_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;LIBS" ${ARGN})
  _korovod_gtest(${T_NAME} unit SOURCES ${T_SOURCES} LIBS ${T_LIBS})
endfunction()

function(korovod_process_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;LIBS" ${ARGN})
  _korovod_gtest(${T_NAME} integration SOURCES ${T_SOURCES} LIBS ${T_LIBS})
endfunction()

# Timeouts are sized for the plain build; sanitized programs are slower (TSan most: rt_tcp_np2
# took 59 s of its 60 under TSan on the loaded 2-core machine; under ASan kube_integration_test
# and operator_integration_test ran past 300 s and 600 s, scripts/sanitize).
macro(_korovod_sanitized_timeout var)
  if(KOROVOD_SANITIZE_THREAD)
    math(EXPR ${var} "${${var}} * 4")
  elseif(KOROVOD_SANITIZE)
    math(EXPR ${var} "${${var}} * 2")
  endif()
endmacro()

function(korovod_cluster_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  _korovod_sanitized_timeout(T_TIMEOUT)
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main korovod_warnings)
  target_include_directories(${T_NAME} PRIVATE ${CMAKE_SOURCE_DIR}/tests/support)  # free_port.h
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} --gtest_color=no)
  set_tests_properties(${T_NAME} PROPERTIES
    LABELS integration TIMEOUT ${T_TIMEOUT} FIXTURES_REQUIRED kube_cluster
    ENVIRONMENT "KUBECONFIG=${KOROVOD_TESTCLUSTER_DIR}/kubeconfig;KOROVOD_TESTCLUSTER_DIR=${KOROVOD_TESTCLUSTER_DIR};KOROVOD_BIN_DIR=${CMAKE_BINARY_DIR}/bin;KOROVOD_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
endfunction()

function(korovod_tests_left_out)
  cmake_parse_arguments(T "" "WHY" "TESTS" ${ARGN})
  get_property(reasons GLOBAL PROPERTY KOROVOD_TESTS_LEFT_OUT_REASONS)
  list(FIND reasons "${T_WHY}" index)
  if(index EQUAL -1)  # a new reason: the next index
    list(LENGTH reasons index)
    set_property(GLOBAL APPEND PROPERTY KOROVOD_TESTS_LEFT_OUT_REASONS "${T_WHY}")
  endif()
  set_property(GLOBAL APPEND PROPERTY KOROVOD_TESTS_LEFT_OUT_${index} ${T_TESTS})
endfunction()

# Once, from the top CMakeLists.txt: one line per reason, naming the tests left out.
function(korovod_report_tests_left_out)
  get_property(reasons GLOBAL PROPERTY KOROVOD_TESTS_LEFT_OUT_REASONS)
  set(index 0)
  foreach(why IN LISTS reasons)
    get_property(tests GLOBAL PROPERTY KOROVOD_TESTS_LEFT_OUT_${index})
    list(JOIN tests " " tests)
    message(STATUS "korovod tests left out (${why}): ${tests}")
    math(EXPR index "${index} + 1")
  endforeach()
endfunction()

# A test that must print a line matching a regex runs under tests/expect-output, which also
# requires exit 0 and no sanitizer report (never PASS_REGULAR_EXPRESSION alone: ctest then
# ignores the exit code). tests.expect_output_selftest proves it.
set(KOROVOD_EXPECT_OUTPUT ${CMAKE_SOURCE_DIR}/tests/expect-output)

find_program(KOROVOD_MPIEXEC NAMES mpirun mpiexec)
# EXPECT_OUTPUT REGEX: see KOROVOD_EXPECT_OUTPUT.
function(korovod_mpi_test)
  cmake_parse_arguments(T "" "NAME;NP;LABEL;TIMEOUT;EXPECT_OUTPUT" "COMMAND" ${ARGN})
  if(NOT T_LABEL)
    set(T_LABEL integration)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  _korovod_sanitized_timeout(T_TIMEOUT)
  set(wrapper)
  if(T_EXPECT_OUTPUT)
    set(wrapper ${KOROVOD_EXPECT_OUTPUT} ${T_EXPECT_OUTPUT} --)
  endif()
  add_test(NAME ${T_NAME}
           COMMAND ${wrapper} ${KOROVOD_MPIEXEC} -np ${T_NP} --oversubscribe --bind-to none
                   --mca btl self,vader,tcp --mca btl_tcp_if_include lo ${T_COMMAND})
  set_tests_properties(${T_NAME} PROPERTIES LABELS ${T_LABEL} TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1")
endfunction()
