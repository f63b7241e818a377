# SPDX-License-Identifier: MIT
# build_info.cmake — run at every build (cmake -P): writes build_info.h with
# the source tree's git commit ("unknown" without git or a checkout; a
# "-dirty" suffix when tracked files differ), rewritten only when it
# changes, so a commit between builds is what the next binary records.
# -DSRC=<source dir> -DOUT=<header path>
set(commit "unknown")
find_program(_git git)
if(_git AND EXISTS "${SRC}/.git")
  execute_process(COMMAND ${_git} -C "${SRC}" rev-parse HEAD OUTPUT_VARIABLE c RESULT_VARIABLE rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(rc EQUAL 0 AND c)
    set(commit "${c}")
    execute_process(COMMAND ${_git} -C "${SRC}" diff-index --quiet HEAD -- RESULT_VARIABLE dirty ERROR_QUIET)
    if(NOT dirty EQUAL 0)
      set(commit "${commit}-dirty")
    endif()
  endif()
endif()
set(text "/* written by cmake/build_info.cmake at build time */\n#define PZ_GIT_COMMIT \"${commit}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
