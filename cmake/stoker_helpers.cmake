# stoker_cc_library(NAME name SRCS ... DEPS ...): a static library of the
# engine, compiled with the project's warnings and position-independent (it
# ends up in the Python module too).
function(stoker_cc_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_library(${ARG_NAME} STATIC ${ARG_SRCS})
  target_include_directories(${ARG_NAME} PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${ARG_NAME} PUBLIC ${ARG_DEPS})
  foreach(flag ${STOKER_WARNINGS})  # C++ sources only: nvcc takes other flags
    target_compile_options(${ARG_NAME} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${flag}>)
  endforeach()
  set_target_properties(${ARG_NAME} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()

# stoker_cc_test(NAME name SRCS ... DEPS ... [LABELS ...]): a GoogleTest
# binary registered with ctest, one ctest entry per test case.
function(stoker_cc_test)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS;LABELS" ${ARGN})
  if(NOT STOKER_BUILD_TESTS)
    return()
  endif()
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  target_compile_options(${ARG_NAME} PRIVATE ${STOKER_WARNINGS})
  gtest_discover_tests(${ARG_NAME} PROPERTIES LABELS "cpp;${ARG_LABELS}" DISCOVERY_TIMEOUT 60)
endfunction()
