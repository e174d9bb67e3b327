// Host copies of stored programs for exec (program_copies.h): where they are made, who may run
// them, and that a set-id program's copy can be kept by nobody.
#include "monitor/service/program_copies.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace amino::monitor::service {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

mode_t ModeOf(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_mode : 0;
}

std::string DirOf(const std::string& path) { return path.substr(0, path.rfind('/')); }

TEST(SetIdCopyModeTest, TheCopyLetsRunItOnlyWhomTheStoredFileLets) {
  const SetId suid{1000, 2000, S_ISUID, 0750};
  // The owner and the group may run it: the stored read and execute bits, with the set-id bit.
  EXPECT_EQ(SetIdCopyMode(suid, schema::Cred::User(1000, 1)), S_ISUID | 0550u);
  EXPECT_EQ(SetIdCopyMode(suid, schema::Cred::User(3000, 2000)), S_ISUID | 0550u);
  EXPECT_EQ(SetIdCopyMode(suid, schema::Cred::User(3000, 1, {7, 2000})), S_ISUID | 0550u);
  // Root runs what it may run.
  EXPECT_EQ(SetIdCopyMode(suid, schema::Cred::Root()), S_ISUID | 0550u);
  // Someone whose class has no execute bit got the permission from a stored ACL the copy does
  // not carry: the copy lets everyone run it (the stored file's check was made).
  EXPECT_EQ(SetIdCopyMode(suid, schema::Cred::User(3000, 1)), S_ISUID | 0555u);
  // Write bits never reach the copy.
  EXPECT_EQ(SetIdCopyMode({0, 0, S_ISGID, 0777}, schema::Cred::User(5, 5)), S_ISGID | 0555u);
  EXPECT_EQ(SetIdCopyMode({0, 0, S_ISUID | S_ISGID, 0711}, schema::Cred::User(0, 0)),
            S_ISUID | S_ISGID | 0511u);
}

TEST(ProgramCopiesTest, APlainCopyKeepsItsNameAndRunsForAnyone) {
  std::string path;
  const std::string script = "#!/bin/sh\nexit 7\n";
  ASSERT_EQ(ProgramCopies::Get().Write(4242, "tool", script, std::nullopt,
                                       schema::Cred::User(1000, 1000), true, &path),
            0);
  EXPECT_EQ(path.substr(path.rfind('/') + 1), "tool");  // the process is named after it
  EXPECT_EQ(DirOf(path).substr(DirOf(path).rfind('/') + 1), "4242");
  EXPECT_EQ(Read(path), script);
  EXPECT_EQ(ModeOf(path) & 07777, 0555u);
  // Its root can be searched, not listed, by the tracees' users.
  EXPECT_EQ(ModeOf(DirOf(DirOf(path))) & 07777, 0711u);

  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    execl(path.c_str(), "tool", nullptr);
    _exit(127);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7);

  RemoveProgramCopy(path);
  EXPECT_NE(access(path.c_str(), F_OK), 0);
}

TEST(ProgramCopiesTest, ACopyOfAProgramTheCallerMayOnlyRunCannotBeRead) {
  std::string path;
  ASSERT_EQ(ProgramCopies::Get().Write(4343, "secret",
                                       "\x7f"
                                       "ELF",
                                       std::nullopt, schema::Cred::User(1000, 1000), false, &path),
            0);
  EXPECT_EQ(ModeOf(path) & 07777, 0111u);
  RemoveProgramCopy(path);
}

TEST(ProgramCopiesTest, ThreadsCopyingOneNameStayApartAndALeftoverIsReplaced) {
  std::string a, b, again;
  const schema::Cred me = schema::Cred::User(getuid(), getgid());
  ASSERT_EQ(ProgramCopies::Get().Write(1, "same", "one", std::nullopt, me, true, &a), 0);
  ASSERT_EQ(ProgramCopies::Get().Write(2, "same", "two", std::nullopt, me, true, &b), 0);
  EXPECT_NE(a, b);
  EXPECT_EQ(Read(a), "one");
  EXPECT_EQ(Read(b), "two");
  // A copy an exec left behind (the thread changed its ids and could not remove it) is
  // replaced, not an error.
  ASSERT_EQ(ProgramCopies::Get().Write(1, "same", "three", std::nullopt, me, true, &again), 0);
  EXPECT_EQ(again, a);
  EXPECT_EQ(Read(a), "three");
  RemoveProgramCopy(a);
  RemoveProgramCopy(b);
}

TEST(ProgramCopiesTest, ASetIdCopyIsOwnedAsStoredInADirectoryOnlyTheMonitorOpens) {
  if (geteuid() != 0) GTEST_SKIP() << "set-id copies are kept only by a monitor running as root";
  std::string path;
  const SetId setid{1234, 5678, S_ISUID | S_ISGID, 0755};
  ASSERT_EQ(ProgramCopies::Get().Write(77, "su-like", "#!/bin/sh\n", setid,
                                       schema::Cred::User(1234, 1), true, &path),
            0);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(st.st_gid, 5678u);
  EXPECT_EQ(st.st_mode & 07777, S_ISUID | S_ISGID | 0555u);  // chown first kept the bits
  // Nobody else can reach the copy to rename it out or keep a link to it.
  const std::string dir = DirOf(path);
  EXPECT_EQ(dir.substr(dir.rfind('/') + 1, 6), "setid.");
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 07777, 0700u);

  RemoveProgramCopy(path);
  EXPECT_NE(access(path.c_str(), F_OK), 0);
  EXPECT_NE(access(dir.c_str(), F_OK), 0);  // its directory goes with it
}

}  // namespace
}  // namespace amino::monitor::service
