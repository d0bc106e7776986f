#include "core/version.h"

const char *pb_version(void)
{
	return PB_VERSION;
}
