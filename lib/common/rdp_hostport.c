/* SPDX-License-Identifier: BSD-3-Clause */
/* "HOST:PORT" as rdmaplane reads it, for the configuration and the endpoints alike. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "rdp_hostport.h"
#include "rdp_why.h"

static bool
host_name_ok(const char *h, size_t n)
{
	size_t i, label = 0;

	if (n == 0 || n > 253)
		return false;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)h[i];

		if (c == '.') {
			if (label == 0 || h[i - 1] == '-')
				return false;
			label = 0;
		} else if (isalnum(c) || (c == '-' && label > 0)) {
			if (++label > 63)
				return false;
		} else {
			return false;
		}
	}
	return label > 0 && h[n - 1] != '-';
}

/* Is the @p n characters at @p h an address of family @p af? */
static bool
addr_ok(int af, const char *h, size_t n)
{
	char addr[INET6_ADDRSTRLEN + 1];
	unsigned char bin[sizeof(struct in6_addr)];

	if (n >= sizeof(addr))
		return false;
	memcpy(addr, h, n);
	addr[n] = '\0';
	return inet_pton(af, addr, bin) == 1;
}

/* A decimal port: digits only, at most 5 of them. */
static int
port_parse(const char *s, unsigned int *port)
{
	unsigned int v = 0;
	size_t i;

	for (i = 0; s[i] != '\0'; i++) {
		if (s[i] < '0' || s[i] > '9' || i >= 5)
			return -EINVAL;
		v = v * 10 + (unsigned int)(s[i] - '0');
	}
	if (i == 0)
		return -EINVAL;
	*port = v;
	return 0;
}

int
rdp_hostport_split(const char *s, unsigned int flags, char *host, size_t host_len,
		   uint16_t *port, char *why, size_t why_len)
{
	bool listen = flags & RDP_HOSTPORT_LISTEN;
	const char *h = s, *colon;
	unsigned int p;
	size_t n;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (close == NULL || close[1] != ':')
			return rdp_why(why, why_len, EINVAL, "expected [IPv6]:PORT");
		h = s + 1;
		n = (size_t)(close - h);
		colon = close + 1;
		if (!addr_ok(AF_INET6, h, n))
			return rdp_why(why, why_len, EINVAL, "'%.*s' is not an IPv6 address", (int)n, h);
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL)
			return rdp_why(why, why_len, EINVAL, "expected HOST:PORT");
		if (strchr(s, ':') != colon)
			return rdp_why(why, why_len, EINVAL, "an IPv6 address needs brackets, as in [::1]:18515");
		n = (size_t)(colon - s);
		if (n == 0 && !listen)
			return rdp_why(why, why_len, EINVAL, "missing host before ':'");
		if (n > 0 && strspn(s, "0123456789.") >= n) {
			if (!addr_ok(AF_INET, h, n))
				return rdp_why(why, why_len, EINVAL, "'%.*s' is not an IPv4 address", (int)n, h);
		} else if (n > 0 && !host_name_ok(h, n)) {
			return rdp_why(why, why_len, EINVAL, "'%.*s' is not a host name "
				    "(letters, digits, '-', '.')", (int)n, h);
		}
	}
	if (port_parse(colon + 1, &p) < 0 || p > 65535 || (p == 0 && !listen))
		return rdp_why(why, why_len, EINVAL, listen ? "port must be an integer in [0, 65535]" :
			    "port must be an integer in [1, 65535]");
	if (host != NULL) {
		if (n >= host_len)
			return -ENOSPC;
		memcpy(host, h, n);
		host[n] = '\0';
	}
	if (port != NULL)
		*port = (uint16_t)p;
	return 0;
}

int
rdp_hostport_parse(const char *s, unsigned int flags, char *host, size_t host_len,
		   uint16_t *port)
{
	char why[128];
	int ret;

	if (s == NULL || host == NULL || port == NULL)
		return rdp_err_set(EINVAL, "rdp_hostport_parse: NULL argument");
	ret = rdp_hostport_split(s, flags, host, host_len, port, why, sizeof(why));
	if (ret == -ENOSPC)
		return rdp_err_set(ENOSPC, "'%s': host longer than %zu characters", s, host_len - 1);
	if (ret < 0)
		return rdp_err_set(EINVAL, "'%s': %s", s, why);
	return 0;
}
