include(GoogleTest)

# jllm_add_test(NAME SOURCES... LIBS ... LABEL cpu|nvrtc|gpu)
# One GoogleTest executable per suite; each TEST becomes a CTest test carrying LABEL.
# GPU tests call GTEST_SKIP() where no device is present; CTest then reports them as skipped.
function(jllm_add_test name)
  cmake_parse_arguments(ARG "" "LABEL" "SOURCES;LIBS" ${ARGN})
  if(NOT ARG_LABEL)
    set(ARG_LABEL cpu)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main GTest::gmock)
  target_compile_definitions(${name} PRIVATE
    JLLM_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    JLLM_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${name}
    DISCOVERY_MODE PRE_TEST
    PROPERTIES LABELS ${ARG_LABEL} SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]"
    DISCOVERY_TIMEOUT 60)
endfunction()
