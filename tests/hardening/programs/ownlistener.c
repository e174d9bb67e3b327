// Installs a seccomp filter of its own that sends openat to a listener (SECCOMP_RET_USER_NOTIF),
// answers each notification from a second thread with SECCOMP_USER_NOTIF_FLAG_CONTINUE (the
// kernel then runs the call as made, consulting no other filter), and creates PATH with openat.
// Under a monitor whose own filter a newer one can outrank, the open goes around the monitor.
// Prints "listener=R open=R", R being OK or the errno's name.
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

// OK, or the errno's name.
static const char* Result(long r) { return r >= 0 ? "OK" : strerrorname_np(errno); }

static void* Supervise(void* arg) {
  const int listener = *(int*)arg;
  for (;;) {
    struct seccomp_notif req;
    memset(&req, 0, sizeof req);
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) return NULL;
    struct seccomp_notif_resp resp;
    memset(&resp, 0, sizeof resp);
    resp.id = req.id;
    resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    (void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
  }
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: ownlistener PATH\n");
    return 2;
  }
  struct sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 2),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
  };
  struct sock_fprog prog = {sizeof code / sizeof code[0], code};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    perror("prctl");
    return 1;
  }
  // The supervisor thread inherits the filter, but makes no openat.
  static int listener = -1;
  pthread_t supervisor;
  long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
  printf("listener=%s", Result(r));
  if (r >= 0) {
    listener = (int)r;
    pthread_create(&supervisor, NULL, Supervise, &listener);
  }
  int fd = openat(AT_FDCWD, argv[1], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  printf(" open=%s\n", Result(fd));
  fflush(stdout);
  _exit(0);  // the supervisor blocks in its ioctl
}
