// POSIX ACLs (system.posix_acl_access / system.posix_acl_default): the value format and its
// errors, the mode an access ACL sets, chmod, who may set one, permission checks and
// inheritance from default ACLs. Each case runs against the kernel on the scratch directory
// (ext4 or tmpfs mounted with ACLs, as both are by default) and must agree with it.
#include "schema/acl.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "fs_test.h"

namespace amino::schema::testing {
namespace {

constexpr uint16_t U = kAclUserObj, NU = kAclUser, G = kAclGroupObj, NG = kAclGroup, M = kAclMask,
                   O = kAclOther;
constexpr const char* kAccess = "system.posix_acl_access";
constexpr const char* kDefault = "system.posix_acl_default";

// An ACL value as setfacl writes it (version 2), ids verbatim.
std::string Value(std::initializer_list<AclEntry> entries, uint32_t version = 2) {
  std::string out;
  auto put = [&](uint32_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  put(version, 4);
  for (const AclEntry& e : entries) {
    put(e.tag, 2);
    put(e.perm, 2);
    put(e.id, 4);
  }
  return out;
}

std::string Oct(mode_t m) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%o", static_cast<unsigned>(m));
  return buf;
}

class AclTest : public FsTest {
 protected:
  const Cred alice = Cred::User(1000, 1000);
  const Cred bob = Cred::User(1001, 1001, {1000});
  const Cred carol = Cred::User(1002, 1002, {1005});
  const Cred dave = Cred::User(1003, 1003);

  Client As(const Cred& c) { return Client(fs_.get(), c); }

