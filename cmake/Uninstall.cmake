# [DESTDIR=stage] cmake -DMANIFEST=install_manifest.txt \
#                       [-DDIRS=install_dirs.txt] -P Uninstall.cmake
# Removes exactly the files the last `cmake --install` wrote (the manifest
# lists them without DESTDIR: give the same DESTDIR again), then the
# directories that this leaves empty and that the install made (DIRS,
# noted by its first rule, cmake/InstallDirs.cmake.in) or that are ours
# (a path component named patchbridge*).  A directory that was there
# before stays, empty or not.  State, spool, socket and a real
# patchbridge.conf were never installed, so they stay.
if(NOT EXISTS "${MANIFEST}")
  message(FATAL_ERROR "${MANIFEST} not found: nothing was installed "
                      "from this build directory")
endif()
file(STRINGS "${MANIFEST}" files)
set(dirs "")
foreach(f IN LISTS files)
  set(f "$ENV{DESTDIR}${f}")
  if(IS_SYMLINK "${f}" OR EXISTS "${f}")
    message(STATUS "Removing ${f}")
    file(REMOVE "${f}")
    if(EXISTS "${f}")
      message(FATAL_ERROR "could not remove ${f}")
    endif()
  endif()
  get_filename_component(d "${f}" DIRECTORY)
  while(d MATCHES "/patchbridge[^/]*(/|$)")
    list(APPEND dirs "${d}")
    get_filename_component(d "${d}" DIRECTORY)
  endwhile()
endforeach()
if(DIRS AND EXISTS "${DIRS}")
  file(STRINGS "${DIRS}" made)
  list(POP_FRONT made for)
  if(for STREQUAL "destdir=$ENV{DESTDIR}")
    foreach(d IN LISTS made)
      list(APPEND dirs "$ENV{DESTDIR}${d}")
    endforeach()
  else()
    message(WARNING "${DIRS} was written by an install with another "
                    "DESTDIR (${for}): its directories are left alone")
  endif()
endif()
list(REMOVE_DUPLICATES dirs)
# Deepest first.
list(SORT dirs ORDER DESCENDING)
foreach(d IN LISTS dirs)
  file(GLOB left "${d}/*" "${d}/.*")
  if(IS_DIRECTORY "${d}" AND NOT left)
    message(STATUS "Removing empty ${d}")
    execute_process(COMMAND rmdir "${d}" ERROR_QUIET)
  endif()
endforeach()
file(REMOVE "${MANIFEST}")
if(DIRS)
  file(REMOVE "${DIRS}")
endif()
