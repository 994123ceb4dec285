/* systemd's readiness notification (the sd_notify protocol, without libsystemd): a daemon
 * started by a unit of Type=notify tells systemd it serves by sending the datagram "READY=1" to
 * the socket named in $NOTIFY_SOCKET. */
#ifndef URSA_NOTIFY_H
#define URSA_NOTIFY_H

/* Sends "READY=1" if $NOTIFY_SOCKET is set (a path, or "@name" for the abstract namespace).
 * Returns 1 if sent, 0 if there is no socket to tell, -1 if sending failed (errno set). */
int notify_ready(void);

#endif
