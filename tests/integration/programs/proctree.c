// proctree MODE: process-tree shapes a monitor must follow.
//   fork         children and grandchildren each writing a file, reaped with waitpid
//   vfork        vfork + exec, and vfork + _exit
//   clone3       a raw clone3() child and pthreads (clone3 in glibc) doing file I/O
//   orphan       a grandchild that outlives its parent and writes orphan.txt 500 ms later
//   exec-thread  a thread that is not the leader calls execve
#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char* what) {
  perror(what);
  exit(100);
}

static void write_file(const char* name, const char* text) {
  int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die(name);
  if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) die("write");
  close(fd);
}

static int reap(pid_t pid) {
  int status;
  if (waitpid(pid, &status, 0) != pid) die("waitpid");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int do_fork(void) {
  pid_t kids[4];
  for (int i = 0; i < 4; ++i) {
    fflush(stdout);
    kids[i] = fork();
    if (kids[i] < 0) die("fork");
    if (kids[i] == 0) {
      char name[32], text[64];
      snprintf(name, sizeof name, "child-%d.txt", i);
      snprintf(text, sizeof text, "child %d\n", i);
      write_file(name, text);
      pid_t g = fork();
      if (g == 0) {
        snprintf(name, sizeof name, "grandchild-%d.txt", i);
        write_file(name, "grandchild\n");
        _exit(20 + i);
      }
      _exit(reap(g) - 10);
    }
  }
  for (int i = 0; i < 4; ++i) printf("child %d exited %d\n", i, reap(kids[i]));
  return 0;
}

static int do_vfork(void) {
  fflush(stdout);
  pid_t pid = vfork();
  if (pid == 0) {
    char* argv[] = {"/bin/sh", "-c", "echo vfork child > vfork-exec.txt; exit 5", NULL};
    execv(argv[0], argv);
    _exit(127);
  }
  printf("vfork+exec exited %d\n", reap(pid));
  pid = vfork();
  if (pid == 0) _exit(6);
  printf("vfork+_exit exited %d\n", reap(pid));
  return 0;
}

static void* thread_io(void* arg) {
  int id = (int)(intptr_t)arg;
  char name[32], text[64];
  snprintf(name, sizeof name, "thread-%d.txt", id);
  snprintf(text, sizeof text, "thread %d of pid-group\n", id);
  write_file(name, text);
  return NULL;
}

static int do_clone3(void) {
  struct clone_args args;
  memset(&args, 0, sizeof args);
  args.exit_signal = SIGCHLD;
  fflush(stdout);
  long pid = syscall(SYS_clone3, &args, sizeof args);
  if (pid < 0) die("clone3");
  if (pid == 0) {
    write_file("clone3-child.txt", "clone3 child\n");
    _exit(9);
  }
  printf("clone3 child exited %d\n", reap((pid_t)pid));
  pthread_t t[4];
  for (int i = 0; i < 4; ++i) {
    if (pthread_create(&t[i], NULL, thread_io, (void*)(intptr_t)i) != 0) die("pthread_create");
  }
  for (int i = 0; i < 4; ++i) pthread_join(t[i], NULL);
  printf("threads joined\n");
  return 0;
}

static int do_orphan(void) {
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    const pid_t parent = getpid();
    pid_t grandchild = fork();
    if (grandchild == 0) {
      // Leave the caller's pipes so that only the process tree, not open descriptors, keeps a
      // runner waiting.
      int null = open("/dev/null", O_RDWR);
      dup2(null, 0);
      dup2(null, 1);
      dup2(null, 2);
      while (getppid() == parent) usleep(10 * 1000);
      usleep(500 * 1000);
      write_file("orphan.txt", "written by an orphan after its parent exited\n");
      _exit(0);
    }
    _exit(3);
  }
  printf("child exited %d\n", reap(child));
  return 0;
}

static char* self_path;
static pid_t leader;

static void* exec_from_thread(void* arg) {
  (void)arg;
  char pid[32];
  snprintf(pid, sizeof pid, "%d", leader);
  char* argv[] = {self_path, "after-exec", pid, NULL};
  execv("/proc/self/exe", argv);
  die("execv");
  return NULL;
}

__attribute__((noreturn)) static void do_exec_thread(char* self) {
  self_path = self;
  leader = getpid();
  printf("before exec\n");
  fflush(stdout);
  pthread_t t;
  if (pthread_create(&t, NULL, exec_from_thread, NULL) != 0) die("pthread_create");
  for (;;) pause();  // the exec ends this thread
}

static int after_exec(const char* old_pid) {
  // The exec'ing thread took over the process: same pid, a single thread.
  printf("after exec: pid %s, tid %s\n", getpid() == atoi(old_pid) ? "unchanged" : "CHANGED",
         gettid() == getpid() ? "is the leader" : "NOT the leader");
  write_file("after-exec.txt", "exec from a thread\n");
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc >= 2 && strcmp(argv[1], "fork") == 0) return do_fork();
  if (argc >= 2 && strcmp(argv[1], "vfork") == 0) return do_vfork();
  if (argc >= 2 && strcmp(argv[1], "clone3") == 0) return do_clone3();
  if (argc >= 2 && strcmp(argv[1], "orphan") == 0) return do_orphan();
  if (argc >= 2 && strcmp(argv[1], "exec-thread") == 0) do_exec_thread(argv[0]);
  if (argc == 3 && strcmp(argv[1], "after-exec") == 0) return after_exec(argv[2]);
  fprintf(stderr, "usage: proctree fork|vfork|clone3|orphan|exec-thread\n");
  return 2;
}
