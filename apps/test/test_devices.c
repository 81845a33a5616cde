/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Several devices in one process (docs/configuration.md, "Several
 * devices"): `device = A, B` opens both, every poller polls a CQ on each,
 * and each endpoint lives on the device its parameters name (else its
 * lcore's). Checked two-way streams on A, on B, and from B to A at once,
 * in one process, on one poller, with and without a shared receive queue
 * per device; a device name the process lacks is refused naming those it
 * has. On shm the devices are the names the configuration gives; the rxe
 * lane runs the same tests on rxe0 and rxe1 (RDP_TEST_DEVICES), where the
 * route test also picks the device from the address a peer reached.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <rte_errno.h>

#include "ep_stream.h"
#include "rdp_test.h"

#define DEV_MAX_MSG (64u * 1024)
#define DEV_PAIRS 3

static struct stream_side srv[DEV_PAIRS], cli[DEV_PAIRS];

/* The two devices: RDP_TEST_DEVICES ("rxe0, rxe1" in the rxe lane), or two shm names. */
static const char *
test_devices(void)
{
	const char *d = getenv("RDP_TEST_DEVICES");

	return d != NULL && d[0] != '\0' ? d : "nic-a, nic-b";
}

static struct rdp_cfg *
devices_cfg(bool srq)
{
	struct rdp_cfg *cfg = stream_cfg(rdp_test_driver_or("shm"), DEV_MAX_MSG);

	stream_cfg_env(cfg);
	RDP_ASSERT_MSG(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "device", test_devices(), "test") == 0,
		       "%s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "rndv_threshold", "16384", "test"), 0);
	if (srq) {
		RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "srq", "on", "test"), 0);
		RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "srq_size", "128", "test"), 0);
		RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "srq_floor", "4", "test"), 0);
		RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "srq_lease_max", "32", "test"), 0);
	}
	RDP_ASSERT_MSG(rdp_cfg_validate(cfg) == 0, "%s", rdp_err_msg());
	return cfg;
}

/* Load @p text as file @p name (then deleted). */
static struct rdp_cfg *
cfg_text(const char *name, const char *text)
{
	struct rdp_cfg *cfg;
	FILE *f = fopen(name, "w");

	RDP_ASSERT(f != NULL);
	RDP_ASSERT(fputs(text, f) >= 0);
	RDP_ASSERT(fclose(f) == 0);
	cfg = rdp_cfg_load(name);
	RDP_ASSERT(unlink(name) == 0);
	return cfg;
}

static void
assert_side_clean(struct stream_side *s)
{
	struct rdp_ep_stats st;

	RDP_ASSERT_MSG(s->error[0] == '\0', "%s: %s", s->name, s->error);
	RDP_ASSERT_EQ(s->done, s->count);
	RDP_ASSERT_EQ(s->failed, 0);
	RDP_ASSERT_EQ(s->received, s->expect);
	rdp_ep_stats_get(stream_ep(s), &st);
	RDP_ASSERT_EQ(st.enomem, 0);
	RDP_ASSERT_EQ(st.rnr, 0);
	RDP_ASSERT_EQ(st.msgs_received, s->expect);
}

/*
 * Pair 0 on device 0, pair 1 on device 1, pair 2 from a client on device 1
 * to a server on device 0: three checked two-way streams at once, every
 * endpoint on lcore 1.
 */