  // getxattr on the host: the value, or "errno:NAME".
  static std::string HostGet(const std::string& p, const char* name) {
    char buf[4096];
    ssize_t n = getxattr(p.c_str(), name, buf, sizeof buf);
    if (n < 0) return "errno:" + ErrName(errno);
    return std::string(buf, static_cast<size_t>(n));
  }
  std::string SchemaGet(const std::string& p, const char* name, const Cred& c = Cred::Root()) {
    Result<std::string> v = As(c).GetXattr(p, name);
    if (!v.ok()) return "errno:" + ErrName(v.status().error());
    return *v;
  }
  // Sets the same ACL value on both sides and expects the same outcome.
  void BothSet(const std::string& p, const char* name, const std::string& value,
               const Cred& c = Cred::Root()) {
    std::string hp = H(p);
    EXPECT_EQ(ErrName(Err(As(c).SetXattr(p, name, value))),
              ErrName(HostErrAs(
                  c, [&] { return setxattr(hp.c_str(), name, value.data(), value.size(), 0); })))
        << p << " " << name;
  }
  // Mode, ACL values and attribute list agree.
  void ExpectSame(const std::string& p) {
    Result<Stat> s = root().LStat(p);
    ASSERT_TRUE(s.ok()) << p;
    struct stat h {};
    ASSERT_EQ(lstat(H(p).c_str(), &h), 0) << p;
    EXPECT_EQ(s->attr.mode, h.st_mode)
        << p << std::oct << " schema 0" << s->attr.mode << " host 0" << h.st_mode;
    for (const char* name : {kAccess, kDefault}) {
      EXPECT_EQ(SchemaGet(p, name), HostGet(H(p), name)) << p << " " << name;
    }
    char buf[4096];
    ssize_t n = listxattr(H(p).c_str(), buf, sizeof buf);
    ASSERT_GE(n, 0);
    std::vector<std::string> host_names;
    for (const char* q = buf; q < buf + n; q += std::strlen(q) + 1) host_names.emplace_back(q);
    Result<std::vector<std::string>> names = root().ListXattr(p);
    ASSERT_TRUE(names.ok());
    std::sort(host_names.begin(), host_names.end());
    std::vector<std::string> mine = *names;
    std::sort(mine.begin(), mine.end());
    EXPECT_EQ(mine, host_names) << p;
  }
};

TEST_F(AclTest, ValuesAndTheirErrorsMatchTheKernel) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f", "", 0640));
  ASSERT_NO_FATAL_FAILURE(ExpectSame("/f"));  // no ACL: ENODATA, nothing listed
  const std::string cases[] = {
      Value({{U, 6, 5}, {G, 4, 5}, {O, 0, 5}}),                                  // minimal
      Value({{U, 7, 5}, {NU, 6, 1234}, {G, 4, 5}, {M, 6, 9}, {O, 1, 5}}),        // extended
      Value({{U, 7, 0}, {G, 4, 0}, {O, 1, 0}}, 1),                               // old version
      std::string("\x02\x00\x00", 3),                                            // short header
      Value({}),                                                                 // no entries
      Value({{U, 7, 0}, {G, 4, 0}, {O, 1, 0}}) + "x",                            // partial entry
      Value({{U, 8, 0}, {G, 4, 0}, {O, 1, 0}}),                                  // bad permission
      Value({{U, 7, 0}, {NU, 6, 9}, {G, 4, 0}, {O, 1, 0}}),                      // named, no mask
      Value({{U, 7, 0}, {NU, 6, 0xffffffff}, {G, 4, 0}, {M, 6, 0}, {O, 1, 0}}),  // invalid uid
      Value({{U, 7, 0}, {0x40, 6, 9}, {G, 4, 0}, {O, 1, 0}}),                    // unknown tag
      Value({{G, 4, 0}, {U, 7, 0}, {O, 1, 0}}),                                  // out of order
      Value({{U, 7, 0}, {G, 4, 0}, {O, 1, 0}, {O, 1, 0}}),                       // two others
      Value({{U, 7, 0}, {G, 4, 0}}),                                             // no other
      Value({{U, 7, 0}, {G, 4, 0}, {NU, 1, 5}, {M, 7, 0}, {O, 1, 0}}),           // user after group
      // The kernel requires neither sorted nor unique named entries.
      Value({{U, 7, 0},
             {NU, 6, 9},
             {NU, 4, 3},
             {NU, 2, 3},
             {G, 4, 0},
             {NG, 6, 9},
             {NG, 1, 2},
             {M, 6, 0},
             {O, 1, 0}}),
      Value({{U, 7, 0}, {G, 4, 0}, {M, 2, 0}, {O, 1, 0}}),  // a mask alone is extended
      "",                                                   // removes
  };
  for (const std::string& v : cases) {
    BothSet("/f", kAccess, v);
    ASSERT_NO_FATAL_FAILURE(ExpectSame("/f"));
  }
  // XATTR_CREATE and XATTR_REPLACE do not apply to ACLs; other system. names are unsupported.
  std::string ext = Value({{U, 7, 0}, {NU, 6, 1234}, {G, 4, 0}, {M, 6, 0}, {O, 1, 0}});
  for (int flags : {XATTR_CREATE, XATTR_REPLACE, XATTR_CREATE}) {
    EXPECT_LINUX(root().SetXattr("/f", kAccess, ext, flags),
                 setxattr(H("/f").c_str(), kAccess, ext.data(), ext.size(), flags));
  }
  EXPECT_LINUX(root().SetXattr("/f", "system.other", "x"),
               setxattr(H("/f").c_str(), "system.other", "x", 1, 0));
  char buf[16];
  EXPECT_LINUX(root().GetXattr("/f", "system.other"),
               getxattr(H("/f").c_str(), "system.other", buf, sizeof buf));
  // Removing works once; removing an ACL that is not there succeeds too.
  EXPECT_LINUX(root().RemoveXattr("/f", kAccess), removexattr(H("/f").c_str(), kAccess));
  EXPECT_LINUX(root().RemoveXattr("/f", kAccess), removexattr(H("/f").c_str(), kAccess));
  ASSERT_NO_FATAL_FAILURE(ExpectSame("/f"));
  Reopen();
  ASSERT_NO_FATAL_FAILURE(ExpectSame("/f"));
}

TEST_F(AclTest, SettingAnAccessAclSetsTheModeAndChangesCtime) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f", "", 0644));
  const timespec before = root().GetStat("/f")->attr.ctime;
  usleep(2000);
  BothSet("/f", kAccess, Value({{U, 6, 0}, {NU, 7, 1000}, {G, 4, 0}, {M, 5, 0}, {O, 0, 0}}));
  ASSERT_NO_FATAL_FAILURE(ExpectSame("/f"));
  const timespec after = root().GetStat("/f")->attr.ctime;
  EXPECT_TRUE(after.tv_sec != before.tv_sec || after.tv_nsec != before.tv_nsec);
  // One the mode can say is not stored: the file has no ACL afterwards.
  BothSet("/f", kAccess, Value({{U, 7, 0}, {G, 5, 0}, {O, 4, 0}}));
  ASSERT_NO_FATAL_FAILURE(ExpectSame("/f"));
  EXPECT_EQ(Perm(*root().GetStat("/f")), 0754u);
}

