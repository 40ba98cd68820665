# Which GPU architectures the cuda workload's module is built for.
#
# A module built for one architecture fails every trial on other cards ("no
# kernel image"), so by default it carries machine code (SASS) for the cards
# users have: T4 (sm_75), A100 (sm_80), RTX 3090/A10 (sm_86), L4/L40/RTX 4090
# (sm_89), H100/H200 (sm_90), plus PTX of the newest of them, which the driver
# compiles for newer cards (Blackwell: sm_100, sm_120) on first use. A card
# present at build time (nvidia-smi) is added as SASS when the list misses it.
# Only what this nvcc can build is kept (`nvcc --list-gpu-arch`); what it
# cannot is dropped with a warning, never a failed configure.
#
# -DCMAKE_CUDA_ARCHITECTURES=... at configure time overrides all of this
# (CMake's syntax: "80-real;90" is SASS for 80, SASS and PTX for 90).
#
# Sets AUTOTUNE_CUDA_ARCHITECTURES (what the module is built for, CMake's
# syntax) and CMAKE_CUDA_ARCHITECTURES, before enable_language(CUDA); after
# it, autotune_resolve_cuda_architectures() turns CMake's keywords (native,
# all, all-major) into the numbers they stand for.

set(AUTOTUNE_CUDA_WANTED_ARCHITECTURES 75 80 86 89 90 CACHE STRING
    "Architectures (SASS) the cuda module is built for by default; the newest also as PTX")

# The compute capabilities nvcc can build SASS for, as numbers ("sm_90" -> 90).
function(autotune_nvcc_supported_archs out)
  execute_process(COMMAND ${CMAKE_CUDA_COMPILER} --list-gpu-code
                  OUTPUT_VARIABLE listed ERROR_QUIET RESULT_VARIABLE rc)
  set(archs)
  if(rc EQUAL 0)
    string(REGEX MATCHALL "sm_[0-9]+" codes "${listed}")
    foreach(c IN LISTS codes)
      string(REPLACE "sm_" "" n "${c}")
      list(APPEND archs ${n})
    endforeach()
  endif()
  list(REMOVE_DUPLICATES archs)
  set(${out} "${archs}" PARENT_SCOPE)
endfunction()

# The compute capability of each card visible now ("8.9" -> 89); none without
# a driver. Only a hint: the build machine need not be the one that runs trials.
function(autotune_cards_present out)
  set(archs)
  find_program(AUTOTUNE_NVIDIA_SMI nvidia-smi)
  if(AUTOTUNE_NVIDIA_SMI)
    execute_process(COMMAND ${AUTOTUNE_NVIDIA_SMI} --query-gpu=compute_cap --format=csv,noheader
                    OUTPUT_VARIABLE listed ERROR_QUIET RESULT_VARIABLE rc TIMEOUT 20)
    if(rc EQUAL 0)
      string(REGEX MATCHALL "[0-9]+\\.[0-9]+" caps "${listed}")
      foreach(c IN LISTS caps)
        string(REPLACE "." "" n "${c}")
        list(APPEND archs ${n})
      endforeach()
    endif()
  endif()
  list(REMOVE_DUPLICATES archs)
  set(${out} "${archs}" PARENT_SCOPE)
endfunction()

if(DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT "${CMAKE_CUDA_ARCHITECTURES}" STREQUAL "")
  set(AUTOTUNE_CUDA_ARCHITECTURES_FROM_USER ON)
  set(AUTOTUNE_CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")
else()
  set(AUTOTUNE_CUDA_ARCHITECTURES_FROM_USER OFF)
  autotune_nvcc_supported_archs(supported)
  autotune_cards_present(present)
  set(sass)
  foreach(a IN LISTS AUTOTUNE_CUDA_WANTED_ARCHITECTURES present)
    if(NOT supported OR a IN_LIST supported)  # an nvcc that lists nothing: trust the wish
      list(APPEND sass ${a})
    else()
      message(WARNING "autotune: ${CMAKE_CUDA_COMPILER} cannot build sm_${a}; "
                      "the cuda module will have no kernels for it")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES sass)
  list(SORT sass COMPARE NATURAL)
  if(NOT sass)
    message(FATAL_ERROR "autotune: nvcc builds none of ${AUTOTUNE_CUDA_WANTED_ARCHITECTURES}")
  endif()
  # PTX of the newest wanted architecture (not of a card found at build
  # time, which may be newer than what users have): compute_90 PTX runs on
  # every later card through the driver's JIT.
  set(ptx)
  foreach(a IN LISTS AUTOTUNE_CUDA_WANTED_ARCHITECTURES)
    if(a IN_LIST sass)
      set(ptx ${a})
    endif()
  endforeach()
  set(AUTOTUNE_CUDA_ARCHITECTURES)
  foreach(a IN LISTS sass)
    if(a STREQUAL ptx)
      list(APPEND AUTOTUNE_CUDA_ARCHITECTURES ${a})  # SASS and PTX
    else()
      list(APPEND AUTOTUNE_CUDA_ARCHITECTURES ${a}-real)
    endif()
  endforeach()
  set(CMAKE_CUDA_ARCHITECTURES "${AUTOTUNE_CUDA_ARCHITECTURES}")
  if(present)
    message(STATUS "autotune: card(s) at build time: sm_${present}")
  endif()
endif()
message(STATUS "autotune: cuda module architectures ${AUTOTUNE_CUDA_ARCHITECTURES}")

# After enable_language(CUDA): the list behind CMake's keywords, so that the
# module can name what it was built for.
function(autotune_resolve_cuda_architectures)
  if(AUTOTUNE_CUDA_ARCHITECTURES STREQUAL "native")
    set(resolved "${CMAKE_CUDA_ARCHITECTURES_NATIVE}")
  elseif(AUTOTUNE_CUDA_ARCHITECTURES STREQUAL "all")
    set(resolved "${CMAKE_CUDA_ARCHITECTURES_ALL}")
  elseif(AUTOTUNE_CUDA_ARCHITECTURES STREQUAL "all-major")
    set(resolved "${CMAKE_CUDA_ARCHITECTURES_ALL_MAJOR}")
  else()
    return()
  endif()
  if(resolved)
    set(AUTOTUNE_CUDA_ARCHITECTURES "${resolved}" PARENT_SCOPE)
    message(STATUS "autotune: cuda module architectures (${AUTOTUNE_CUDA_ARCHITECTURES}) = ${resolved}")
  endif()
endfunction()
