# gemm_benchmark's peers (docs/performance.md, "Matrix product"), one translation unit each.
# Each is optional: a missing one drops only its own benchmarks, with a message.  Only this
# benchmark links them; the library never does.
set(gemm_peers_dir ${CMAKE_CURRENT_LIST_DIR})
target_include_directories(gemm_benchmark PRIVATE ${gemm_peers_dir})
find_package(OpenMP QUIET)
include(CheckCXXCompilerFlag)
check_cxx_compiler_flag(-march=native MIXPREC_COMPILER_HAS_MARCH_NATIVE)

# Eigen (found by benchmarks/CMakeLists.txt): compiled for this machine so that it uses its
# AVX-512 kernels, and with OpenMP for Eigen::setNbThreads.
if(TARGET Eigen3::Eigen)
  add_library(gemm_peer_eigen OBJECT ${gemm_peers_dir}/eigen_peer.cpp)
  target_link_libraries(gemm_peer_eigen PRIVATE mixprec_project_options benchmark::benchmark Eigen3::Eigen)
  if(MIXPREC_COMPILER_HAS_MARCH_NATIVE)
    target_compile_options(gemm_peer_eigen PRIVATE -march=native)
  endif()
  # GCC 12's AVX-512 intrinsics, inlined into Eigen's kernels, draw a false "may be used
  # uninitialized" (the same one bulk/x86/avx512.hpp silences); not our code.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(gemm_peer_eigen PRIVATE -Wno-maybe-uninitialized -Wno-uninitialized)
  endif()
  if(OpenMP_CXX_FOUND)
    target_link_libraries(gemm_peer_eigen PUBLIC OpenMP::OpenMP_CXX)
  else()
    message(STATUS "mixprec: no OpenMP; Eigen's GEMM benchmarks run on one thread whatever they ask")
  endif()
  target_link_libraries(gemm_benchmark PRIVATE gemm_peer_eigen)
endif()

find_package(OpenBLAS CONFIG QUIET)
if(OpenBLAS_FOUND)
  add_library(gemm_peer_openblas OBJECT ${gemm_peers_dir}/openblas_peer.cpp)
  target_include_directories(gemm_peer_openblas SYSTEM PRIVATE ${OpenBLAS_INCLUDE_DIRS})
  target_link_libraries(gemm_peer_openblas PRIVATE mixprec_project_options benchmark::benchmark)
  target_link_libraries(gemm_benchmark PRIVATE gemm_peer_openblas ${OpenBLAS_LIBRARIES})
else()
  message(STATUS "mixprec: OpenBLAS not found (libopenblas-dev); gemm_benchmark runs without its sgemm")
endif()

find_package(dnnl CONFIG QUIET)
if(TARGET DNNL::dnnl AND OpenMP_CXX_FOUND)
  add_library(gemm_peer_onednn OBJECT ${gemm_peers_dir}/onednn_peer.cpp)
  target_link_libraries(gemm_peer_onednn PRIVATE mixprec_project_options benchmark::benchmark DNNL::dnnl
                                                 OpenMP::OpenMP_CXX)
  target_link_libraries(gemm_benchmark PRIVATE gemm_peer_onednn DNNL::dnnl OpenMP::OpenMP_CXX)
else()
  message(STATUS "mixprec: oneDNN (libdnnl-dev) or OpenMP not found; gemm_benchmark runs without its bf16 matmul")
endif()
