// Passes descriptors over a UNIX socket (SCM_RIGHTS) to a child: a file the parent then unlinks,
// which the child still reads through the received descriptor, and a file the child writes.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char* what) {
  perror(what);
  exit(100);
}

static void send_fd(int sock, int fd, char tag) {
  char buf[CMSG_SPACE(sizeof(int))];
  memset(buf, 0, sizeof buf);
  struct iovec iov = {&tag, 1};
  struct msghdr msg = {0};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = buf;
  msg.msg_controllen = sizeof buf;
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof fd);
  if (sendmsg(sock, &msg, 0) != 1) die("sendmsg");
}

static int recv_fd(int sock, char* tag) {
  char buf[CMSG_SPACE(sizeof(int))];
  struct iovec iov = {tag, 1};
  struct msghdr msg = {0};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = buf;
  msg.msg_controllen = sizeof buf;
  if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1) die("recvmsg");
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (!c || c->cmsg_type != SCM_RIGHTS) {
    fprintf(stderr, "no descriptor received\n");
    exit(101);
  }
  int fd;
  memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

static void child(int sock) {
  char tag;
  int in = recv_fd(sock, &tag);
  struct stat st;
  if (fstat(in, &st) != 0) die("fstat");
  printf("child: got '%c', size %lld, links %lu, mode %o\n", tag, (long long)st.st_size,
         (unsigned long)st.st_nlink, st.st_mode & 07777);
  char data[256];
  ssize_t n = pread(in, data, sizeof data - 1, 0);
  if (n < 0) die("pread");
  data[n] = 0;
  printf("child: read %zd bytes: %s", n, data);
  int out = recv_fd(sock, &tag);
  printf("child: got '%c', flags %s\n", tag,
         (fcntl(out, F_GETFL) & O_ACCMODE) == O_WRONLY ? "O_WRONLY" : "other");
  const char msg[] = "written by the child through a passed descriptor\n";
  if (write(out, msg, sizeof msg - 1) != (ssize_t)(sizeof msg - 1)) die("write");
  close(in);
  close(out);
  fflush(stdout);
  _exit(0);
}

int main(void) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) die("socketpair");
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(sv[0]);
    child(sv[1]);
  }
  close(sv[1]);
  int in = open("secret.txt", O_RDONLY);
  if (in < 0) die("open secret.txt");
  if (unlink("secret.txt") != 0) die("unlink");
  send_fd(sv[0], in, 'r');
  close(in);
  int out = open("from-child.txt", O_WRONLY | O_CREAT | O_TRUNC, 0640);
  if (out < 0) die("open from-child.txt");
  send_fd(sv[0], out, 'w');
  close(out);
  int status;
  waitpid(pid, &status, 0);
  printf("parent: child exited %d\n", WEXITSTATUS(status));
  printf("parent: secret.txt %s\n", access("secret.txt", F_OK) == 0 ? "exists" : "is gone");
  return 0;
}
