# Installation: cmake --install BUILD [--prefix P], or DESTDIR=stage.
#
#   bin/patchbridge, sbin/patchbridge-milter     (bridge/, milter/)
#   libexec/patchbridge/patchbridge-format, patchbridge-daemon
#                                                the programs bin/patchbridge
#                                                runs (bridge/cmd/)
#   share/man/man8/patchbridge.8, patchbridge-milter.8, man5/patchbridge.conf.5
#   share/patchbridge/templates/                 copies of the built-in
#                                                templates, for --template
#   share/doc/patchbridge/postfix/, systemd/, logrotate/
#                                                fragments and README files
#   lib/systemd/system/, lib/sysusers.d/, lib/tmpfiles.d/  (PB_INSTALL_SYSTEMD)
#   PB_SYSCONFDIR/patchbridge/patchbridge.conf.example
#
# The configuration directory is absolute and compiled into both programs
# (CONFIG_DEFAULT_PATH): it does not follow a --prefix given to
# cmake --install, only the one given at configure time.  State, spool
# and socket directories belong to the service setup (sysusers.d,
# tmpfiles.d, StateDirectory=), not to the install, so the "uninstall"
# target, which removes what install_manifest.txt lists and the
# directories the install made (install_dirs.txt) once they are empty,
# leaves them alone.

# /usr and /usr/local keep their configuration in /etc (FHS); any other
# prefix (/opt/patchbridge, $HOME/pb) gets PREFIX/etc.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" OR
   CMAKE_INSTALL_PREFIX STREQUAL "/usr/local")
  set(pb_sysconfdir_default /etc)
else()
  set(pb_sysconfdir_default ${CMAKE_INSTALL_FULL_SYSCONFDIR})
endif()
set(PB_SYSCONFDIR ${pb_sysconfdir_default} CACHE PATH
    "Absolute directory holding patchbridge/patchbridge.conf")
if(NOT IS_ABSOLUTE "${PB_SYSCONFDIR}")
  message(FATAL_ERROR "PB_SYSCONFDIR must be absolute: ${PB_SYSCONFDIR}")
endif()
target_compile_definitions(pb_core PUBLIC PB_SYSCONFDIR="${PB_SYSCONFDIR}")

option(PB_INSTALL_SYSTEMD
  "Install the systemd units, sysusers.d and tmpfiles.d files" ON)

add_subdirectory(man)

# The programs have the templates compiled in (cmake/EmbedText.cmake);
# these copies are for `patchbridge format --template FILE`.
install(FILES templates/README.md templates/cover-letter.txt
        DESTINATION ${CMAKE_INSTALL_DATADIR}/patchbridge/templates)
# Only the example: a real patchbridge.conf is never written.
install(FILES contrib/patchbridge.conf.example
        DESTINATION ${PB_SYSCONFDIR}/patchbridge)
install(FILES contrib/postfix/README.md contrib/postfix/main.cf.fragment
              contrib/postfix/header_checks
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/postfix)

# The units name the installed programs and configuration.
set(PB_BINDIR ${CMAKE_INSTALL_FULL_BINDIR})
set(PB_SBINDIR ${CMAKE_INSTALL_FULL_SBINDIR})
set(PB_CONFIG_DIR ${PB_SYSCONFDIR}/patchbridge)
# sysusers.d and tmpfiles.d name the directories they are installed in.
set(PB_SYSUSERS_DIR ${CMAKE_INSTALL_PREFIX}/lib/sysusers.d)
set(PB_TMPFILES_DIR ${CMAKE_INSTALL_PREFIX}/lib/tmpfiles.d)
foreach(f patchbridge.service patchbridge-milter.service
          patchbridge.sysusers patchbridge.tmpfiles)
  configure_file(contrib/systemd/${f}.in contrib/systemd/${f} @ONLY)
endforeach()
install(FILES contrib/systemd/README.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/systemd)
# For /etc/logrotate.d, where the programs log to files (README.md).
install(FILES contrib/logrotate/patchbridge
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/logrotate)
if(PB_INSTALL_SYSTEMD)
  install(FILES ${CMAKE_BINARY_DIR}/contrib/systemd/patchbridge.service
                ${CMAKE_BINARY_DIR}/contrib/systemd/patchbridge-milter.service
          DESTINATION lib/systemd/system)
  install(FILES ${CMAKE_BINARY_DIR}/contrib/systemd/patchbridge.sysusers
          DESTINATION lib/sysusers.d RENAME patchbridge.conf)
  install(FILES ${CMAKE_BINARY_DIR}/contrib/systemd/patchbridge.tmpfiles
          DESTINATION lib/tmpfiles.d RENAME patchbridge.conf)
endif()

# The directories the install writes to; the first install rule
# (InstallDirs.cmake.in, included from the top-level CMakeLists.txt)
# notes which of them, and of their parents, it makes.
set(PB_INSTALL_DIRS
  ${CMAKE_INSTALL_BINDIR} ${CMAKE_INSTALL_SBINDIR}
  ${CMAKE_INSTALL_LIBEXECDIR}/patchbridge
  ${CMAKE_INSTALL_MANDIR}/man5 ${CMAKE_INSTALL_MANDIR}/man8
  ${CMAKE_INSTALL_DATADIR}/patchbridge/templates
  ${CMAKE_INSTALL_DOCDIR}/postfix ${CMAKE_INSTALL_DOCDIR}/systemd
  ${CMAKE_INSTALL_DOCDIR}/logrotate
  ${PB_SYSCONFDIR}/patchbridge)
if(PB_INSTALL_SYSTEMD)
  list(APPEND PB_INSTALL_DIRS lib/systemd/system lib/sysusers.d
       lib/tmpfiles.d)
endif()
configure_file(cmake/InstallDirs.cmake.in install_dirs.cmake @ONLY)

add_custom_target(uninstall
  COMMAND ${CMAKE_COMMAND}
          -DMANIFEST=${CMAKE_BINARY_DIR}/install_manifest.txt
          -DDIRS=${CMAKE_BINARY_DIR}/install_dirs.txt
          -P ${PROJECT_SOURCE_DIR}/cmake/Uninstall.cmake
  COMMENT "Removing the files listed in install_manifest.txt")