TEST_F(AclTest, ChmodRewritesTheAcl) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f", "", 0644));
  ASSERT_NO_FATAL_FAILURE(BothDir("/d", 0755));
  BothSet("/f", kAccess, Value({{U, 6, 0}, {NU, 7, 1000}, {G, 4, 0}, {M, 5, 0}, {O, 0, 0}}));
  // Without a mask, chmod's group bits go to the owning group's entry.
  BothSet("/d", kAccess, Value({{U, 7, 0}, {G, 5, 0}, {M, 7, 0}, {O, 5, 0}}));
  for (mode_t m : {0600, 0751, 02710, 0}) {
    for (const char* p : {"/f", "/d"}) {
      ASSERT_TRUE(root().Chmod(p, m).ok());
      ASSERT_EQ(chmod(H(p).c_str(), m), 0);
      ASSERT_NO_FATAL_FAILURE(ExpectSame(p));
    }
  }
  Reopen();
  ASSERT_NO_FATAL_FAILURE(ExpectSame("/f"));
}

TEST_F(AclTest, WhoMaySetAnAclAndWhere) {
  ASSERT_NO_FATAL_FAILURE(BothDir("/d", 0777));
  ASSERT_NO_FATAL_FAILURE(BothFile("/d/f", "", 0666));
  ASSERT_NO_FATAL_FAILURE(BothChown("/d/f", alice.uid, alice.gid));
  ASSERT_NO_FATAL_FAILURE(BothSymlink("f", "/d/l"));
  const std::string min = Value({{U, 7, 0}, {G, 5, 0}, {O, 5, 0}});
  const std::string ext = Value({{U, 7, 0}, {NU, 5, 1003}, {G, 5, 0}, {M, 5, 0}, {O, 5, 0}});
  for (const Cred& c : {dave, alice, Cred::Root()}) {
    BothSet("/d/f", kAccess, "xx", c);          // EINVAL first
    BothSet("/d/f", kAccess, Value({}, 1), c);  // EOPNOTSUPP
    BothSet("/d/f", kDefault, min, c);          // EACCES: not a directory
    BothSet("/d/f", kDefault, "", c);           // nothing to remove, for anyone
    BothSet("/d/f", kAccess, ext, c);           // the owner or root only
    BothSet("/d/f", kAccess, "", c);
    std::string hf = H("/d/f"), hl = H("/d/l");
    EXPECT_EQ(ErrName(Err(As(c).RemoveXattr("/d/f", kAccess))),
              ErrName(HostErrAs(c, [&] { return removexattr(hf.c_str(), kAccess); })));
    // Symbolic links have no ACLs.
    EXPECT_EQ(ErrName(Err(As(c).SetXattr("/d/l", kAccess, min, 0, false))),
              ErrName(HostErrAs(
                  c, [&] { return lsetxattr(hl.c_str(), kAccess, min.data(), min.size(), 0); })));
    char buf[64];
    EXPECT_EQ(
        ErrName(Err(As(c).GetXattr("/d/l", kAccess, false))),
        ErrName(HostErrAs(c, [&] { return lgetxattr(hl.c_str(), kAccess, buf, sizeof buf); })));
    EXPECT_EQ(ErrName(Err(As(c).RemoveXattr("/d/l", kAccess, false))),
              ErrName(HostErrAs(c, [&] { return lremovexattr(hl.c_str(), kAccess); })));
    ASSERT_NO_FATAL_FAILURE(ExpectSame("/d/f"));
  }
  // Anyone may read an ACL.
  BothSet("/d/f", kAccess, ext);
  EXPECT_EQ(SchemaGet("/d/f", kAccess, dave), HostGet(H("/d/f"), kAccess));
}

