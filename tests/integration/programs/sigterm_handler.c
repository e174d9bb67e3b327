// sigterm_handler PIDFILE: writes its pid to PIDFILE, then waits; on SIGTERM it writes
// "got SIGTERM" to term.txt and exits with status 7.
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void on_term(int sig) {
  (void)sig;
  int fd = open("term.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const char msg[] = "got SIGTERM\n";
  if (fd >= 0 && write(fd, msg, sizeof msg - 1) < 0) _exit(9);
  _exit(7);
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_term;
  sigaction(SIGTERM, &sa, NULL);
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
  FILE* f = fopen(tmp, "w");
  if (!f) return 3;
  fprintf(f, "%d\n", getpid());
  fclose(f);
  rename(tmp, argv[1]);  // the pid file appears complete
  for (int i = 0; i < 600; ++i) sleep(1);
  return 0;
}
