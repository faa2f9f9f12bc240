# install(): the libraries (exported as cerar::<name>, see CerarLibrary.cmake), their public
# headers, the design catalogue, the package files for find_package(cerar) and, where built, the
# `cerar` command-line tool and the Python package.
#
#   cmake --install build --prefix /opt/cerar
#   find_package(cerar 0.1 REQUIRED COMPONENTS runtime_mpi)   # in a consumer
#   target_link_libraries(app PRIVATE cerar::runtime_mpi)
#
# Components: format, runtime, design (the toolkit; Boost and NLopt at build time only),
# runtime_mpi, runtime_cuda, runtime_cuda_mpi; only those this build made are installed.
include(CMakePackageConfigHelpers)

get_property(cerar_libraries GLOBAL PROPERTY CERAR_LIBRARIES)
install(TARGETS ${cerar_libraries} EXPORT cerarTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# Headers. The plain runtime's headers include neither <mpi.h> nor CUDA nor nlohmann/json; the
# MPI, CUDA and NCCL headers go with the libraries that need them.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/design/include/cerar/format
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cerar)
# The typed errors every layer throws (format, design, runtime) live above the layers.
install(FILES ${PROJECT_SOURCE_DIR}/design/include/cerar/errors.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cerar)
if(TARGET cerar_design)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/design/include/cerar/design
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cerar)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/cerar/runtime
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cerar
        PATTERN cuda EXCLUDE PATTERN mpi_transport.h EXCLUDE)
if(TARGET cerar_runtime_mpi)
  install(FILES ${PROJECT_SOURCE_DIR}/runtime/include/cerar/runtime/mpi_transport.h
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cerar/runtime)
endif()
if(TARGET cerar_runtime_cuda)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/cerar/runtime/cuda
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cerar/runtime
          PATTERN nccl_mpi.h EXCLUDE)
endif()
if(TARGET cerar_runtime_cuda_mpi)
  install(FILES ${PROJECT_SOURCE_DIR}/runtime/include/cerar/runtime/cuda/nccl_mpi.h
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cerar/runtime/cuda)
endif()

# The design catalogue: what the Python package's pick_design() searches.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/matrices/ DESTINATION ${CMAKE_INSTALL_DATADIR}/cerar/matrices
        FILES_MATCHING PATTERN "*.json" PATTERN "*.md")

if(TARGET cerar)
  set_target_properties(cerar PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  install(TARGETS cerar RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(CERAR_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/cerar)
install(EXPORT cerarTargets NAMESPACE cerar:: DESTINATION ${CERAR_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/cerarConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/cerarConfig.cmake
                              INSTALL_DESTINATION ${CERAR_CMAKE_DIR})
# 0.x: a consumer asking for 0.1 accepts 0.1.z only (the ABI may change with every minor).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cerarConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cerarConfig.cmake ${PROJECT_BINARY_DIR}/cerarConfigVersion.cmake
        DESTINATION ${CERAR_CMAKE_DIR})