static int
streams_on_two_devices(bool pipeline, bool srq)
{
	static const unsigned int srv_dev[DEV_PAIRS] = { 0, 1, 0 }, cli_dev[DEV_PAIRS] = { 0, 1, 1 };
	static const char *const names[2 * DEV_PAIRS] = { "server0", "client0", "server1",
							  "client1", "server2", "client2" };
	struct stream_side *sides[2 * DEV_PAIRS];
	struct rdp_ep_params psrv, pcli;
	uint64_t count = rdp_test_env_u64("RDP_DEVICES_COUNT", 3000);
	struct rdp_cfg *cfg;
	const char *dev[2];
	char addr[64];
	unsigned int i;
	int port;

	rdp_test_eal_init("0-1");
	cfg = devices_cfg(srq);
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	printf("%s\n", rdp_driver_info());
	RDP_ASSERT_EQ(rdp_device_count(), 2);
	dev[0] = rdp_device_name(0);
	dev[1] = rdp_device_name(1);
	RDP_ASSERT(dev[0] != NULL && dev[1] != NULL && strcmp(dev[0], dev[1]) != 0);
	RDP_ASSERT(rdp_device_name(2) == NULL);
	for (i = 0; i < DEV_PAIRS; i++) {
		stream_side_init(&srv[i], names[2 * i], 2 * i + 1, 2 * i + 2, count, DEV_MAX_MSG,
				 16, pipeline);
		stream_side_init(&cli[i], names[2 * i + 1], 2 * i + 2, 2 * i + 1, count,
				 DEV_MAX_MSG, 16, pipeline);
		stream_params(&srv[i], &psrv);
		stream_params(&cli[i], &pcli);
		psrv.lcore = pcli.lcore = 1;
		psrv.device = dev[srv_dev[i]];
		pcli.device = dev[cli_dev[i]];
		port = rdp_listen("127.0.0.1:0", &psrv);
		RDP_ASSERT_MSG(port > 0, "rdp_listen: %s", rdp_err_msg());
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
		RDP_ASSERT_MSG(rdp_connect(addr, &pcli) != NULL, "rdp_connect: %s", rdp_err_msg());
		sides[2 * i] = &srv[i];
		sides[2 * i + 1] = &cli[i];
	}
	if (stream_pump(sides, 2 * DEV_PAIRS, 120) != 0) {
		for (i = 0; i < 2 * DEV_PAIRS; i++)
			if (!stream_finished(sides[i]))
				stream_dump(sides[i]);
		rdp_endpoints_dump(stdout);
		RDP_ASSERT_MSG(false, "the streams did not finish within 120 s");
	}
	for (i = 0; i < DEV_PAIRS; i++) {
		assert_side_clean(&srv[i]);
		assert_side_clean(&cli[i]);
		RDP_ASSERT_MSG(strcmp(rdp_ep_device(stream_ep(&srv[i])), dev[srv_dev[i]]) == 0,
			       "server %u on %s, not %s", i, rdp_ep_device(stream_ep(&srv[i])),
			       dev[srv_dev[i]]);
		RDP_ASSERT_MSG(strcmp(rdp_ep_device(stream_ep(&cli[i])), dev[cli_dev[i]]) == 0,
			       "client %u on %s, not %s", i, rdp_ep_device(stream_ep(&cli[i])),
			       dev[cli_dev[i]]);
		printf("pair %u: server on %s, client on %s: %" PRIu64 " messages each way, "
		       "exact\n", i, dev[srv_dev[i]], dev[cli_dev[i]], count);
	}
	if (srq) {
		/* each device's SRQ on the poller, read by its name: both carried messages */
		struct rdp_srq_stats q[2], dflt;

		for (i = 0; i < 2; i++) {
			RDP_ASSERT_MSG(rdp_lcore_device_srq_stats_get(1, dev[i], &q[i]) == 0, "%s: %s",
				       dev[i], rdp_err_msg());
			printf("lcore 1, %s: SRQ of %u, %u members, %" PRIu64 " grants\n", dev[i],
			       q[i].size, q[i].members, q[i].grants);
			RDP_ASSERT_MSG(q[i].members == 3, "%s's SRQ has %u members, not 3", dev[i],
				       q[i].members);
		}
		RDP_ASSERT_EQ(rdp_lcore_device_srq_stats_get(1, NULL, &dflt), 0);
		RDP_ASSERT_EQ(dflt.members, q[0].members);
		RDP_ASSERT_EQ(rdp_lcore_device_srq_stats_get(1, "no-such-nic", &dflt), -ENODEV);
		RDP_ASSERT(strstr(rdp_err_msg(), "no-such-nic") != NULL);
		RDP_ASSERT_EQ(rdp_lcore_device_srq_stats_get(RTE_MAX_LCORE, dev[0], &dflt), -ENODEV);
	}
	/* a device the process does not have: refused, naming those it has */
	pcli.device = "no-such-nic";
	RDP_ASSERT(rdp_connect("127.0.0.1:9", &pcli) == NULL);
	RDP_ASSERT_EQ(rte_errno, ENODEV);
	RDP_ASSERT_MSG(strstr(rdp_err_msg(), "no device named 'no-such-nic' in this process "
			      "(devices: ") != NULL && strstr(rdp_err_msg(), dev[1]) != NULL,
		       "%s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_listen("127.0.0.1:0", &pcli), -ENODEV);
	for (i = 0; i < DEV_PAIRS; i++) {
		rdp_ep_close(stream_ep(&cli[i]));
		rdp_ep_close(stream_ep(&srv[i]));
	}
	for (i = 0; i < DEV_PAIRS; i++) {
		stream_wait_closed(&cli[i]);
		stream_wait_closed(&srv[i]);
	}
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}

RDP_TEST(e2e, devices_two_in_one_process_carry_streams_each_on_its_own_rtc)
{
	return streams_on_two_devices(false, false);
}

RDP_TEST(e2e, devices_two_in_one_process_carry_streams_each_on_its_own_pipeline)
{
	return streams_on_two_devices(true, false);
}

RDP_TEST(e2e, devices_two_in_one_process_each_with_its_own_srq)
{
	return streams_on_two_devices(false, true);
}

/*
 * Which of @p addrs the kernel's route to @p dst leaves from (a UDP socket
 * connected there sends nothing), -1 when none.
 */
static int
route_source_index(const char *dst, const char *const *addrs, unsigned int n)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(9) }, src;
	socklen_t sl = sizeof(src);
	char got[INET_ADDRSTRLEN];
	unsigned int i;
	int fd;

	RDP_ASSERT(inet_pton(AF_INET, dst, &sa.sin_addr) == 1);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	RDP_ASSERT(fd >= 0);
	RDP_ASSERT(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	RDP_ASSERT(getsockname(fd, (struct sockaddr *)&src, &sl) == 0);
	close(fd);
	RDP_ASSERT(inet_ntop(AF_INET, &src.sin_addr, got, sizeof(got)) != NULL);
	for (i = 0; i < n; i++)
		if (strcmp(addrs[i], got) == 0)
			return (int)i;
	return -1;
}

