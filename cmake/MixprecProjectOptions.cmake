# Flags for mixprec's own tests, benchmarks and examples (never imposed on consumers):
# mixprec_build_flags holds the warnings and sanitizers (mixprec::compiled's own build uses them
# too); mixprec_project_options adds the library, header-only or, with
# MIXPREC_TESTS_USE_COMPILED, through mixprec::compiled.  CI builds the Release stage header-only
# and the sanitizer stages in the compiled mode, so every unit test runs in both.
add_library(mixprec_build_flags INTERFACE)
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_compile_options(mixprec_build_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion>)
  if(MIXPREC_WARNINGS_AS_ERRORS)
    target_compile_options(mixprec_build_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
  if(MIXPREC_SANITIZE)
    target_compile_options(mixprec_build_flags INTERFACE -fsanitize=${MIXPREC_SANITIZE} -fno-omit-frame-pointer
                                                         -fno-sanitize-recover=all)
    target_link_options(mixprec_build_flags INTERFACE -fsanitize=${MIXPREC_SANITIZE})
  endif()
endif()
find_package(Threads REQUIRED)
target_link_libraries(mixprec_build_flags INTERFACE Threads::Threads)

option(MIXPREC_TESTS_USE_COMPILED "Build mixprec's own tests, benchmarks and examples against mixprec::compiled" OFF)
add_library(mixprec_project_options INTERFACE)
target_link_libraries(mixprec_project_options INTERFACE mixprec::mixprec mixprec_build_flags)
if(MIXPREC_TESTS_USE_COMPILED)
  if(NOT TARGET mixprec::compiled)
    message(FATAL_ERROR "MIXPREC_TESTS_USE_COMPILED=ON needs MIXPREC_COMPILED=ON")
  endif()
  target_link_libraries(mixprec_project_options INTERFACE mixprec::compiled)
endif()

# Flags for the project's own nvcc-compiled targets (tests, benchmarks): warnings as errors in both
# passes, the CUDA toolkit's headers as system headers, and the shared CUDA runtime, the one
# mixprec::cuda links (CMake's default for CUDA targets is the static one).
function(mixprec_cuda_target_options target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Werror all-warnings
                         -Xcompiler=-Wall,-Wextra,-Werror>)
  target_include_directories(${target} SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  set_target_properties(${target} PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON CUDA_RUNTIME_LIBRARY Shared)
endfunction()
