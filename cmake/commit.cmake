# SPDX-License-Identifier: BSD-3-Clause
# Writes OUT, a header defining SPMMA_COMMIT (git describe --always --dirty of SRC), at every
# build, but touches the file only when the commit changed (so nothing recompiles otherwise).
execute_process(COMMAND git -C "${SRC}" describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
endif()
set(text "// Generated at build time by cmake/commit.cmake. Do not edit.\n#define SPMMA_COMMIT \"${commit}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
else()
  set(old "")
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
