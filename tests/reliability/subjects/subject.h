// Helpers of the reliability subjects: a listening socket, accept, and one HTTP/1.0 exchange with a
// fixed body. Plain libc calls only (the agent sees exactly what a small C service does).
#pragma once
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static inline int subject_listen(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr*)&a, sizeof a) != 0 || listen(fd, 128) != 0) return -1;
  return fd;
}

static inline int subject_accept(int lfd) {
  for (;;) {
    int c = accept(lfd, NULL, NULL);
    if (c >= 0 || errno != EINTR) return c;
  }
}

// Reads the request head (until a blank line, or EOF: a port probe) and answers 200 with `body`, with a
// Content-Length or (until_close) without one: then the body ends when the connection closes.
// Returns 0 after a request, 1 after a probe that sent nothing.
static inline int subject_respond(int c, const char* body, int until_close) {
  char buf[4096];
  size_t got = 0;
  while (got < sizeof buf - 1) {
    ssize_t r = read(c, buf + got, sizeof buf - 1 - got);
    if (r <= 0) break;
    got += (size_t)r;
    buf[got] = 0;
    if (strstr(buf, "\r\n\r\n")) break;
  }
  if (got == 0) return 1;
  char head[256];
  int hl = until_close
               ? snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n")
               : snprintf(head, sizeof head,
                          "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                          strlen(body));
  if (write(c, head, (size_t)hl) != hl) return -1;
  size_t bl = strlen(body);
  if (write(c, body, bl) != (ssize_t)bl) return -1;
  return 0;
}

static inline int subject_serve(int c, const char* body) { return subject_respond(c, body, 0); }
