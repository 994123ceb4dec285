/* ursa-scheduler: parse flags, start the scheduler, run until SIGINT/SIGTERM or until the
 * lease is lost (then exit 1 so the supervisor restarts it as a standby). */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "daemon.h"
#include "ursa/log.h"
#include "ursa/notify.h"

int main(int argc, char **argv)
{
	struct sched_options o;
	char *err = NULL;
	if (sched_options_parse(&o, argc, argv) != 0)
		return 2;
	log_set_component("ursa-scheduler");
	log_set_level_name(o.log_level);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* every thread inherits the mask */
	struct sched_daemon *d = sched_daemon_start(&o, &err);
	if (!d) {
		log_error("cannot start", "error=\"%s\"", err ? err : "");
		free(err);
		return 1;
	}
	notify_ready(); /* started: leader or standby */
	struct timespec tick = { 0, 200 * 1000 * 1000 };
	int sig = 0;
	while (!sched_daemon_lost(d)) {
		sig = sigtimedwait(&set, NULL, &tick);
		if (sig == SIGINT || sig == SIGTERM)
			break;
	}
	bool lost = sched_daemon_lost(d);
	log_info("shutting down", "signal=%d lost_lease=%s", sig > 0 ? sig : 0, lost ? "true" : "false");
	sched_daemon_stop(d);
	return lost ? 1 : 0;
}