TEST_F(AclTest, SetgidIsDroppedWhenTheSetterIsOutsideTheGroup) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f", "", 02755));
  ASSERT_NO_FATAL_FAILURE(BothChown("/f", alice.uid, 1005));
  ASSERT_NO_FATAL_FAILURE(BothFile("/g", "", 02755));
  ASSERT_NO_FATAL_FAILURE(BothChown("/g", carol.uid, 1005));
  ASSERT_TRUE(root().Chmod("/f", 02755).ok() && root().Chmod("/g", 02755).ok());
  ASSERT_EQ(chmod(H("/f").c_str(), 02755) | chmod(H("/g").c_str(), 02755), 0);
  BothSet("/f", kAccess, Value({{U, 7, 0}, {G, 5, 0}, {O, 1, 0}}), alice);  // not in 1005
  BothSet("/g", kAccess, Value({{U, 7, 0}, {G, 5, 0}, {O, 1, 0}}), carol);  // in 1005
  ASSERT_NO_FATAL_FAILURE(ExpectSame("/f"));
  ASSERT_NO_FATAL_FAILURE(ExpectSame("/g"));
}

TEST_F(AclTest, PermissionChecksFollowTheAcl) {
  // alice owns; bob is in alice's group; carol is named; dave is in no entry but other.
  const std::string acls[] = {
      Value({{U, 6, 0}, {NU, 6, 1002}, {G, 4, 0}, {M, 6, 0}, {O, 0, 0}}),
      Value({{U, 6, 0}, {NU, 6, 1002}, {G, 4, 0}, {M, 4, 0}, {O, 2, 0}}),
      Value({{U, 0, 0}, {NU, 7, 1002}, {NU, 2, 1001}, {G, 4, 0}, {M, 7, 0}, {O, 6, 0}}),
      // bob matches two group entries: one that grants the whole request is enough.
      Value({{U, 6, 0}, {G, 4, 0}, {NG, 2, 1000}, {NG, 6, 1001}, {M, 6, 0}, {O, 4, 0}}),
      // carol's group matches but grants too little: no fallback to other.
      Value({{U, 6, 0}, {G, 0, 0}, {NG, 2, 1005}, {M, 7, 0}, {O, 6, 0}}),
      // A mask of nothing: the mode's group bits are clear and the kernel ignores the ACL.
      Value({{U, 6, 0}, {NU, 6, 1002}, {G, 6, 0}, {M, 0, 0}, {O, 4, 0}}),
  };
  ASSERT_NO_FATAL_FAILURE(BothDir("/d", 0777));
  int i = 0;
  for (const std::string& acl : acls) {
    const std::string f = "/d/f" + std::to_string(i), d = "/d/d" + std::to_string(i);
    ++i;
    ASSERT_NO_FATAL_FAILURE(BothFile(f, "x", 0644));
    ASSERT_NO_FATAL_FAILURE(BothDir(d, 0755));
    for (const std::string& p : {f, d}) {
      ASSERT_NO_FATAL_FAILURE(BothChown(p, alice.uid, alice.gid));
      BothSet(p, kAccess, acl);
      ASSERT_NO_FATAL_FAILURE(ExpectSame(p));
    }
    const std::string hf = H(f);
    for (const Cred& c : {alice, bob, carol, dave}) {
      for (int flags : {O_RDONLY, O_WRONLY, O_RDWR}) {
        EXPECT_EQ(ErrName(Err(As(c).Txn([&](Transaction& t) -> Status {
                    Result<OpenResult> o = fs_->Open(t, c, f, flags);
                    if (!o.ok()) return o.status();
                    return fs_->Close(t, o->id);
                  }))),
                  ErrName(HostErrAs(c,
                                    [&]() -> long {
                                      int fd = open(hf.c_str(), flags);
                                      if (fd >= 0) close(fd);
                                      return fd;
                                    })))
            << f << " flags " << flags << " uid " << c.uid;
      }
      // Search through the directory, and creating in it (write and search).
      struct stat st;
      std::string hd = H(d), dot = H(d + "/."), made = H(d + "/m" + std::to_string(c.uid));
      EXPECT_EQ(ErrName(Err(As(c).GetStat(d + "/."))),
                ErrName(HostErrAs(c, [&] { return stat(dot.c_str(), &st); })))
          << d << " uid " << c.uid;
      EXPECT_EQ(ErrName(Err(As(c).Mkdir(d + "/m" + std::to_string(c.uid), 0755))),
                ErrName(HostErrAs(c, [&] { return mkdir(made.c_str(), 0755); })))
          << d << " uid " << c.uid;
      EXPECT_EQ(ErrName(Err(As(c).Access(f, R_OK | W_OK))),
                ErrName(HostErrAs(c,
                                  [&]() -> long {
                                    int fd = open(hf.c_str(), O_RDWR);
                                    if (fd >= 0) close(fd);
                                    return fd;
                                  })))
          << f << " access uid " << c.uid;
    }
  }
}

