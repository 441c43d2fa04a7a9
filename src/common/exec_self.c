/* Run this program again: see exec_self.h. */
#include <limits.h>
#include <unistd.h>

#include "common/exec_self.h"

void rdmaps_exec_self(char *const argv[])
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

	if (n > 0 && (size_t)n < sizeof(path) - 1) {
		path[n] = '\0';
		execv(path, argv);
	}
	execv("/proc/self/exe", argv);
}
