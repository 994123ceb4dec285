/* ursa-gateway: the region's front door (gw.h). Partitions are recorded in its etcd by
 * `ursactl register --gateway-etcd`. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gw.h"
#include "ursa/log.h"
#include "ursa/notify.h"
#include "ursa/options.h"

static enum log_level level_of(const char *s)
{
	if (strcmp(s, "debug") == 0)
		return LOG_DEBUG;
	if (strcmp(s, "warn") == 0)
		return LOG_WARN;
	if (strcmp(s, "error") == 0)
		return LOG_ERROR;
	return LOG_INFO;
}

int main(int argc, char **argv)
{
	struct gw_options o;
	char *err = NULL;
	if (gw_options_parse(&o, argc, argv) != 0)
		return 2;
	log_set_component("ursa-gateway");
	log_set_level(level_of(o.log_level));
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	struct gateway *g = gateway_start(&o, &err);
	if (!g) {
		log_error("cannot start", "error=\"%s\"", err ? err : "");
		free(err);
		return 1;
	}
	notify_ready();
	int sig;
	do {
		sig = sigwaitinfo(&set, NULL);
	} while (sig != SIGINT && sig != SIGTERM);
	log_info("shutting down", "signal=%d streams=%ld upstream_connections_made=%ld", sig, upstream_streams_open(),
		 upstream_connections_made());
	/* libmicrohttpd aborts when stopped with suspended (streaming) connections: with streams
	 * open, leave without the orderly stop (the kernel closes every socket). */
	if (upstream_streams_open() > 0)
		_exit(0);
	gateway_stop(g);
	return 0;
}
