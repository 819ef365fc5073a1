# Reads stoker's version from include/stoker/version.h (the one place it is written) into
# STOKER_VERSION ("MAJOR.MINOR.PATCH"), for project(stoker VERSION ${STOKER_VERSION}).
# Editing the header re-runs the configure step.
set(_stoker_version_h ${CMAKE_CURRENT_LIST_DIR}/../include/stoker/version.h)
file(READ ${_stoker_version_h} _stoker_version_text)
set(_stoker_version_parts "")
foreach(_part MAJOR MINOR PATCH)
  if(NOT _stoker_version_text MATCHES "#define STOKER_VERSION_${_part} +([0-9]+)")
    message(FATAL_ERROR "${_stoker_version_h}: no '#define STOKER_VERSION_${_part} N'")
  endif()
  list(APPEND _stoker_version_parts ${CMAKE_MATCH_1})
endforeach()
list(JOIN _stoker_version_parts "." STOKER_VERSION)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_stoker_version_h})
