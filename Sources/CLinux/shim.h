// Linux-only headers that Swift's Glibc module leaves out: epoll, eventfd, timerfd.
#ifndef HERALD_CLINUX_SHIM_H
#define HERALD_CLINUX_SHIM_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <netdb.h>
#include <fcntl.h>
#include <errno.h>
#include <unistd.h>
#include <pthread.h>
#include <signal.h>

static inline int clinux_errno(void) { return errno; }
static inline int clinux_accept4(int fd, int flags) { return accept4(fd, NULL, NULL, flags); }
#endif
