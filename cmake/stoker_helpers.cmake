# stoker_cc_library(NAME name SRCS ... DEPS ...): a static library of the
# engine, compiled with the project's warnings and position-independent (it
# ends up in the Python module too). Its users see include/ (the public API)
# only; src/ is a private include directory (scripts/check_layering.sh).
function(stoker_cc_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_library(${ARG_NAME} STATIC ${ARG_SRCS})
  target_include_directories(${ARG_NAME} PUBLIC ${PROJECT_SOURCE_DIR}/include
                             PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${ARG_NAME} PUBLIC ${ARG_DEPS})
  foreach(flag ${STOKER_WARNINGS})  # C++ sources only: nvcc takes other flags
    target_compile_options(${ARG_NAME} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${flag}>)
  endforeach()
  set_target_properties(${ARG_NAME} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()

# stoker_cc_test(NAME name SRCS ... DEPS ... [LABELS ...] [PREFIX p.]): a GoogleTest
# binary registered with ctest, one ctest entry per test case. Tests of the
# engine's internals see src/ too.
function(stoker_cc_test)
  cmake_parse_arguments(ARG "" "NAME;PREFIX" "SRCS;DEPS;LABELS" ${ARGN})
  if(NOT STOKER_BUILD_TESTS)
    return()
  endif()
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  target_include_directories(${ARG_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(${ARG_NAME} PRIVATE ${STOKER_WARNINGS})
  gtest_discover_tests(${ARG_NAME} TEST_PREFIX "${ARG_PREFIX}"
                       PROPERTIES LABELS "cpp;${ARG_LABELS}" DISCOVERY_TIMEOUT 60)
endfunction()

# stoker_fuzz_regression_test(NAME name TARGET t DEPS ...): fuzz/regression_test.cc
# linked with fuzz/<t>_fuzz.cc, replaying every input kept in fuzz/regressions/<t>.
function(stoker_fuzz_regression_test)
  cmake_parse_arguments(ARG "" "NAME;TARGET" "DEPS" ${ARGN})
  stoker_cc_test(NAME ${ARG_NAME}
                 SRCS ${PROJECT_SOURCE_DIR}/fuzz/regression_test.cc
                      ${PROJECT_SOURCE_DIR}/fuzz/${ARG_TARGET}_fuzz.cc
                 DEPS ${ARG_DEPS} PREFIX "${ARG_TARGET}.")
  if(TARGET ${ARG_NAME})
    target_compile_definitions(${ARG_NAME} PRIVATE STOKER_FUZZ_TARGET="${ARG_TARGET}"
                               STOKER_FUZZ_REGRESSIONS="${PROJECT_SOURCE_DIR}/fuzz/regressions")
  endif()
endfunction()