TEST_F(AclTest, NewFilesInheritTheDefaultAcl) {
  ASSERT_NO_FATAL_FAILURE(BothDir("/d", 0755));
  ASSERT_NO_FATAL_FAILURE(BothDir("/min", 0755));
  BothSet("/d", kDefault, Value({{U, 7, 0}, {NU, 7, 1000}, {G, 5, 0}, {M, 6, 0}, {O, 5, 0}}));
  BothSet("/min", kDefault, Value({{U, 6, 0}, {G, 4, 0}, {O, 0, 0}}));
  ASSERT_NO_FATAL_FAILURE(ExpectSame("/d"));
  ASSERT_NO_FATAL_FAILURE(ExpectSame("/min"));
  // The umask does not apply where a default ACL does; it does elsewhere.
  const mode_t kUmask = 027;
  umask(kUmask);
  for (const char* dir : {"/d", "/min", "/"}) {
    const std::string base = std::string(dir == std::string("/") ? "" : dir);
    for (mode_t m : {0777, 0640, 0666}) {
      const std::string f = base + "/f" + Oct(m), sub = base + "/s" + Oct(m),
                        fifo = base + "/p" + Oct(m);
      ASSERT_TRUE(root()
                      .Txn([&](Transaction& t) -> Status {
                        Result<OpenResult> o =
                            fs_->Open(t, Cred::Root(), f, O_WRONLY | O_CREAT, m, kUmask);
                        if (!o.ok()) return o.status();
                        return fs_->Close(t, o->id);
                      })
                      .ok());
      int fd = open(H(f).c_str(), O_WRONLY | O_CREAT, m);
      ASSERT_GE(fd, 0);
      close(fd);
      ASSERT_TRUE(root()
                      .Txn([&](Transaction& t) {
                        return fs_->Mkdir(t, Cred::Root(), sub, m, kUmask).status();
                      })
                      .ok());
      ASSERT_EQ(mkdir(H(sub).c_str(), m), 0);
      ASSERT_TRUE(root()
                      .Txn([&](Transaction& t) {
                        return fs_->Mknod(t, Cred::Root(), fifo, S_IFIFO | m, 0, kUmask).status();
                      })
                      .ok());
      ASSERT_EQ(mknod(H(fifo).c_str(), S_IFIFO | m, 0), 0);
      for (const std::string& p : {f, sub, fifo}) ASSERT_NO_FATAL_FAILURE(ExpectSame(p));
    }
  }
  umask(0);
  // A subdirectory passes the default on: a grandchild inherits it too.
  ASSERT_NO_FATAL_FAILURE(BothFile("/d/s777/g", "", 0666));
  ASSERT_NO_FATAL_FAILURE(ExpectSame("/d/s777/g"));
  // Symbolic links take nothing from it.
  ASSERT_NO_FATAL_FAILURE(BothSymlink("g", "/d/s777/l"));
  EXPECT_EQ(Perm(*root().LStat("/d/s777/l")), 0777u);
  // An empty value removes the default ACL; new files then get the plain mode.
  BothSet("/d", kDefault, "");
  ASSERT_NO_FATAL_FAILURE(ExpectSame("/d"));
  ASSERT_NO_FATAL_FAILURE(BothFile("/d/after", "", 0664));
  ASSERT_NO_FATAL_FAILURE(ExpectSame("/d/after"));
}

