/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDP_BLK_H
#define RDP_BLK_H

/*
 * rdp-blk internals shared by main.c (arguments, EAL, processes), serve.c
 * (the block server) and load.c (the load generator).
 */

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "rdp_cfg.h"

/* Exit statuses. */
#define BLK_EXIT_OK 0
#define BLK_EXIT_FAIL 1   /* the run failed: mismatch, error reply, server lost, setup */
#define BLK_EXIT_USAGE 2  /* bad arguments */

/* Options of both commands. */
struct blk_common {
	const char *config;  /* -c FILE */
	const char *driver;  /* --driver SPEC */
	bool quiet;
};

/* Devices of one server: each listens on a port of its own. */
#define BLK_MAX_EXPORTS 8

/* One device `serve` exports. */
struct blk_export {
	const char *file;    /* --file PATH, or NULL for --memory */
	uint64_t size;       /* --memory bytes */
};

/* What `serve` exports. */
struct serve_opts {
	struct blk_common c;
	struct blk_export exports[BLK_MAX_EXPORTS]; /* in command-line order */
	unsigned int nb_exports;
	uint64_t size;       /* --size: bytes of each file; 0: the file's size */
	bool no_direct;      /* --no-direct: files through the page cache */
	bool psync;          /* --ioengine psync: blocking pread/pwrite on the poller */
	bool sync;           /* --sync: writes durable before their reply */
	const char *listen;  /* --listen HOST:PORT, NULL: the configuration's */
	int port_fd;         /* --port-fd: write the bound port there */
};

/* Workload patterns of `load`. */
enum load_rw { RW_RANDREAD = 0, RW_RANDWRITE, RW_READ, RW_WRITE, RW_RANDRW, RW_MAX };

/* What `load` does. */
struct load_opts {
	struct blk_common c;
	const char *connect;  /* --connect, NULL: loopback */
	bool in_process;      /* --in-process: the server runs in this process */
	const char *file;     /* loopback/in-process server: --file */
	uint64_t size;        /* --size: bytes exercised (and of a local server's device) */
	bool sync;            /* loopback/in-process server: --sync */
	bool no_direct;       /* loopback/in-process server: --no-direct */
	const char *server_lcores; /* loopback: EAL --lcores of the server process */
	enum load_rw rw;
	unsigned int rwmixread; /* percent of reads in randrw */
	uint32_t bs;          /* --bs: bytes per request, a multiple of 512 */
	uint32_t rdma_min;    /* --rdma-min: requests of at least this many bytes move
			       * their data one-sided; UINT32_MAX: none */
	unsigned int qd;      /* --iodepth: requests in flight per endpoint */
	unsigned int endpoints; /* --numjobs: per poller lcore */
	double duration;      /* --runtime: seconds */
	bool verify;
	const char *state;    /* --state FILE */
	bool check;           /* --check: read back every block of the state */
	uint64_t seed;
	bool json;            /* --output-format=json */
	const char *output;   /* --output FILE, NULL: stdout */
	double reconnect;     /* --reconnect SEC: lost this long, give up; 0: at once */
	uint32_t reconnect_delay_ms; /* --reconnect-delay MS: the first wait (default 100) */
};

/* Set by SIGINT/SIGTERM. */
extern volatile sig_atomic_t blk_force_quit;

/* Print "rdp-blk: NAME VALUE: RULE (see ...)" on stderr; returns -1. */
int blk_bad_option(const char *cmd, const char *name, const char *value, const char *rule);
/* Parse N[KMGT] (powers of 1024) into bytes; -1 when malformed. */
int blk_parse_size(const char *s, uint64_t *bytes);
/* The poller lcores rdp_init() creates for @p cfg, in increasing order. */
unsigned int blk_poller_lcores(const struct rdp_cfg *cfg, unsigned int *ids, unsigned int max);

/* serve.c */
int serve_parse(int argc, char **argv, struct serve_opts *o);
void serve_usage(FILE *f);
/* Open the devices and listen (@p ports: one per device); endpoints go to
 * @p lcore (-1: any poller). */
int blk_server_start(const struct serve_opts *o, int lcore, int *ports);
/* One progress line when there was traffic since the last call. */
void blk_server_progress(double dt);
/*
 * Before rdp_fini(): stop listening, close every endpoint, wait (at most
 * 5 s) for them to be gone, and deregister the server's memory.
 */
void blk_server_quiesce(void);
/* Totals, and close the device (after rdp_fini()). */
void blk_server_stop(void);
int serve_run(const struct serve_opts *o);

/* load.c */
int load_parse(int argc, char **argv, struct load_opts *o);
void load_usage(FILE *f);
/* Run the load against o->connect, with client endpoints on @p lcores. */
int load_run(const struct load_opts *o, const struct rdp_cfg *cfg, const unsigned int *lcores,
	     unsigned int nb_lcores);

#endif /* RDP_BLK_H */
