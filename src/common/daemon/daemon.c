/* The skeleton every daemon runs on (ursa/daemon.h). */
#include "ursa/daemon.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ursa/log.h"
#include "ursa/notify.h"
#include "ursa/xalloc.h"

#define LOST_POLL_MS 200

struct daemon {
	const struct daemon_def *def;
	void *ud;
	const char *log_level, *health_listen;
	sigset_t stop_set;        /* SIGINT, SIGTERM */
	int sig;                  /* the stop signal taken, 0 before one came */
	struct health_server *health;
};

static void on_metrics(void *ud, struct buf *out)
{
	struct daemon *dm = ud;
	if (dm->def->metrics)
		dm->def->metrics(dm->ud, out);
}

/* Takes a pending or arriving stop signal within ms (-1: wait for one); its number or 0. */
static int take_signal(struct daemon *dm, int ms)
{
	int s;
	if (ms < 0) {
		s = sigwaitinfo(&dm->stop_set, NULL);
	} else {
		struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };
		s = sigtimedwait(&dm->stop_set, NULL, &t);
	}
	if (s == SIGINT || s == SIGTERM) {
		dm->sig = s;
		return s;
	}
	return 0;
}

bool daemon_sleep(struct daemon *dm, int ms)
{
	return dm->sig || take_signal(dm, ms < 0 ? 0 : ms) != 0;
}

struct health_server *daemon_health(struct daemon *dm)
{
	return dm->health;
}

void daemon_set_leader(struct daemon *dm, bool leader)
{
	health_set_leader(dm->health, leader);
}

int daemon_serve(struct daemon *dm)
{
	const struct daemon_def *def = dm->def;
	char *err = NULL;
	if (dm->health_listen && *dm->health_listen) {
		dm->health = health_start(dm->health_listen, def->program, on_metrics, dm, &err);
		if (!dm->health) {
			log_error("cannot start", "error=\"--health-listen %s: %s\"", dm->health_listen,
				  err ? err : "cannot listen");
			free(err);
			return 1;
		}
	}
	int rc = def->start(dm->ud, dm, &err);
	if (rc != 0) {
		if (err)
			log_error("cannot start", "error=\"%s\"", err);
		free(err);
		health_stop(dm->health);
		dm->health = NULL;
		return rc;
	}
	if (def->ready)
		def->ready(dm->ud);
	else
		notify_ready(); /* started: serving, or leader or standby */
	bool lost = false;
	while (!dm->sig && !(lost = def->lost && def->lost(dm->ud)))
		take_signal(dm, def->lost ? LOST_POLL_MS : -1);
	lost = lost || (def->lost && def->lost(dm->ud));
	log_info("shutting down", "signal=%d lost_lease=%s", dm->sig, lost ? "true" : "false");
	health_stop(dm->health); /* its scrapes read what stop frees */
	dm->health = NULL;
	def->stop(dm->ud);
	return lost ? 1 : 0;
}

/* The definition's flags, then the skeleton's: --health-listen (if served) and --log-level. */
static struct opt *all_flags(struct daemon *dm, int *ret_n)
{
	const struct daemon_def *def = dm->def;
	int n = def->nopts;
	struct opt *f = xcalloc((size_t)n + 2, sizeof(*f));
	if (n)
		memcpy(f, def->opts, (size_t)n * sizeof(*f));
	if (def->health_example) {
		static char help[256];
		snprintf(help, sizeof(help), HEALTH_LISTEN_HELP("%s"), def->health_example);
		f[n++] = (struct opt){ "health-listen", OPT_STRING, &dm->health_listen, help };
	}
	f[n++] = (struct opt){ "log-level", OPT_STRING, &dm->log_level, "debug, info, warn or error" };
	*ret_n = n;
	return f;
}

int daemon_main(const struct daemon_def *def, void *ud, int argc, char **argv)
{
	for (const struct daemon_command *c = def->commands; c && c->name && argc > 1; c++)
		if (strcmp(argv[1], c->name) == 0)
			return c->main(argc - 1, argv + 1);
	struct daemon dm = { .def = def, .ud = ud, .log_level = "info" };
	int nflags;
	struct opt *flags = all_flags(&dm, &nflags);
	int rc = opts_parse(def->program, def->summary, flags, nflags, argc, argv);
	free(flags);
	if (rc < 0 || (def->check && def->check(ud) != 0))
		return 2;
	log_set_component(def->component);
	log_set_level_name(dm.log_level);
	/* Before any thread starts, so that every thread inherits the mask: the stop signals are
	 * taken by sigwaitinfo here, never delivered to a thread in the middle of something. */
	sigemptyset(&dm.stop_set);
	sigaddset(&dm.stop_set, SIGINT);
	sigaddset(&dm.stop_set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &dm.stop_set, NULL);
	signal(SIGPIPE, SIG_IGN);
	return def->run ? def->run(ud, &dm) : daemon_serve(&dm);
}
