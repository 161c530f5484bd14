# `cmake --install build --prefix P`: headers under P/include/ios, static libraries, and the
# IOSScheduler package (P/lib/cmake/IOSScheduler) with namespaced targets IOS::<library>. In-tree the same
# names are aliases, so examples/ builds the same way against the build or the installed package.
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)
set(ios_package_libraries ios_common ios_ir ios_onnx ios_models ios_reference ios_scheduler ios_trace ios_engine)
if(IOS_HAVE_RUNTIME)
  list(APPEND ios_package_libraries ios_runtime)
endif()
foreach(lib ${ios_package_libraries})
  string(REGEX REPLACE "^ios_" "" name ${lib})
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${name})
  add_library(IOS::${name} ALIAS ${lib})
endforeach()
install(TARGETS ${ios_package_libraries} EXPORT IOSSchedulerTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
foreach(dir common ir frontends models reference scheduler runtime engine)
  install(DIRECTORY ${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ios/${dir} FILES_MATCHING PATTERN "*.h")
endforeach()
set(ios_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/IOSScheduler)
install(EXPORT IOSSchedulerTargets NAMESPACE IOS:: DESTINATION ${ios_cmake_dir})
configure_package_config_file(cmake/IOSSchedulerConfig.cmake.in ${CMAKE_BINARY_DIR}/IOSSchedulerConfig.cmake
                              INSTALL_DESTINATION ${ios_cmake_dir})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/IOSSchedulerConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/IOSSchedulerConfig.cmake ${CMAKE_BINARY_DIR}/IOSSchedulerConfigVersion.cmake
              third_party/cmake/FindCUDNN.cmake third_party/cmake/FindCudnnFrontend.cmake
        DESTINATION ${ios_cmake_dir})
