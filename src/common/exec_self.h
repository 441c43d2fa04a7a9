/* Run this program again. */
#ifndef RDMAPS_COMMON_EXEC_SELF_H
#define RDMAPS_COMMON_EXEC_SELF_H

/* execv() this program with argv: through its own path (readlink of
 * /proc/self/exe), so that the new image keeps the program's name in ps,
 * pidof and killall (exec'd through /proc/self/exe it would be "exe"), else
 * through /proc/self/exe.  Returns only on failure, with errno set.  Only
 * readlink and execv: safe between fork and exec. */
void rdmaps_exec_self(char *const argv[]);

#endif
