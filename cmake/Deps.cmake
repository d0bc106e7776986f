# Third-party libraries.  Each is linked PRIVATE into the one layer that
# wraps it, so its headers are unreachable from the others.
find_package(PkgConfig REQUIRED)
pkg_check_modules(GMIME REQUIRED IMPORTED_TARGET gmime-3.0)
pkg_check_modules(LIBGIT2 REQUIRED IMPORTED_TARGET libgit2)
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl)
pkg_check_modules(JSONC REQUIRED IMPORTED_TARGET json-c)
pkg_check_modules(SQLITE3 REQUIRED IMPORTED_TARGET sqlite3)
# PostgreSQL client (bridge/state/db_pg.c only): Debian's libpq-dev.
pkg_check_modules(LIBPQ REQUIRED IMPORTED_TARGET libpq)
pkg_check_modules(YAML REQUIRED IMPORTED_TARGET yaml-0.1)
# OpenSSL's libcrypto (bridge/mail/patatt.c only): the ed25519 signatures
# of patch attestation.  Debian's libssl-dev, which libcurl4-openssl-dev
# depends on already, named here because patatt.c links it directly.
pkg_check_modules(LIBCRYPTO REQUIRED IMPORTED_TARGET libcrypto)
if(PB_TESTS)
  pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
endif()

# libmilter ships no pkg-config file on Debian.
find_path(MILTER_INCLUDE_DIR libmilter/mfapi.h REQUIRED)
find_library(MILTER_LIBRARY milter REQUIRED)
find_package(Threads REQUIRED)
add_library(pb_milter_lib INTERFACE)
target_include_directories(pb_milter_lib INTERFACE ${MILTER_INCLUDE_DIR})
target_link_libraries(pb_milter_lib INTERFACE ${MILTER_LIBRARY} Threads::Threads)
# The webhook receiver's HTTP server (bridge/forge/webhook.c only).
pkg_check_modules(MHD REQUIRED IMPORTED_TARGET libmicrohttpd)
