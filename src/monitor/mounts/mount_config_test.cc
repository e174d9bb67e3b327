// Where mounts come from (precedence, the default), every refusal and its message, and the
// preparation step that creates mount points and databases.
#include "monitor/mounts/mount_config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "monitor/mounts/mount_prepare.h"
#include "monitor/mounts/test_support.h"
#include "schema/filesystem.h"

namespace amino::monitor::mounts {
namespace {

using testing::MakeDir;
using testing::WriteFile;

class MountConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = scratch_ / "home";
    MakeDir(home_);
    env_.home = home_;
    env_.cwd = scratch_.path();
  }

  // A database directory that exists (its contents do not matter to the configuration).
  std::string Db(const std::string& name) {
    std::string d = scratch_ / name;
    MakeDir(d);
    return d;
  }
  std::string UserFile() { return home_ + "/.config/amino/mounts"; }
  void WriteUserFile(std::string_view text) {
    MakeDir(home_ + "/.config/amino");
    WriteFile(UserFile(), text);
  }

  MountConfig Load(const MountSources& s = {}) {
    ConfigResult<MountConfig> r = LoadMounts(s, env_);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error());
    if (!r.ok()) return MountConfig{};
    return std::move(r).value();
  }
  std::string LoadError(const MountSources& s = {}) {
    ConfigResult<MountConfig> r = LoadMounts(s, env_);
    EXPECT_FALSE(r.ok());
    return r.ok() ? "" : r.error();
  }
  static std::vector<std::string> Points(const MountConfig& c) {
    std::vector<std::string> out;
    for (const Mount& m : c.table.mounts())
      out.push_back(m.point + " " + m.db_dir + " " + m.origin);
    return out;
  }

  testing::ScratchDir scratch_;
  std::string home_;
  Environment env_;
};

TEST_F(MountConfigTest, DefaultWhenNothingIsConfigured) {
  MountConfig c = Load();
  EXPECT_TRUE(c.is_default);
  EXPECT_EQ(c.file, "");
  ASSERT_EQ(c.table.mounts().size(), 1u);
  const Mount& m = c.table.mounts()[0];
  EXPECT_EQ(m.point, home_ + "/amino");
  EXPECT_EQ(m.host_point, home_ + "/amino");
  EXPECT_EQ(m.db_dir, home_ + "/.local/share/amino/default");
  EXPECT_TRUE(m.create);
  EXPECT_FALSE(m.durability);
  EXPECT_EQ(m.origin, "default");
  // Loading creates nothing.
  EXPECT_NE(access(m.point.c_str(), F_OK), 0);
  EXPECT_NE(access(m.db_dir.c_str(), F_OK), 0);

  env_.xdg_data_home = scratch_ / "data";
  EXPECT_EQ(Load().table.mounts()[0].db_dir, scratch_ / "data/amino/default");
}

TEST_F(MountConfigTest, DefaultNeedsAHome) {
  env_.home = "";
  EXPECT_EQ(LoadError(), "default mount: the home directory is unknown (HOME is not set)");
}

TEST_F(MountConfigTest, EmptyFileStillGivesTheDefault) {
  WriteUserFile("# no mounts yet\n");
  MountConfig c = Load();
  EXPECT_TRUE(c.is_default);
  EXPECT_EQ(c.file, UserFile());
}

TEST_F(MountConfigTest, UserFileReplacesTheDefault) {
  std::string a = Db("a");
  WriteUserFile("# mine\n/srv/amino/a " + a + " durability=sync\n");
  MountConfig c = Load();
  EXPECT_FALSE(c.is_default);
  EXPECT_EQ(c.file, UserFile());
  ASSERT_EQ(c.table.mounts().size(), 1u);
  EXPECT_EQ(c.table.mounts()[0].point, "/srv/amino/a");
  EXPECT_EQ(c.table.mounts()[0].durability, Durability::kSync);
  EXPECT_EQ(c.table.mounts()[0].origin, UserFile() + ":2");
}

