# tutorial_golden.cmake - runs one tutorial of tessera-tutorial with
# --golden and compares its stdout with a golden file, like
# tu_assert_golden (tests/testutil.h): TESSERA_UPDATE_GOLDENS=1 in the
# environment rewrites the golden instead.
#
#   cmake -DPROG=tessera-tutorial -DARGS="blur;--size;37" -DGOLDEN=file -P tutorial_golden.cmake
execute_process(COMMAND ${PROG} ${ARGS} --golden
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROG} ${ARGS} --golden exited with ${rc}:\n${err}")
endif()
if("$ENV{TESSERA_UPDATE_GOLDENS}" STREQUAL "1")
  file(WRITE ${GOLDEN} "${out}")
  message(STATUS "wrote ${GOLDEN}")
  return()
endif()
if(NOT EXISTS ${GOLDEN})
  message(FATAL_ERROR "missing golden ${GOLDEN} (run with TESSERA_UPDATE_GOLDENS=1)")
endif()
file(READ ${GOLDEN} want)
if(NOT out STREQUAL want)
  # a readable diff: the actual output next to the golden, through diff -u
  get_filename_component(name ${GOLDEN} NAME)
  set(actual ${CMAKE_CURRENT_BINARY_DIR}/${name}.actual)
  file(WRITE ${actual} "${out}")
  execute_process(COMMAND diff -u ${GOLDEN} ${actual} OUTPUT_VARIABLE diff)
  message(FATAL_ERROR "${PROG} ${ARGS} --golden differs from ${GOLDEN} "
          "(the output is in ${actual}):\n${diff}\n"
          "TESSERA_UPDATE_GOLDENS=1 ctest -R tutorial_ rewrites the goldens.")
endif()
