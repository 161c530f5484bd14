# Finds the header-only cudnn-frontend that scripts/install_cudnn_frontend.sh puts in
# <build>/_deps/cudnn-frontend (or CUDNN_FRONTEND_ROOT); defines CudnnFrontend::headers.
find_path(CUDNN_FRONTEND_INCLUDE_DIR cudnn_frontend.h
          HINTS ${CUDNN_FRONTEND_ROOT} ${CMAKE_BINARY_DIR}/_deps/cudnn-frontend ${CMAKE_SOURCE_DIR}/build/_deps/cudnn-frontend
          PATH_SUFFIXES include NO_DEFAULT_PATH)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CudnnFrontend DEFAULT_MSG CUDNN_FRONTEND_INCLUDE_DIR)
if(CudnnFrontend_FOUND AND NOT TARGET CudnnFrontend::headers)
  add_library(CudnnFrontend::headers INTERFACE IMPORTED)
  set_target_properties(CudnnFrontend::headers PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_FRONTEND_INCLUDE_DIR}")
endif()
