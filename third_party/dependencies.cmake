# Finds every external library from the system (Debian packages, the CUDA toolkit). Nothing is vendored.
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
find_package(Boost 1.74 REQUIRED)  # Boost.Graph is header-only
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(Threads REQUIRED)
if(IOS_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(IOS_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
