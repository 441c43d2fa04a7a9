#ifndef RDMAPS_CLI_DEVICES_H
#define RDMAPS_CLI_DEVICES_H

/* `rdmaps devices [HOST]` (argv[0] = "devices"): see devices.c.
 * Exit status: 0 a device serves HOST, 1 none does, 2 bad arguments. */
int rdmaps_devices_main(int argc, char **argv);

#endif
