# cerar_library(<target> <export name>): what every installed CERAR library shares.
#
# - Exported as cerar::<export name> (also an alias in this build, so in-tree code and consumers
#   spell targets the same way).
# - Shared builds (BUILD_SHARED_LIBS=ON): SONAME libcerar_<x>.so.<SOVERSION>, where SOVERSION is
#   major.minor while the major version is 0 (every 0.x release may break the ABI) and the major
#   version from 1.0 on; the exported symbols are exactly the namespace cerar (cmake/cerar.map: no
#   Eigen, nlohmann or standard-library template instantiations leak out); installed files find
#   their sibling libraries through RUNPATH $ORIGIN, never through the build tree.
# - Static builds: position-independent (CMAKE_POSITION_INDEPENDENT_CODE, so a static library can
#   go into a Python extension or another shared object) with hidden visibility, so such a shared
#   object does not re-export CERAR's symbols.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(CERAR_SOVERSION "${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}")
else()
  set(CERAR_SOVERSION "${PROJECT_VERSION_MAJOR}")
endif()
set(CERAR_EXPORT_MAP "${CMAKE_CURRENT_LIST_DIR}/cerar.map")

function(cerar_library target export_name)
  add_library(cerar::${export_name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES
    EXPORT_NAME ${export_name}
    VERSION ${PROJECT_VERSION}
    SOVERSION ${CERAR_SOVERSION}
    VISIBILITY_INLINES_HIDDEN ON)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "SHARED_LIBRARY")
    target_link_options(${target} PRIVATE "LINKER:--version-script=${CERAR_EXPORT_MAP}")
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${CERAR_EXPORT_MAP})
    set_target_properties(${target} PROPERTIES INSTALL_RPATH "$ORIGIN")
  else()
    set_target_properties(${target} PROPERTIES CXX_VISIBILITY_PRESET hidden
                                               CUDA_VISIBILITY_PRESET hidden)
  endif()
  set_property(GLOBAL APPEND PROPERTY CERAR_LIBRARIES ${target})
endfunction()