TEST_F(AclTest, HardLinksAndRenamesKeepTheAcl) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f", "", 0644));
  const std::string ext = Value({{U, 6, 0}, {NU, 6, 1002}, {G, 4, 0}, {M, 6, 0}, {O, 0, 0}});
  ASSERT_TRUE(root().SetXattr("/f", kAccess, ext).ok());
  ASSERT_TRUE(root().Link("/f", "/g").ok());
  ASSERT_TRUE(root().Rename("/f", "/h").ok());
  EXPECT_TRUE(As(carol).Access("/g", R_OK | W_OK).ok());
  ASSERT_TRUE(root().Unlink("/h").ok());
  EXPECT_TRUE(As(carol).Access("/g", R_OK | W_OK).ok());
  EXPECT_ERRNO(As(dave).Access("/g", R_OK), EACCES);
  // The same check on an open file (faccessat with AT_EMPTY_PATH).
  Result<OpenResult> o = root().Open("/g", O_RDONLY);
  ASSERT_TRUE(o.ok());
  EXPECT_ERRNO(
      root().Txn([&](Transaction& t) { return fs_->FAccess(t, carol, o->id, R_OK | W_OK); }), 0);
  EXPECT_ERRNO(root().Txn([&](Transaction& t) { return fs_->FAccess(t, dave, o->id, R_OK); }),
               EACCES);
  ASSERT_TRUE(root().Close(o->id).ok());
  // Fsck (in TearDown) checks the flag agrees with the stored ACL wherever the metadata moved.
}

TEST_F(AclTest, ADamagedStoredAclIsReportedNotTakenAsNone) {
  // A file whose flags say it has an ACL, whose record is unreadable, is a damaged database:
  // the call fails with EUCLEAN and says what is damaged, rather than checking or inheriting
  // as if there were no ACL.
  ASSERT_TRUE(root().Mkdir("/d", 0755).ok());
  ASSERT_TRUE(root().WriteFile("/f", "x").ok());
  const std::string default_acl = Value({{U, 7, 0}, {G, 5, 0}, {O, 5, 0}});
  const std::string access_acl = Value({{U, 6, 0}, {NU, 6, 1000}, {G, 4, 0}, {M, 6, 0}, {O, 0, 0}});
  ASSERT_TRUE(root().SetXattr("/d", kDefault, default_acl).ok());
  ASSERT_TRUE(root().SetXattr("/f", kAccess, access_acl).ok());
  const FileId d = root().GetStat("/d")->ino, f = root().GetStat("/f")->ino;
  ASSERT_TRUE(root()
                  .Txn([&](Transaction& t) -> Status {
                    AMINO_RETURN_IF_ERROR(fs_->store().Put(fs_->store().xattr(), t.raw(),
                                                           XattrKey(d, kDefault), "junk"));
                    return fs_->store().Del(fs_->store().xattr(), t.raw(), XattrKey(f, kAccess));
                  })
                  .ok());
  Status created = root().Mkdir("/d/sub").status();
  EXPECT_EQ(created.error(), EUCLEAN);
  EXPECT_NE(created.message().find("damaged default ACL of " + std::to_string(d)),
            std::string::npos)
      << created.message();
  Status read = As(alice).Access("/f", R_OK);
  EXPECT_EQ(read.error(), EUCLEAN);
  EXPECT_NE(read.message().find("damaged access ACL of " + std::to_string(f)), std::string::npos)
      << read.message();
  // fsck finds both (the fixture runs it at the end): repaired, the calls work again.
  Result<std::vector<Violation>> found = Fsck(fs_->store());
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->size(), 2u);
  ASSERT_TRUE(root()
                  .Txn([&](Transaction& t) -> Status {
                    AMINO_RETURN_IF_ERROR(fs_->store().Put(fs_->store().xattr(), t.raw(),
                                                           XattrKey(d, kDefault), default_acl));
                    return fs_->store().Put(fs_->store().xattr(), t.raw(), XattrKey(f, kAccess),
                                            access_acl);
                  })
                  .ok());
  EXPECT_TRUE(root().Mkdir("/d/sub").ok());
  EXPECT_TRUE(As(alice).Access("/f", R_OK).ok());
}

}  // namespace
}  // namespace amino::schema::testing
