# cmake -DPATCHBRIDGE=prog -DIN=patchbridge.conf.5 -DOUT=file -P gen-conf-page.cmake
# IN is the configured page with the line "@PARAMETERS@" left in it; that
# line is replaced with `patchbridge list-params --man`, which prints one
# paragraph per row of the parameter table (bridge/core/config.c); the
# line "@METRICS@" likewise with `patchbridge list-metrics --man`.
execute_process(COMMAND ${PATCHBRIDGE} list-params --man
  OUTPUT_VARIABLE params RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR params STREQUAL "")
  message(FATAL_ERROR "${PATCHBRIDGE} list-params --man failed (${rc})")
endif()
file(READ "${IN}" page)
string(FIND "${page}" "\n@PARAMETERS@\n" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${IN}: no @PARAMETERS@ line")
endif()
string(REPLACE "\n@PARAMETERS@\n" "\n${params}" page "${page}")
# The same for @METRICS@ and `patchbridge list-metrics --man` (the table in
# bridge/core/metrics.c).
execute_process(COMMAND ${PATCHBRIDGE} list-metrics --man
  OUTPUT_VARIABLE metrics RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR metrics STREQUAL "")
  message(FATAL_ERROR "${PATCHBRIDGE} list-metrics --man failed (${rc})")
endif()
string(FIND "${page}" "\n@METRICS@\n" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${IN}: no @METRICS@ line")
endif()
string(REPLACE "\n@METRICS@\n" "\n${metrics}" page "${page}")
file(WRITE "${OUT}.tmp" "${page}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
