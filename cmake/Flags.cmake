# Warnings, hardening and sanitizers for every target of ours.
add_compile_definitions(_GNU_SOURCE)
add_compile_options(
  -Wall -Wextra -Wpedantic -Wshadow -Wformat=2 -Wstrict-prototypes
  -Wmissing-prototypes -Wwrite-strings -Wvla -Wimplicit-fallthrough
  -Wundef -Wno-unused-parameter
  -fstack-protector-strong -fno-strict-aliasing)
if(PB_WERROR)
  add_compile_options(-Werror)
endif()
if(PB_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
else()
  # _FORTIFY_SOURCE needs optimisation and fights ASan's interceptors.
  if(NOT CMAKE_BUILD_TYPE STREQUAL "Debug")
    add_compile_definitions(_FORTIFY_SOURCE=2)
  endif()
endif()
add_link_options(-Wl,-z,relro -Wl,-z,now)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
