/* version - the release string of patchbridge. */
#ifndef PB_CORE_VERSION_H
#define PB_CORE_VERSION_H

const char *pb_version(void);

#endif