TEST_F(MountConfigTest, FilePrecedence) {
  std::string a = Db("a"), b = Db("b"), c = Db("c"), d = Db("d");
  WriteUserFile("/m/home " + a + "\n");
  std::string xdg = scratch_ / "xdg";
  MakeDir(xdg + "/amino");
  WriteFile(xdg + "/amino/mounts", "/m/xdg " + b + "\n");
  std::string env_file = scratch_ / "env.mounts";
  WriteFile(env_file, "/m/env " + c + "\n");
  std::string flag_file = scratch_ / "flag.mounts";
  WriteFile(flag_file, "/m/flag " + d + "\n");

  EXPECT_EQ(Load().table.mounts()[0].point, "/m/home");
  env_.xdg_config_home = xdg;
  EXPECT_EQ(Load().table.mounts()[0].point, "/m/xdg");
  env_.amino_config = env_file;
  EXPECT_EQ(Load().table.mounts()[0].point, "/m/env");
  MountSources s;
  s.config_file = flag_file;
  MountConfig cfg = Load(s);
  EXPECT_EQ(cfg.file, flag_file);
  ASSERT_EQ(cfg.table.mounts().size(), 1u);  // only one file is read
  EXPECT_EQ(cfg.table.mounts()[0].point, "/m/flag");
}

TEST_F(MountConfigTest, NamedFilesMustExist) {
  MountSources s;
  s.config_file = scratch_ / "nope";
  EXPECT_EQ(LoadError(s), scratch_ / "nope: No such file or directory");
  env_.amino_config = scratch_ / "gone";
  EXPECT_EQ(LoadError(), scratch_ / "gone (from AMINO_CONFIG): No such file or directory");
  env_.amino_config.reset();
  MakeDir(UserFile());  // the default file exists but cannot be read as one
  EXPECT_EQ(LoadError(), UserFile() + ": Is a directory");
}

TEST_F(MountConfigTest, CommandLineAddsToAndOverridesTheFile) {
  std::string a = Db("a"), b = Db("b"), c = Db("c");
  WriteUserFile("/m/one " + a + " durability=sync\n/m/two " + scratch_ / "missing" + "\n");
  MountSources s;
  // /m/two's database is missing, but the command line replaces that line: no error.
  s.mount_args = {"/m/two=" + b, "/m/three/=" + c};
  MountConfig cfg = Load(s);
  EXPECT_EQ(Points(cfg),
            (std::vector<std::string>{"/m/one " + a + " " + UserFile() + ":1",
                                      "/m/three " + c + " --mount", "/m/two " + b + " --mount"}));
  EXPECT_FALSE(cfg.is_default);
  // Without the override the missing database is an error.
  s.mount_args = {"/m/three=" + c};
  EXPECT_EQ(LoadError(s), UserFile() + ":2:8: database directory " + scratch_ / "missing" +
                              " does not exist (create it with 'amino mkfs " +
                              scratch_ / "missing" + "', or add the option 'create')");
}

TEST_F(MountConfigTest, CommandLineAloneReplacesTheDefault) {
  std::string a = Db("a");
  MountSources s;
  s.mount_args = {"~/x=" + a};
  MountConfig cfg = Load(s);
  EXPECT_FALSE(cfg.is_default);
  EXPECT_EQ(Points(cfg), (std::vector<std::string>{home_ + "/x " + a + " --mount"}));
}

TEST_F(MountConfigTest, CommandLinePaths) {
  Db("rel/db");
  MountSources s;
  s.mount_args = {"mp/./here=rel//db/", "/abs=rel/../rel/db=x"};
  // The split is at the first '=': the second argument's database is "rel/../rel/db=x".
  EXPECT_EQ(LoadError(s),
            "--mount '/abs=rel/../rel/db=x': database directory " + scratch_ / "rel/db=x" +
                " does not exist (create it with 'amino mkfs " + scratch_ / "rel/db=x" + "')");
  s.mount_args.pop_back();
  EXPECT_EQ(Points(Load(s)),
            (std::vector<std::string>{scratch_ / "mp/here " + scratch_ / "rel/db --mount"}));
}

TEST_F(MountConfigTest, CommandLineErrorsNameTheArgument) {
  std::string a = Db("a"), b = Db("b");
  auto err = [&](std::vector<std::string> args) {
    MountSources s;
    s.mount_args = std::move(args);
    return LoadError(s);
  };
  EXPECT_EQ(err({"/m/x"}), "--mount '/m/x': expected MOUNTPOINT=DBDIR");
  EXPECT_EQ(err({"=" + a}), "--mount '=" + a + "': empty mount point (expected MOUNTPOINT=DBDIR)");
  EXPECT_EQ(err({"/m/x="}),
            "--mount '/m/x=': empty database directory (expected MOUNTPOINT=DBDIR)");
  EXPECT_EQ(err({"/=" + a}), "--mount '/=" + a + "': the root directory cannot be a mount point");
  EXPECT_EQ(err({"~bob/x=" + a}),
            "--mount '~bob/x=" + a + "': '~user' is not supported: write the path of ~bob out");
  EXPECT_EQ(
      err({"/m/x=" + a, "/m/x/=" + b}),
      "--mount '/m/x/=" + b + "': mount point /m/x is already mounted by --mount '/m/x=" + a + "'");
  EXPECT_EQ(err({"/m/x=" + a, "/m/x/y=" + b}),
            "--mount '/m/x/y=" + b +
                "': mount point /m/x/y is inside mount point /m/x (--mount '/m/x=" + a +
                "'): nested mounts are not supported");
  EXPECT_EQ(err({"/m/x=" + a, "/m/y=" + a + "/"}),
            "--mount '/m/y=" + a + "/': database directory " + a +
                " is already mounted at /m/x (--mount '/m/x=" + a + "')");
}

