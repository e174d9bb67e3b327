// die exit N | die signal NAME: ends with exit status N, or killed by signal NAME (TERM, KILL,
// SEGV, ABRT), the way a crashing program does (SEGV by a real invalid write).
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: die exit N | die signal TERM|KILL|SEGV|ABRT\n");
    return 2;
  }
  printf("about to %s %s\n", argv[1], argv[2]);
  fflush(stdout);
  if (strcmp(argv[1], "exit") == 0) exit(atoi(argv[2]));
  if (strcmp(argv[2], "SEGV") == 0) {
    int* volatile p = NULL;  // volatile: the compiler cannot see the null pointer
    *p = 1;
  }
  if (strcmp(argv[2], "TERM") == 0) kill(getpid(), SIGTERM);
  if (strcmp(argv[2], "KILL") == 0) kill(getpid(), SIGKILL);
  if (strcmp(argv[2], "ABRT") == 0) abort();
  pause();
  return 1;
}
