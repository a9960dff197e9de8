# mixprec_example_support: what the examples share (examples/common/*.hpp, included as
# "common/<header>.hpp") and where the UCI digits data lives.  Included by examples/ and by
# tests/examples/, whichever comes first defines it.
if(NOT TARGET mixprec_example_support)
  add_library(mixprec_example_support INTERFACE)
  target_include_directories(mixprec_example_support INTERFACE ${PROJECT_SOURCE_DIR}/examples)
  target_compile_definitions(mixprec_example_support
                             INTERFACE MIXPREC_DIGITS_CSV="${PROJECT_SOURCE_DIR}/data/digits/digits.csv")
  target_link_libraries(mixprec_example_support INTERFACE mixprec_project_options)
endif()