TEST_F(MountConfigTest, ConflictsWithTheFileNameTheArgument) {
  std::string a = Db("a"), b = Db("b");
  WriteUserFile("\n/m/x " + a + "\n");
  MountSources s;
  s.mount_args = {"/m=" + b};
  EXPECT_EQ(LoadError(s), "--mount '/m=" + b + "': mount point /m contains mount point /m/x (" +
                              UserFile() + ":2): nested mounts are not supported");
  s.mount_args = {"/m/y=" + a};
  EXPECT_EQ(LoadError(s), "--mount '/m/y=" + a + "': database directory " + a +
                              " is already mounted at /m/x (" + UserFile() + ":2)");
}

TEST_F(MountConfigTest, FileConflictsBlameTheLaterLine) {
  std::string a = Db("a"), b = Db("b");
  auto err = [&](const std::string& text) {
    WriteUserFile(text);
    return LoadError();
  };
  std::string f = UserFile();
  EXPECT_EQ(err("/m/x " + a + "\n/m/x/ " + b + "\n"),
            f + ":2:1: mount point /m/x is already mounted by " + f + ":1");
  EXPECT_EQ(err("/m/x/y " + a + "\n  /m/x " + b + "\n"),
            f + ":2:3: mount point /m/x contains mount point /m/x/y (" + f +
                ":1): nested mounts are not supported");
  EXPECT_EQ(err("/m/x " + a + "\n/m/x/y/z " + b + "\n"),
            f + ":2:1: mount point /m/x/y/z is inside mount point /m/x (" + f +
                ":1): nested mounts are not supported");
  EXPECT_EQ(err("/m/x " + a + "\n/m/y  " + a + "\n"),
            f + ":2:7: database directory " + a + " is already mounted at /m/x (" + f + ":1)");
  EXPECT_EQ(err("/m/x " + a + "\n" + scratch_.path() + " /elsewhere/db\n"),
            f + ":2:1: mount point " + scratch_.path() + " contains database directory " + a +
                " (" + f + ":1): programs under the monitor could not reach it");
  EXPECT_EQ(err(scratch_.path() + " /elsewhere/db\n/m/x " + a + "\n"),
            f + ":2:6: database directory " + a + " is inside mount point " + scratch_.path() +
                " (" + f + ":1): programs under the monitor could not reach it");
  EXPECT_EQ(err("/m/x /m/x/db create\n"),
            f + ":1:6: database directory /m/x/db is inside its own mount point /m/x");
  // The file is refused even where the command line would replace the offending line.
  WriteUserFile("/m/x " + a + "\n/m/x " + b + "\n");
  MountSources s;
  s.mount_args = {"/m/x=" + b};
  EXPECT_EQ(LoadError(s), f + ":2:1: mount point /m/x is already mounted by " + f + ":1");
}

TEST_F(MountConfigTest, HostChecks) {
  std::string a = Db("a");
  std::string f = UserFile();
  WriteFile(scratch_ / "plain", "not a directory\n");
  WriteUserFile(scratch_ / "plain " + a + "\n");
  EXPECT_EQ(LoadError(),
            f + ":1:1: mount point " + scratch_ / "plain" + " exists and is not a directory");
  WriteUserFile("/m/x " + scratch_ / "plain" + " create\n");
  EXPECT_EQ(LoadError(),
            f + ":1:6: database directory " + scratch_ / "plain" + " is not a directory");
  WriteUserFile("/m/x " + scratch_ / "plain/db" + " create\n");
  EXPECT_EQ(LoadError(),
            f + ":1:6: database directory " + scratch_ / "plain/db" + ": Not a directory");
  // With 'create', a missing database is fine; so is a missing mount point.
  WriteUserFile("/m/x " + scratch_ / "new/db" + " create\n");
  EXPECT_EQ(Load().table.mounts()[0].db_dir, scratch_ / "new/db");
  // The default mount is checked like any other.
  std::remove(f.c_str());
  WriteFile(home_ + "/amino", "a file where the default mount point goes\n");
  EXPECT_EQ(LoadError(),
            "default mount: mount point " + home_ + "/amino exists and is not a directory");
}

