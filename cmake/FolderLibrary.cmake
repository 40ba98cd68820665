# One library per source folder: the folder's *.cpp (less EXCLUDE, plus
# EXTRA), compiled in unity batches, with the project root on the include
# path, so that every source includes "folder/file.hpp".
#   autotune_folder_library(name [EXCLUDE file...] [EXTRA source...]
#                           [PUBLIC target...] [PRIVATE target...])
function(autotune_folder_library name)
  cmake_parse_arguments(arg "" "" "EXCLUDE;EXTRA;PUBLIC;PRIVATE" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  foreach(file ${arg_EXCLUDE})
    list(REMOVE_ITEM sources ${CMAKE_CURRENT_SOURCE_DIR}/${file})
  endforeach()
  add_library(${name} STATIC ${sources} ${arg_EXTRA})
  autotune_unity_build(${name})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${arg_PUBLIC} PRIVATE autotune_warnings ${arg_PRIVATE})
endfunction()
