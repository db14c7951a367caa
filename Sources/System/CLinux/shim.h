// Linux-only headers that Swift's Glibc module leaves out: epoll, eventfd, timerfd.
#ifndef HERALD_CLINUX_SHIM_H
#define HERALD_CLINUX_SHIM_H
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
#include <sys/syscall.h>

static inline int clinux_errno(void) { return errno; }
// accept4 is declared only under _GNU_SOURCE, and defining that here would give fd_set a different
// member name than Swift's Glibc module sees (a module-definition clash). Go through syscall(2) instead.
static inline int clinux_accept4(int fd, int flags) { return (int)syscall(SYS_accept4, fd, NULL, NULL, flags); }
#include <stdio.h>
// stdout is a C global that Swift 6 will not touch from main; line-buffer it here so piped output streams.
static inline void clinux_line_buffer_stdout(void) { setvbuf(stdout, NULL, _IOLBF, 0); }
#endif
