/* ursa-scheduler on the daemon skeleton (ursa/daemon.h): runs until SIGINT/SIGTERM or until
 * the lease is lost (then exits 1 so the supervisor restarts it as a standby). */
#include <stdatomic.h>
#include <stdlib.h>
#include "daemon.h"
#include "ursa/daemon.h"

struct sched_main {
	struct sched_options o;
	_Atomic(struct sched_daemon *) d; /* once started: /metrics reads it from the health server */
};

static int check(void *ud)
{
	return sched_options_check(&((struct sched_main *)ud)->o);
}

static int start(void *ud, struct daemon *dm, char **ret_err)
{
	struct sched_main *m = ud;
	struct sched_daemon *d = sched_daemon_start(&m->o, daemon_health(dm), ret_err);
	atomic_store(&m->d, d);
	return d ? 0 : 1;
}

static bool lost(void *ud)
{
	return sched_daemon_lost(atomic_load(&((struct sched_main *)ud)->d));
}

static void stop(void *ud)
{
	sched_daemon_stop(atomic_load(&((struct sched_main *)ud)->d));
}

static void metrics(void *ud, struct buf *out)
{
	struct sched_daemon *d = atomic_load(&((struct sched_main *)ud)->d);
	if (d)
		sched_daemon_metrics(d, out);
}

int main(int argc, char **argv)
{
	static struct sched_main m;
	int n;
	struct opt *flags = sched_options_flags(&m.o, &n);
	const struct daemon_def def = {
		.program = "ursa-scheduler", .summary = sched_summary, .component = "ursa-scheduler",
		.opts = flags, .nopts = n, .health_example = "127.0.0.1:10259", .metrics = metrics,
		.check = check, .start = start, .lost = lost, .stop = stop,
	};
	int rc = daemon_main(&def, &m, argc, argv);
	free(flags);
	return rc;
}