TEST_F(MountConfigTest, FileSyntaxErrorsComeThrough) {
  WriteUserFile("/m/x /db bogus\n");
  EXPECT_EQ(LoadError(), UserFile() +
                             ":1:10: unknown option 'bogus' (known: create, durability=async, "
                             "durability=sync, defaults)");
}

TEST_F(MountConfigTest, TableIsSortedAndFindable) {
  std::string a = Db("a"), b = Db("b"), c = Db("c");
  WriteUserFile("/m/z " + a + "\n/m/a " + b + "\n");
  MountSources s;
  s.mount_args = {"/m/m=" + c};
  MountConfig cfg = Load(s);
  ASSERT_EQ(cfg.table.mounts().size(), 3u);
  EXPECT_EQ(cfg.table.mounts()[0].point, "/m/a");
  EXPECT_EQ(cfg.table.mounts()[1].point, "/m/m");
  EXPECT_EQ(cfg.table.mounts()[2].point, "/m/z");
  std::optional<MountMatch> m = cfg.table.Find("/m/z/q");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->mount->db_dir, a);
}

TEST(EnvironmentTest, DefaultPaths) {
  Environment env;
  env.home = "/h";
  EXPECT_EQ(env.DefaultConfigFile(), "/h/.config/amino/mounts");
  EXPECT_EQ(env.DefaultDatabase(), "/h/.local/share/amino/default");
  env.xdg_config_home = "/c";
  env.xdg_data_home = "/d";
  EXPECT_EQ(env.DefaultConfigFile(), "/c/amino/mounts");
  EXPECT_EQ(env.DefaultDatabase(), "/d/amino/default");
}

TEST(EnvironmentTest, FromProcessReadsTheVariables) {
  setenv("HOME", "/some/home", 1);
  setenv("XDG_CONFIG_HOME", "relative/ignored", 1);
  setenv("XDG_DATA_HOME", "/data", 1);
  setenv("AMINO_CONFIG", "", 1);
  Environment env = Environment::FromProcess();
  EXPECT_EQ(env.home, "/some/home");
  EXPECT_EQ(env.xdg_config_home, "");  // relative values are invalid (XDG base directories)
  EXPECT_EQ(env.xdg_data_home, "/data");
  EXPECT_FALSE(env.amino_config);  // empty is unset
  setenv("AMINO_CONFIG", "/x/mounts", 1);
  unsetenv("HOME");
  env = Environment::FromProcess();
  EXPECT_EQ(env.amino_config, "/x/mounts");
  EXPECT_FALSE(env.home.empty());  // the passwd entry's home
  EXPECT_EQ(env.home[0], '/');
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof cwd), nullptr);
  EXPECT_EQ(env.cwd, cwd);
}

// --- PrepareMounts -----------------------------------------------------------------------------

class PrepareTest : public MountConfigTest {};

