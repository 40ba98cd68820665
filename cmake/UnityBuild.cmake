# The libraries compile as unity builds, eight sources to a translation unit:
# the heavy headers (Eigen, nlohmann/json, fmt) are parsed once per batch,
# not once per file, which halves the first build on two cores. A source
# that cannot share a unit (a clash of file-local names) sets
# SKIP_UNITY_BUILD_INCLUSION on itself. -DAUTOTUNE_UNITY_BUILD=OFF builds
# file by file, as a check that every source includes what it uses.
option(AUTOTUNE_UNITY_BUILD "Compile the libraries in batches of sources" ON)
function(autotune_unity_build target)
  if(AUTOTUNE_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()
