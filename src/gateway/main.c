/* ursa-gateway on the daemon skeleton (ursa/daemon.h): the region's front door (gw.h).
 * Partitions are recorded in its etcd by `ursactl register --gateway-etcd`. With --workers N
 * the master (workers.c) forks N workers, each of which runs the skeleton's daemon_serve. */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gw.h"
#include "ursa/daemon.h"
#include "ursa/log.h"
#include "ursa/notify.h"

struct gw_main {
	struct gw_options o;
	struct daemon *dm;
	int ready_fd; /* a worker's pipe to its master, -1: tell systemd */
	struct gateway *g;
};

static struct gw_main gm = { .ready_fd = -1 };

static int check(void *ud)
{
	return gw_options_check(&((struct gw_main *)ud)->o);
}

static int start(void *ud, struct daemon *dm, char **ret_err)
{
	struct gw_main *m = ud;
	m->g = gateway_start(&m->o, ret_err);
	return m->g ? 0 : 1;
}

static void ready(void *ud)
{
	struct gw_main *m = ud;
	if (m->ready_fd < 0) {
		notify_ready();
		return;
	}
	if (write(m->ready_fd, "r", 1) != 1)
		log_warn("cannot tell the master this worker serves", "error=\"%s\"", strerror(errno));
	close(m->ready_fd);
	m->ready_fd = -1;
}

static void stop(void *ud)
{
	struct gw_main *m = ud;
	log_info("stopping", "streams=%ld upstream_connections_made=%ld", upstream_streams_open(),
		 upstream_connections_made());
	/* libmicrohttpd aborts when stopped with suspended (streaming) connections: with streams
	 * open, leave without the orderly stop (the kernel closes every socket). */
	if (upstream_streams_open() > 0)
		_exit(0);
	gateway_stop(m->g);
}

/* One worker of --workers (forked by the master, signals still blocked): serves like a single
 * gateway but tells the master, not systemd, that it serves. */
static int serve_worker(const struct gw_options *o, int ready_fd)
{
	(void)o;
	gm.ready_fd = ready_fd;
	return daemon_serve(gm.dm);
}

static int run(void *ud, struct daemon *dm)
{
	struct gw_main *m = ud;
	m->dm = dm;
	return m->o.workers > 1 ? gw_workers_run(&m->o, serve_worker) : daemon_serve(dm);
}

/* A proxied answer's body is allocated when its head arrives and freed once the client has it,
 * thousands of times a second on the plain loop's thread. With glibc's defaults a body over
 * 128 KB is mmapped and one under it, freed at the top of the thread's arena, is handed back
 * with madvise: either way the next answer faults its pages in again and the kernel zeroes
 * them (17 % of the CPU of a 100-pod LIST, docs/benchmarks.md). Keep up to 8 MB at an arena's
 * top and allocate bodies up to 4 MB from the heap. */
static void keep_heap(void)
{
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
	mallopt(M_TRIM_THRESHOLD, 8 << 20);
}

int main(int argc, char **argv)
{
	int n;
	keep_heap();
	struct opt *flags = gw_options_flags(&gm.o, &n);
	const struct daemon_def def = {
		.program = "ursa-gateway", .summary = gw_summary, .component = "ursa-gateway", .opts = flags,
		.nopts = n, .check = check, .start = start, .ready = ready, .stop = stop, .run = run,
	};
	int rc = daemon_main(&def, &gm, argc, argv);
	free(flags);
	return rc;
}
