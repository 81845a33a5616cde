/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rdp_common.h"
#include "rdp_why.h"

static __thread char err_msg[RDP_ERR_MSG_MAX];
__thread char rdp_thread_anchor_;

int
rdp_err_vset(int err, const char *fmt, va_list ap)
{
	char msg[RDP_ERR_MSG_MAX];

	/* format aside: the arguments may quote the previous detail */
	vsnprintf(msg, sizeof(msg), fmt, ap);
	memcpy(err_msg, msg, sizeof(err_msg));
	rte_errno = err;
	return -err;
}

int
rdp_err_set(int err, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = rdp_err_vset(err, fmt, ap);
	va_end(ap);
	return ret;
}

const char *
rdp_err_msg(void)
{
	return err_msg;
}

void
rdp_err_clear(void)
{
	err_msg[0] = '\0';
}

int
rdp_why(char *why, size_t len, int err, const char *fmt, ...)
{
	va_list ap;

	if (len > 0) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return -err;
}
