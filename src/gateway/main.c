/* ursa-gateway: the region's front door (gw.h). Partitions are recorded in its etcd by
 * `ursactl register --gateway-etcd`. */
#include <errno.h>
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

/* Serves until SIGINT or SIGTERM (blocked by main): this process alone, or one worker of
 * --workers (workers.c), which reports to its master through ready_fd instead of to systemd. */
static int serve(const struct gw_options *o, int ready_fd)
{
	char *err = NULL;
	struct gateway *g = gateway_start(o, &err);
	if (!g) {
		log_error("cannot start", "error=\"%s\"", err ? err : "");
		free(err);
		return 1;
	}
	if (ready_fd >= 0) {
		if (write(ready_fd, "r", 1) != 1)
			log_warn("cannot tell the master this worker serves", "error=\"%s\"", strerror(errno));
		close(ready_fd);
	} else {
		notify_ready();
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
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

int main(int argc, char **argv)
{
	struct gw_options o;
	if (gw_options_parse(&o, argc, argv) != 0)
		return 2;
	log_set_component("ursa-gateway");
	log_set_level_name(o.log_level);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGPIPE);
	if (o.workers > 1)
		sigaddset(&set, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	return o.workers > 1 ? gw_workers_run(&o, serve) : serve(&o, -1);
}