/*
 * In the rxe guest (rxe0 on 10.77.0.1, rxe1 on 10.77.0.2; RDP_TEST_DEVICES
 * and RDP_TEST_DEVICE_ADDRS say otherwise): with no device in the
 * parameters, an endpoint takes the device whose interface holds its end
 * of the route: the listener on 0.0.0.0 serves a peer that reached
 * 10.77.0.1 on rxe0 and one that reached 10.77.0.2 on rxe1, and a client
 * takes the device of the address its route leaves from (the lane routes
 * each address across the wire, from the other NIC). Streams exact.
 */
RDP_TEST(rxe, devices_route_picks_the_device_whose_address_the_peer_reached)
{
	const char *addrs_env = getenv("RDP_TEST_DEVICE_ADDRS");
	char addrs[128], *save = NULL, *a;
	const char *list[2] = { NULL, NULL };
	struct stream_side *sides[4];
	struct rdp_ep_params psrv, pcli;
	struct rdp_cfg *cfg;
	unsigned int d = 0, i;
	char hp[96];
	int port;

	snprintf(addrs, sizeof(addrs), "%s", addrs_env != NULL ? addrs_env :
		 "10.77.0.1,10.77.0.2");
	rdp_test_eal_init("0-1");
	cfg = stream_cfg("verbs", DEV_MAX_MSG);
	stream_cfg_env(cfg);
	RDP_ASSERT_MSG(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "device",
				   getenv("RDP_TEST_DEVICES") != NULL ? getenv("RDP_TEST_DEVICES") :
				   "rxe0, rxe1", "test") == 0, "%s", rdp_err_msg());
	/* rxe under emulation: pollers that sleep when idle, patient handshakes */
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "idle_sleep_us", "20", "test"), 0);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "handshake_timeout_ms", "20000", "test"), 0);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "connect_timeout_ms", "20000", "test"), 0);
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	printf("%s\n", rdp_driver_info());
	RDP_ASSERT_EQ(rdp_device_count(), 2);
	for (a = strtok_r(addrs, ", ", &save); a != NULL && d < 2;
	     a = strtok_r(NULL, ", ", &save), d++) {
		list[d] = a;
		stream_side_init(&srv[d], d ? "server1" : "server0", 2 * d + 1, 2 * d + 2, 500,
				 DEV_MAX_MSG, 8, false);
		stream_side_init(&cli[d], d ? "client1" : "client0", 2 * d + 2, 2 * d + 1, 500,
				 DEV_MAX_MSG, 8, false);
		stream_params(&srv[d], &psrv);
		stream_params(&cli[d], &pcli);
		port = rdp_listen("0.0.0.0:0", &psrv);
		RDP_ASSERT_MSG(port > 0, "rdp_listen: %s", rdp_err_msg());
		snprintf(hp, sizeof(hp), "%s:%d", a, port);
		RDP_ASSERT_MSG(rdp_connect(hp, &pcli) != NULL, "rdp_connect %s: %s", hp,
			       rdp_err_msg());
		sides[2 * d] = &srv[d];
		sides[2 * d + 1] = &cli[d];
	}
	RDP_ASSERT_EQ(d, 2);
	RDP_ASSERT_MSG(stream_pump(sides, 4, 120) == 0, "the streams did not finish");
	for (i = 0; i < 2; i++) {
		int src = route_source_index(list[i], list, 2);

		assert_side_clean(&srv[i]);
		assert_side_clean(&cli[i]);
		printf("to %s: server on %s, client on %s (its route leaves from %s)\n", list[i],
		       rdp_ep_device(stream_ep(&srv[i])), rdp_ep_device(stream_ep(&cli[i])),
		       src >= 0 ? list[src] : "an address of neither");
		/* the server where the peer reached it; the client where its route leaves */
		RDP_ASSERT_STR_EQ(rdp_ep_device(stream_ep(&srv[i])), rdp_device_name(i));
		RDP_ASSERT_MSG(src >= 0, "the route to %s leaves from neither device's address",
			       list[i]);
		RDP_ASSERT_STR_EQ(rdp_ep_device(stream_ep(&cli[i])), rdp_device_name((unsigned)src));
	}
	for (i = 0; i < 2; i++) {
		rdp_ep_close(stream_ep(&cli[i]));
		rdp_ep_close(stream_ep(&srv[i]));
	}
	for (i = 0; i < 2; i++) {
		stream_wait_closed(&cli[i]);
		stream_wait_closed(&srv[i]);
	}
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}

