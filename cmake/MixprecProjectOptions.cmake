# Flags for mixprec's own tests, benchmarks and examples (never imposed on consumers).
add_library(mixprec_project_options INTERFACE)
target_link_libraries(mixprec_project_options INTERFACE mixprec::mixprec)
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_compile_options(mixprec_project_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion>)
  if(MIXPREC_WARNINGS_AS_ERRORS)
    target_compile_options(mixprec_project_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
  if(MIXPREC_SANITIZE)
    target_compile_options(mixprec_project_options INTERFACE -fsanitize=${MIXPREC_SANITIZE} -fno-omit-frame-pointer
                                                             -fno-sanitize-recover=all)
    target_link_options(mixprec_project_options INTERFACE -fsanitize=${MIXPREC_SANITIZE})
  endif()
endif()
find_package(Threads REQUIRED)
target_link_libraries(mixprec_project_options INTERFACE Threads::Threads)
