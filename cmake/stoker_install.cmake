# `cmake --install <build> --prefix P`: the C++ package.
#
#   P/include/stoker/*.h                      the public API (nothing from src/)
#   P/lib/libstoker_*.a                       the engine's static libraries
#   P/lib/cmake/stoker/stokerConfig.cmake     find_package(stoker CONFIG)
#   P/lib/cmake/stoker/stokerConfigVersion.cmake, stokerTargets*.cmake
#   P/bin/stoker                              the CLI
#   P/share/stoker/{bench,tools}/*.py         the scripts the CLI runs (<bin>/../share/stoker)
#
# A consumer writes find_package(stoker CONFIG REQUIRED) and links stoker::stoker
# (everything) or one library (stoker::stoker_pipeline, ...). stokerConfig.cmake
# finds the system libraries the static libraries need (cmake/stokerConfig.cmake.in).
# Tests, the testing library, fuzzers, benchmarks and the Python module are not installed
# (the Python package is setup.py's). Tested by ctest's cpp_find_package_consumer
# (scripts/consumer_test.sh).
include(CMakePackageConfigHelpers)

# The libraries of the `stoker` INTERFACE target (src/CMakeLists.txt), all of them: an
# installed target linking one not listed here fails at generate time ("requires target
# ... that is not in any export set").
set(STOKER_INSTALLED_LIBRARIES
    stoker stoker_base stoker_trace stoker_codec stoker_ops stoker_source stoker_hdf5 stoker_targets stoker_shards
    stoker_program stoker_pipeline stoker_synth stoker_diagnose stoker_device stoker_shard_writer
    stoker_convert stoker_stats stoker_video)
set(STOKER_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/stoker)

install(TARGETS ${STOKER_INSTALLED_LIBRARIES} EXPORT stokerTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/stoker DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(EXPORT stokerTargets NAMESPACE stoker:: DESTINATION ${STOKER_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/stokerConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/stokerConfig.cmake
                              INSTALL_DESTINATION ${STOKER_CMAKE_DIR})
# 0.x: a minor version may break the API, so only the same MAJOR.MINOR is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/stokerConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/stokerConfig.cmake
              ${PROJECT_BINARY_DIR}/stokerConfigVersion.cmake
        DESTINATION ${STOKER_CMAKE_DIR})

# The CLI and the scripts it runs, laid out as in the build tree (tools/CMakeLists.txt):
# the binary looks for them in <bin>/../share/stoker.
install(TARGETS stoker_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_BINARY_DIR}/share/stoker/bench ${PROJECT_BINARY_DIR}/share/stoker/tools
        DESTINATION ${CMAKE_INSTALL_DATADIR}/stoker)

# The package from a consumer's side: install into a temporary prefix, build examples/ as a
# project of its own against it, run it (scripts/consumer_test.sh). Not in sanitizer or
# fuzzer builds: their libraries need the sanitizer runtime at link time.
if(STOKER_BUILD_TESTS AND STOKER_SANITIZE STREQUAL "" AND NOT STOKER_BUILD_FUZZERS)
  add_test(NAME cpp_find_package_consumer
           COMMAND ${PROJECT_SOURCE_DIR}/scripts/consumer_test.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(cpp_find_package_consumer PROPERTIES LABELS "cpp;package" TIMEOUT 600
                       ENVIRONMENT "CMAKE_GENERATOR=${CMAKE_GENERATOR};CXX=${CMAKE_CXX_COMPILER}")
endif()