/*
 * The configuration's device keys: a list opens each device once, an
 * lcore's `device` is its endpoints' default, more than four are refused,
 * and shm takes names but no port.
 */
RDP_TEST(eal, devices_from_the_configuration_each_once_with_the_lcore_default)
{
	struct rdp_cfg_device devs[4];
	uint8_t lcore_dev[RTE_MAX_LCORE];
	struct rdp_cfg *cfg;
	int n;

	cfg = cfg_text("dev.ini", "[global]\ndriver = shm\ndevice = a, b\n"
				  "[lcore.1]\ndevice = b\n[lcore.2]\ndevice = c, a\n");
	RDP_ASSERT_MSG(cfg != NULL, "%s", rdp_err_msg());
	n = rdp_cfg_devices(cfg, devs, RTE_DIM(devs), lcore_dev);
	RDP_ASSERT_MSG(n == 3, "%d devices: %s", n, n < 0 ? rdp_err_msg() : "");
	RDP_ASSERT_MSG(strcmp(devs[0].spec, "shm:device=a") == 0, "%s", devs[0].spec);
	RDP_ASSERT_MSG(strcmp(devs[1].spec, "shm:device=b") == 0, "%s", devs[1].spec);
	RDP_ASSERT_MSG(strcmp(devs[2].spec, "shm:device=c") == 0, "%s", devs[2].spec);
	RDP_ASSERT_EQ(devs[2].section, 2);
	RDP_ASSERT_EQ(lcore_dev[1], 1);
	RDP_ASSERT_EQ(lcore_dev[2], 2);
	rdp_cfg_free(cfg);
	cfg = cfg_text("dev.ini", "[global]\ndevice = rxe0\n[lcore.1]\nport = 2\n");
	RDP_ASSERT_MSG(cfg != NULL, "%s", rdp_err_msg());
	n = rdp_cfg_devices(cfg, devs, RTE_DIM(devs), lcore_dev);
	RDP_ASSERT_EQ(n, 2);
	RDP_ASSERT_MSG(strcmp(devs[0].spec, "verbs:device=rxe0") == 0, "%s", devs[0].spec);
	RDP_ASSERT_MSG(strcmp(devs[1].spec, "verbs:device=rxe0,port=2") == 0, "%s",
		       devs[1].spec);
	rdp_cfg_free(cfg);
	cfg = cfg_text("dev.ini", "[global]\ndriver = shm\ndevice = a, b, c, d, e\n");
	RDP_ASSERT_MSG(cfg != NULL, "%s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_cfg_devices(cfg, devs, RTE_DIM(devs), NULL), -EINVAL);
	RDP_ASSERT_MSG(strcmp(rdp_err_msg(), "dev.ini:3: [global] device = a, b, c, d, e: more "
			      "than 4 devices in one process") == 0, "%s", rdp_err_msg());
	rdp_cfg_free(cfg);
	cfg = cfg_text("dev.ini", "[global]\ndriver = shm\n[lcore.1]\nport = 2\n");
	RDP_ASSERT_MSG(cfg != NULL, "%s", rdp_err_msg());
	RDP_ASSERT_EQ(rdp_cfg_devices(cfg, devs, RTE_DIM(devs), NULL), -EINVAL);
	RDP_ASSERT_MSG(strstr(rdp_err_msg(), "dev.ini:4: [lcore.1] port = 2: a key of RDMA "
			      "devices, but driver = shm has none to choose") != NULL, "%s",
		       rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}

/*
 * With `driver = auto`, rdp_driver_info() says why the driver was chosen
 * in the words the drivers' probes gave, whole: the banner rdp-perf and
 * rdp-blk print is that line.
 */
RDP_TEST(e2e, driver_info_gives_the_whole_reason_the_driver_was_chosen)
{
	char spec[64], why[256];
	struct rdp_cfg *cfg;

	rdp_test_eal_init("0-1");
	RDP_ASSERT_EQ(rdp_dev_default_spec(spec, sizeof(spec), why, sizeof(why)), 0);
	cfg = rdp_cfg_default();
	RDP_ASSERT(cfg != NULL);
	RDP_ASSERT_EQ(rdp_cfg_set(cfg, RDP_CFG_GLOBAL, "listen", "", "test"), 0);
	RDP_ASSERT_MSG(rdp_init(cfg) == 0, "rdp_init: %s", rdp_err_msg());
	RDP_ASSERT_MSG(strstr(rdp_driver_info(), why) != NULL,
		       "the reason is cut short:\n  driver info: %s\n  the probes said: %s",
		       rdp_driver_info(), why);
	RDP_ASSERT_MSG(rdp_fini() == 0, "rdp_fini: %s", rdp_err_msg());
	rdp_cfg_free(cfg);
	return 0;
}
