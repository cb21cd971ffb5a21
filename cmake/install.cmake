# Installation: librlx.so (versioned SONAME), librlx.a, the CLI, the headers, a CMake package
# (find_package(rlx) -> rlx::rlx and rlx::rlx_static) and a pkg-config file (rlx.pc).
#
# Where libmlx.so lives for an installed rlx: with RLX_INSTALL_MLX (the default for MLX's CPU
# wheel) the wheel's libmlx.so and its bundled libraries (mlx_cpu.libs: LAPACK, BLAS, gfortran)
# are copied to <prefix>/lib/rlx/, in the wheel's own layout (mlx/lib/libmlx.so next to
# ../../mlx_cpu.libs, which libmlx.so's run path expects), so the installed tree is relocatable and
# does not need the build's virtual environment. Without it (the default for the mlx-cuda-13 wheel,
# whose libmlx.so finds the NVIDIA libraries and its NVRTC headers relative to the wheel's
# site-packages) the installed run paths name the wheel's lib folder by its absolute path.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

file(GLOB _rlx_mlx_libs LIST_DIRECTORIES true "${RLX_MLX_LIBDIR}/../../mlx*.libs")
set(_rlx_bundle_default OFF)
if(_rlx_mlx_libs MATCHES "mlx_cpu\\.libs$")
  set(_rlx_bundle_default ON)
endif()
option(RLX_INSTALL_MLX "Install a copy of libmlx.so (and the wheel's bundled libraries) with rlx" ${_rlx_bundle_default})

set(RLX_MLX_INSTALL_LIBDIR "${CMAKE_INSTALL_LIBDIR}/rlx/mlx/lib")
if(RLX_INSTALL_MLX)
  set(_rlx_mlx_rpath_lib "$ORIGIN/rlx/mlx/lib")
  set(_rlx_mlx_rpath_bin "$ORIGIN/../${RLX_MLX_INSTALL_LIBDIR}")
  install(FILES "${MLX_LIBRARY}" DESTINATION "${RLX_MLX_INSTALL_LIBDIR}")
  foreach(d ${_rlx_mlx_libs})
    install(DIRECTORY "${d}" DESTINATION "${CMAKE_INSTALL_LIBDIR}/rlx")
  endforeach()
  set(RLX_PC_MLX_LIBDIR "\${libdir}/rlx/mlx/lib")
  set(RLX_CONFIG_MLX_LIBDIR "\${_rlx_prefix}/${RLX_MLX_INSTALL_LIBDIR}")
else()
  set(_rlx_mlx_rpath_lib "${RLX_MLX_LIBDIR}")
  set(_rlx_mlx_rpath_bin "${RLX_MLX_LIBDIR}")
  set(RLX_PC_MLX_LIBDIR "${RLX_MLX_LIBDIR}")
  set(RLX_CONFIG_MLX_LIBDIR "${RLX_MLX_LIBDIR}")
endif()
set_target_properties(rlx PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
                      INSTALL_RPATH "$ORIGIN;${_rlx_mlx_rpath_lib};${RLX_OPENBLAS_DIR};${RLX_DEPS_LIBDIR}")
set_target_properties(rlx_cli PROPERTIES
                      INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR};${_rlx_mlx_rpath_bin};${RLX_OPENBLAS_DIR};${RLX_DEPS_LIBDIR}")

install(TARGETS rlx rlx_static rlx_cli)
install(DIRECTORY include/rlx DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")

# Link lines of the static library's dependencies, for the package files. protobuf-c, cJSON and PCRE2 by
# the paths the build found, so that a consumer links the same ones, also from RLX_DEPS_PREFIX
# (whose folder its programs then need in their run path: RLX_PC_DEPS_RPATH).
set(RLX_CONFIG_OPENBLAS "${RLX_OPENBLAS}")
set(RLX_PC_OPENBLAS "")
if(RLX_OPENBLAS)
  set(RLX_PC_OPENBLAS "-Wl,--no-as-needed ${RLX_OPENBLAS} -Wl,--as-needed")
endif()
set(_rlx_dep_libs ${PROTOBUF_C_LINK_LIBRARIES} ${CJSON_LINK_LIBRARIES} ${PCRE2_LINK_LIBRARIES})
list(JOIN _rlx_dep_libs " " RLX_DEP_LIBS)
set(RLX_PC_DEPS_RPATH "")
if(RLX_DEPS_LIBDIR)
  set(RLX_PC_DEPS_RPATH "-Wl,-rpath,${RLX_DEPS_LIBDIR}")
endif()
set(RLX_SOVERSION ${PROJECT_VERSION_MAJOR})
set(_rlx_cmake_dir "${CMAKE_INSTALL_LIBDIR}/cmake/rlx")
configure_package_config_file(cmake/rlxConfig.cmake.in "${CMAKE_BINARY_DIR}/rlxConfig.cmake"
                              INSTALL_DESTINATION "${_rlx_cmake_dir}")
# 0.x: a minor version bump may break the API.
write_basic_package_version_file("${CMAKE_BINARY_DIR}/rlxConfigVersion.cmake" COMPATIBILITY SameMinorVersion)
configure_file(cmake/rlx.pc.in "${CMAKE_BINARY_DIR}/rlx.pc" @ONLY)
install(FILES "${CMAKE_BINARY_DIR}/rlxConfig.cmake" "${CMAKE_BINARY_DIR}/rlxConfigVersion.cmake" DESTINATION "${_rlx_cmake_dir}")
install(FILES "${CMAKE_BINARY_DIR}/rlx.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
