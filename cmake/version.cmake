# Writes OUT (a header with RDMAPS_GIT, the checkout's `git describe`) when
# its text changes: run at every build (target rdmaps_version in
# src/cli/CMakeLists.txt), so that `rdmaps --version` names the commit the
# binary was built from, "unknown" outside a git checkout.
execute_process(COMMAND git -C "${SRC}" describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE _git OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0 OR _git STREQUAL "")
  set(_git "unknown")
endif()
set(_text "#define RDMAPS_GIT \"${_git}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" _old)
else()
  set(_old "")
endif()
if(NOT _old STREQUAL _text)
  file(WRITE "${OUT}" "${_text}")
endif()
