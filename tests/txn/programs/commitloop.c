// commitloop: commits transactions one after another and says so after each, until killed.
//
//   commitloop DIR START COUNT
//       for N = START .. START+COUNT-1: begin; create DIR/c<N> holding "N"; append "N" to
//       DIR/log; amino_commit; then print "committed N" (flushed). What it printed was
//       committed before it was printed, so it must survive the program and the monitor being
//       killed at any moment.
//
// Exit status 0 when all COUNT transactions committed.
#include <stdio.h>
#include <stdlib.h>

#include "amino/amino.h"
#include "txnutil.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: commitloop DIR START COUNT\n");
    return 2;
  }
  set_who("commitloop");
  set_dir(argv[1]);
  const long start = atol(argv[2]), count = atol(argv[3]);
  for (long n = start; n < start + count; n++) {
    char text[32];
    snprintf(text, sizeof text, "%ld\n", n);
    must(amino_begin(NULL), "amino_begin", "");
    must(write_file(at("c%ld", n), text), "write", at("c%ld", n));
    must(append_file(at("log"), text), "append", at("log"));
    must(amino_commit(), "amino_commit", "");
    printf("committed %ld\n", n);
    fflush(stdout);
  }
  return 0;
}
