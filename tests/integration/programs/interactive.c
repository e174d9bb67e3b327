// A small interactive program: prints "ready", then echoes each line read from the terminal as
// "got: LINE" until end of input. Keyboard signals keep their default actions.
#include <stdio.h>
#include <string.h>

int main(void) {
  char line[512];
  printf("ready\n");
  fflush(stdout);
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\n")] = 0;
    printf("got: %s\n", line);
    fflush(stdout);
  }
  printf("eof\n");
  return 0;
}
