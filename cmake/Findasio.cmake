# Finds standalone (header-only) asio and provides the imported target
# asio::asio. Installed next to etcd_recipesConfig.cmake, because the
# public headers of etcd-recipes include asio and Debian's libasio-dev ships
# no CMake or pkg-config file of its own.
find_path(asio_INCLUDE_DIR NAMES asio.hpp)
if(asio_INCLUDE_DIR AND EXISTS "${asio_INCLUDE_DIR}/asio/version.hpp")
  file(STRINGS "${asio_INCLUDE_DIR}/asio/version.hpp" _asio_version_line REGEX "^#define ASIO_VERSION [0-9]+")
  string(REGEX REPLACE "^#define ASIO_VERSION ([0-9]+).*" "\\1" _asio_v "${_asio_version_line}")
  if(_asio_v)
    math(EXPR _asio_major "${_asio_v} / 100000")
    math(EXPR _asio_minor "${_asio_v} / 100 % 1000")
    math(EXPR _asio_patch "${_asio_v} % 100")
    set(asio_VERSION "${_asio_major}.${_asio_minor}.${_asio_patch}")
  endif()
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(asio REQUIRED_VARS asio_INCLUDE_DIR VERSION_VAR asio_VERSION)
mark_as_advanced(asio_INCLUDE_DIR)
if(asio_FOUND AND NOT TARGET asio::asio)
  add_library(asio::asio INTERFACE IMPORTED)
  set_target_properties(asio::asio PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${asio_INCLUDE_DIR}")
endif()
