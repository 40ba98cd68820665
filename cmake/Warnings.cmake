add_library(autotune_warnings INTERFACE)
target_compile_options(autotune_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-missing-field-initializers>)
