/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_APP_LAUNCH_H
#define RDP_APP_LAUNCH_H

/**
 * @file
 * How rdmaplane's apps start: EAL options when the user gave none, and the
 * loopback mode's server process.
 *
 * - Without EAL options an app runs with no hugepages and no PCI, its main
 *   lcore on one CPU and one poller lcore on the other, and a file prefix
 *   of its own (so two processes never share EAL state).
 * - Loopback: the same binary again, as the server, with the CPUs swapped
 *   so that each side's poller owns a core; it tells its port through a
 *   pipe and gets SIGTERM if the client dies.
 */

#include <stdbool.h>
#include <sys/types.h>

/** Room for the arguments app_eal_defaults() writes. */
#define APP_EAL_ARGS_MAX 16

/** Storage behind the arguments of app_eal_defaults(). */
struct app_eal_args {
	char *argv[APP_EAL_ARGS_MAX];
	int argc;
	char lcores[64];
	char prefix[64];
};

/**
 * The first two CPUs this process may run on (the same one twice on a
 * one-CPU machine).
 *
 * @param a
 *   First CPU.
 * @param b
 *   Second CPU.
 */
void app_two_cpus(int *a, int *b);

/**
 * EAL options for a process started without any.
 *
 * @param e
 *   Filled: argv (argv[0] = @p prog) and argc.
 * @param prog
 *   Program name.
 * @param lcores
 *   `--lcores` value, or NULL for "0@<second CPU>,1@<first CPU>" (the poller
 *   on the first CPU).
 * @param prefix
 *   File prefix stem; the pid is appended.
 * @param telemetry
 *   Keep the telemetry socket (else --no-telemetry).
 */
void app_eal_defaults(struct app_eal_args *e, const char *prog, const char *lcores,
		      const char *prefix, bool telemetry);

/**
 * Do the EAL options @p argv (argv[0] the program, up to `--`) run on
 * hugepages? Not without options (app_eal_defaults()), nor with `--no-huge`.
 *
 * @param argc
 *   Count of @p argv.
 * @param argv
 *   The program and its EAL options.
 * @return
 *   True on hugepages.
 */
bool app_eal_args_huge(int argc, char *const argv[]);

/**
 * Start this binary again as the loopback server.
 *
 * It runs with app_eal_defaults() (poller on the second CPU unless
 * @p server_lcores says otherwise; with @p huge, `--in-memory` on
 * hugepages instead of `--no-huge --no-shconf -m 512`), then `--`, then
 * @p app_args, then `--port-fd N`, and must write the port it listens on,
 * as an int, to fd N.
 *
 * @param server_lcores
 *   `--lcores` of the server, or NULL.
 * @param prefix
 *   File prefix stem of the server.
 * @param huge
 *   The client runs on hugepages (app_eal_args_huge()): so does the server.
 * @param app_args
 *   NULL-terminated arguments after `--`.
 * @param port
 *   Receives the server's port.
 * @return
 *   The server's pid, or -1 when it did not start.
 */
pid_t app_spawn_server(const char *server_lcores, const char *prefix, bool huge,
		       const char *const app_args[], int *port);

#endif /* RDP_APP_LAUNCH_H */