TEST_F(PrepareTest, CreatesTheDefaultMountAndDatabase) {
  mode_t old = umask(077);
  MountConfig cfg = Load();
  ConfigResult<PreparedMounts> p = PrepareMounts(cfg.table);
  umask(old);
  ASSERT_TRUE(p.ok()) << p.error();
  const Mount& m = p->table.mounts()[0];
  struct stat st;
  ASSERT_EQ(stat(m.point.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0755u);  // whatever the umask
  EXPECT_EQ(m.host_dev, st.st_dev);
  EXPECT_EQ(m.host_ino, st.st_ino);
  EXPECT_EQ(m.host_point, m.point);
  ASSERT_EQ(stat((home_ + "/.local/share/amino").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);  // parents made for a database are private
  Result<std::unique_ptr<schema::FileSystem>> fs = schema::FileSystem::Open(m.db_dir);
  ASSERT_TRUE(fs.ok()) << fs.status().message();
  EXPECT_EQ(p->actions,
            (std::vector<std::string>{"created mount point " + m.point,
                                      "created an empty Amino file system in " + m.db_dir}));
  fs.value().reset();

  // Again: nothing to do, the same table.
  ConfigResult<PreparedMounts> again = PrepareMounts(Load().table);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_TRUE(again->actions.empty());
  EXPECT_EQ(again->table.mounts()[0].host_ino, m.host_ino);
}

TEST_F(PrepareTest, MakesAFileSystemInAnEmptyDirectoryOnlyWithCreate) {
  std::string empty = Db("empty"), keep = Db("keep");
  WriteFile(keep + "/precious", "x");
  WriteUserFile(scratch_ / "m/a " + empty + " create\n" + scratch_ / "m/b " + keep + " create\n");
  ConfigResult<PreparedMounts> p = PrepareMounts(Load().table);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_TRUE(schema::FileSystem::Open(empty).ok());
  // A directory with something in it is left alone (opening it later says what it is).
  EXPECT_EQ(access((keep + "/path.db").c_str(), F_OK), -1);
  EXPECT_EQ(p->actions.size(), 3u);  // two mount points, one file system
}

TEST_F(PrepareTest, ResolvesSymbolicLinksInMountPoints) {
  std::string a = Db("a");
  MakeDir(scratch_ / "real");
  ASSERT_EQ(symlink("real", (scratch_ / "alias").c_str()), 0);
  MountSources s;
  s.mount_args = {scratch_ / "alias/amino=" + a};
  ConfigResult<PreparedMounts> p = PrepareMounts(Load(s).table);
  ASSERT_TRUE(p.ok()) << p.error();
  const Mount& m = p->table.mounts()[0];
  EXPECT_EQ(m.point, scratch_ / "alias/amino");
  EXPECT_EQ(m.host_point, scratch_ / "real/amino");
  EXPECT_EQ(p->table.Find(scratch_ / "real/amino/x")->mount, &m);
  EXPECT_EQ(p->table.Find(scratch_ / "alias/amino/x")->mount, &m);
}

TEST_F(PrepareTest, RefusesMountPointsThatAreOneDirectoryThroughLinks) {
  std::string a = Db("a"), b = Db("b");
  MakeDir(scratch_ / "real/amino");
  ASSERT_EQ(symlink("real", (scratch_ / "alias").c_str()), 0);
  MountSources s;
  s.mount_args = {scratch_ / "alias/amino/in=" + a, scratch_ / "real/amino=" + b};
  ConfigResult<PreparedMounts> p = PrepareMounts(Load(s).table);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error(), "--mount: mount point " + scratch_ / "real/amino" + " (" +
                           scratch_ / "real/amino" + ") and mount point " +
                           scratch_ / "alias/amino/in" + " (--mount, " +
                           scratch_ / "real/amino/in" +
                           ") are one directory or nested once symbolic links are resolved");
}

TEST_F(PrepareTest, RefusesOneDatabaseThroughLinks) {
  std::string a = Db("a");
  ASSERT_EQ(symlink("a", (scratch_ / "a2").c_str()), 0);
  MountSources s;
  s.mount_args = {scratch_ / "m/x=" + a, scratch_ / "m/y=" + scratch_ / "a2"};
  ConfigResult<PreparedMounts> p = PrepareMounts(Load(s).table);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error(), "--mount: database directory " + scratch_ / "a2" + " and " + a +
                           " (--mount) are one directory (" + a + ")");
}

TEST_F(PrepareTest, ErrorsSayWhatCouldNotBeCreated) {
  // The host changes between loading and preparing: a file appears where a directory goes.
  WriteUserFile(scratch_ / "m/x " + scratch_ / "data/db" + " create\n");
  MountConfig cfg = Load();
  WriteFile(scratch_ / "m", "x");
  ConfigResult<PreparedMounts> p = PrepareMounts(cfg.table);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error(),
            UserFile() + ":1: cannot create mount point " + scratch_ / "m/x" + ": Not a directory");
  ASSERT_EQ(std::remove((scratch_ / "m").c_str()), 0);
  WriteFile(scratch_ / "data", "x");
  p = PrepareMounts(cfg.table);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error(), UserFile() + ":1: cannot create database directory " + scratch_ / "data/db" +
                           ": " + scratch_ / "data" + ": Not a directory");
}

TEST_F(PrepareTest, LoadRefusesWhatCannotBeCreated) {
  WriteFile(scratch_ / "file", "x");
  MountSources s;
  s.mount_args = {scratch_ / "file/amino=" + Db("a")};
  EXPECT_EQ(LoadError(s), "--mount '" + s.mount_args[0] + "': mount point " +
                              scratch_ / "file/amino" + ": Not a directory");
  env_.xdg_data_home = scratch_ / "file/data";
  EXPECT_EQ(LoadError(), "default mount: database directory " +
                             scratch_ / "file/data/amino/default" + ": Not a directory");
}

}  // namespace
}  // namespace amino::monitor::mounts
