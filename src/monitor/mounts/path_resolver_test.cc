// Classification of path arguments on a fixed mount table (no host access).
#include "monitor/mounts/path_resolver.h"

#include <gtest/gtest.h>

#include "monitor/mounts/lexical_path.h"

namespace amino::monitor::mounts {
namespace {

class PathResolverTest : public ::testing::Test {
 protected:
  PathResolverTest()
      : table_(MakeTable()),
        resolver_(table_),
        home_(&table_.mounts()[0]),
        other_(&table_.mounts()[1]),
        alias_(&table_.mounts()[2]) {}

  static MountTable MakeTable() {
    std::vector<Mount> v(3);
    v[0].point = v[0].host_point = "/m/home/amino";
    v[0].db_dir = "/db/home";
    v[1].point = v[1].host_point = "/m/other";
    v[1].db_dir = "/db/other";
    v[2].point = "/alias/amino";  // /alias is a link to /real
    v[2].host_point = "/real/amino";
    v[2].db_dir = "/db/alias";
    return MountTable(std::move(v));
  }

  ClassifiedPath Ok(Result<ClassifiedPath> r) {
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? std::move(r).value() : ClassifiedPath{};
  }
  // "host" (unchanged), "host PATH" (substitute) or "amino MOUNTDB PATH", plus " /" for a
  // trailing slash and " check=PATH".
  std::string Show(const Result<ClassifiedPath>& r) {
    if (!r.ok()) return "errno " + std::to_string(r.status().error());
    const ClassifiedPath& c = r.value();
    std::string s;
    if (c.is_host()) {
      s = c.unchanged ? "host" : "host " + c.path;
      if (c.unchanged) {
        EXPECT_EQ(c.path, "");
      }
      EXPECT_EQ(c.mount, nullptr);
    } else {
      s = "amino " + c.mount->db_dir + " " + c.path;
    }
    if (c.trailing_slash) s += " /";
    if (!c.check_path.empty()) {
      s += " check=" + c.check_path + ">" + c.check_expect;
      EXPECT_LE(c.check_rest, c.check_path.size());
    } else {
      EXPECT_EQ(c.check_expect, "");
      EXPECT_EQ(c.check_rest, 0u);
    }
    return s;
  }
  std::string Host(std::string_view dir, std::string_view path, bool empty_ok = false) {
    return Show(resolver_.Classify(PathBase::Host(dir), path, empty_ok));
  }
  std::string Virtual(const Mount* m, std::string_view rel, std::string_view path,
                      bool empty_ok = false) {
    return Show(resolver_.Classify(PathBase::Virtual(*m, rel), path, empty_ok));
  }
  std::string Escape(const Mount* m, std::string_view escaped) {
    return Show(resolver_.ContinueOnHost(*m, escaped));
  }

  MountTable table_;
  PathResolver resolver_;
  const Mount* home_;
  const Mount* other_;
  const Mount* alias_;
};

TEST_F(PathResolverTest, AbsolutePathsOutsideMountsPassUnchanged) {
  EXPECT_EQ(Host("/", "/etc/passwd"), "host");
  EXPECT_EQ(Host("/m/home", "/m/home/amino2/x"), "host");  // a string prefix is not a mount
  EXPECT_EQ(Host("/m/home", "/m/home/amin"), "host");
  EXPECT_EQ(Host("/m/home", "/m/home"), "host");
  EXPECT_EQ(Host("/", "/m/home/x/"), "host /");
  EXPECT_EQ(Host("/", "/m/home/amino/../x"), "amino /db/home /../x");  // it entered the mount
  // The base does not matter for an absolute path, even a virtual one.
  EXPECT_EQ(Virtual(home_, "/d", "/etc"), "host");
  EXPECT_EQ(Virtual(home_, "/d", "/m/other/x"), "amino /db/other /x");
}

TEST_F(PathResolverTest, AbsolutePathsIntoMounts) {
  EXPECT_EQ(Host("/", "/m/home/amino"), "amino /db/home /");
  EXPECT_EQ(Host("/", "/m/home/amino/"), "amino /db/home / /");
  EXPECT_EQ(Host("/", "/m/home/amino/."), "amino /db/home /.");
  EXPECT_EQ(Host("/", "//m///home/./amino//x//y/"), "amino /db/home /x/y/ /");
  // Inside the mount the rest is the schema's, "." and ".." as written.
  EXPECT_EQ(Host("/", "/m/home/amino/x/../../y"), "amino /db/home /x/../../y");
  EXPECT_EQ(Host("/", "/m/home/amino/x/./y/.."), "amino /db/home /x/./y/..");
  // ".." at "/" stays at "/"; collapsing a ".." of the base or of the root is exact.
  EXPECT_EQ(Host("/", "/../../m/home/amino/f"), "amino /db/home /f");
  EXPECT_EQ(Host("/", "/m/home/x/../amino/f"), "amino /db/home /f check=/m/home/x/..>/m/home");
  EXPECT_EQ(Host("/", "/m/other"), "amino /db/other /");
}

TEST_F(PathResolverTest, RelativePathsFromAHostDirectory) {
  EXPECT_EQ(Host("/m/home", "amino/x"), "amino /db/home /x");
  EXPECT_EQ(Host("/m/home", "./amino"), "amino /db/home /");
  EXPECT_EQ(Host("/m/home", "amino//"), "amino /db/home / /");
  EXPECT_EQ(Host("/m/home", "amino2"), "host");
  EXPECT_EQ(Host("/m/home", "x/y/../z"), "host check=/m/home/x/y/..>/m/home/x");
  EXPECT_EQ(Host("/m/home", "../../../.."), "host");
  EXPECT_EQ(Host("/m/home/q", "../amino/f"), "amino /db/home /f");  // the base's own parent
  EXPECT_EQ(Host("/m/home", "q/../amino/f"), "amino /db/home /f check=/m/home/q/..>/m/home");
  EXPECT_EQ(Host("/m/home", "q/r/../../amino/f/../g"),
            "amino /db/home /f/../g check=/m/home/q/r/../..>/m/home");
  EXPECT_EQ(Host("/m", "home/../other"), "amino /db/other / check=/m/home/..>/m");
  EXPECT_EQ(Host("/", "m/other/x"), "amino /db/other /x");
  EXPECT_EQ(Host("/m/home", "x/"), "host /");
  // A base that is not normal is normalised first.
  EXPECT_EQ(Host("/m//home/./", "amino"), "amino /db/home /");
}

TEST_F(PathResolverTest, AHostBaseInsideAMountIsInsideIt) {
  EXPECT_EQ(Host("/m/home/amino", "."), "amino /db/home /.");
  EXPECT_EQ(Host("/m/home/amino", "f"), "amino /db/home /f");
  EXPECT_EQ(Host("/m/home/amino/sub", "../x"), "amino /db/home /sub/../x");
  EXPECT_EQ(Host("/m/home/amino2", "f"), "host");
  // With AT_EMPTY_PATH the call is on the host descriptor itself.
  EXPECT_EQ(Host("/m/home/amino", "", true), "host");
}

TEST_F(PathResolverTest, RelativePathsFromAVirtualDirectory) {
  EXPECT_EQ(Virtual(home_, "/", "f"), "amino /db/home /f");
  EXPECT_EQ(Virtual(home_, "/d", "f"), "amino /db/home /d/f");
  EXPECT_EQ(Virtual(home_, "/d", "x//../y/"), "amino /db/home /d/x/../y/ /");
  EXPECT_EQ(Virtual(home_, "/d/e", "../../.."), "amino /db/home /d/e/../../..");
  EXPECT_EQ(Virtual(home_, "/d", "."), "amino /db/home /d/.");
  EXPECT_EQ(Virtual(other_, "/", ".."), "amino /db/other /..");
  EXPECT_EQ(Virtual(home_, "/d", "", true), "amino /db/home /d");
  EXPECT_EQ(Virtual(home_, "/", "", true), "amino /db/home /");
}

TEST_F(PathResolverTest, EmptyPaths) {
  EXPECT_EQ(Host("/m", ""), "errno " + std::to_string(ENOENT));
  EXPECT_EQ(Virtual(home_, "/d", ""), "errno " + std::to_string(ENOENT));
  EXPECT_EQ(Host("/m", "", true), "host");
}

TEST_F(PathResolverTest, PathMaxCountsTheNul) {
  std::string longest(kPathMax - 1, 'x');  // 4095 bytes + NUL = PATH_MAX: accepted
  for (size_t i = 100; i < longest.size(); i += 100) longest[i] = '/';
  EXPECT_EQ(Host("/m", longest), "host");
  EXPECT_EQ(Host("/m", longest + "x"), "errno " + std::to_string(ENAMETOOLONG));
  std::string in_mount = "/m/other/" + longest.substr(9);
  ASSERT_EQ(in_mount.size(), kPathMax - 1);
  EXPECT_TRUE(resolver_.Classify(PathBase::Host("/"), in_mount).ok());
  EXPECT_EQ(Host("/", in_mount + "/"), "errno " + std::to_string(ENAMETOOLONG));
  // Only the argument counts: from a deep virtual directory, the path it names may be longer
  // than PATH_MAX, as the kernel's walk from a deep working directory.
  std::string deep_dir = "/" + std::string(3000, 'd');
  std::string rest = longest.substr(0, 2000);
  EXPECT_EQ(Virtual(home_, deep_dir, rest), "amino /db/home " + deep_dir + "/" + rest);
  EXPECT_EQ(Virtual(home_, deep_dir, longest + "x"), "errno " + std::to_string(ENAMETOOLONG));
}

TEST_F(PathResolverTest, LongComponentsAreLeftToTheSchema) {
  // The kernel reports a component over NAME_MAX only when its walk reaches it; the schema
  // does the same in the same order, so the resolver passes it on.
  std::string name(300, 'n');
  EXPECT_EQ(Host("/m/home", "amino/missing/" + name), "amino /db/home /missing/" + name);
  EXPECT_EQ(Host("/m/home", name), "host");
}

TEST_F(PathResolverTest, BothSpellingsOfAMountPoint) {
  EXPECT_EQ(Host("/", "/alias/amino/f"), "amino /db/alias /f");
  EXPECT_EQ(Host("/", "/real/amino/f"), "amino /db/alias /f");
  EXPECT_EQ(Host("/real/amino/d", "f"), "amino /db/alias /d/f");
  EXPECT_EQ(Host("/real", "amino"), "amino /db/alias /");
  // Leaving it by ".." reaches the parent the kernel knows: the resolved one.
  EXPECT_EQ(Escape(alias_, "../x"), "host /real/x");
}

TEST_F(PathResolverTest, ContinuingAfterDotDotAtTheMountRoot) {
  EXPECT_EQ(Escape(home_, "../x"), "host /m/home/x");
  EXPECT_EQ(Escape(home_, "../../.."), "host /m/..");
  EXPECT_EQ(Escape(home_, "../x/"), "host /m/home/x/ /");
  // A last "." or ".." stays for the kernel, which has rules for it.
  EXPECT_EQ(Escape(home_, ".."), "host /m/home/amino/..");
  EXPECT_EQ(Escape(home_, "../x/."), "host /m/home/x/.");
  EXPECT_EQ(Escape(home_, "../x/./"), "host /m/home/x/./ /");
  // Back into the same mount, or into another.
  EXPECT_EQ(Escape(home_, "../amino/f"), "amino /db/home /f");
  EXPECT_EQ(Escape(home_, "../amino"), "amino /db/home /");
  EXPECT_EQ(Escape(home_, "../../other/y/../z"), "amino /db/other /y/../z");
  EXPECT_EQ(Escape(home_, "../q/../amino/f"),
            "amino /db/home /f check=/m/home/amino/../q/..>/m/home");
}

TEST_F(PathResolverTest, ContinuingAtAnAbsoluteLinkTarget) {
  EXPECT_EQ(Escape(home_, "/etc/passwd"), "host /etc/passwd");
  EXPECT_EQ(Escape(home_, "/"), "host / /");
  EXPECT_EQ(Escape(home_, "/etc/"), "host /etc/ /");
  EXPECT_EQ(Escape(home_, "//etc/./x/../y"), "host /etc/y check=//etc/./x/..>/etc");
  EXPECT_EQ(Escape(home_, "/m/other/z/"), "amino /db/other /z/ /");
  EXPECT_EQ(Escape(home_, "/m/home/amino/d/../e"), "amino /db/home /d/../e");
  EXPECT_EQ(Escape(home_, ""), "errno " + std::to_string(ENOENT));
  // The substitute must fit in PATH_MAX for the kernel.
  std::string target = "/" + std::string(200, 't');
  std::string rest;
  for (int i = 0; i < 20; ++i) rest += "/" + std::string(200, 'r');
  EXPECT_EQ(Escape(home_, target + rest), "errno " + std::to_string(ENAMETOOLONG));
  ClassifiedPath r = Ok(resolver_.ContinueOnHost(*home_, target + rest + "/../../../../z"));
  EXPECT_EQ(r.path, target + rest.substr(0, 16 * 201) + "/z");
}

TEST_F(PathResolverTest, ChecksCoverTheLastCancelledComponent) {
  // The prefix through the last ".." that cancelled a named component, and the rest's offset.
  ClassifiedPath r = Ok(resolver_.Classify(PathBase::Host("/m"), "a/../b/c/../../home/amino/f"));
  EXPECT_EQ(r.check_path, "/m/a/../b/c/../..");
  EXPECT_EQ(r.check_expect, "/m");
  EXPECT_EQ(r.check_rest, std::string("a/../b/c/../..").size());
  r = Ok(resolver_.Classify(PathBase::Host("/m"), "/x/../m/other"));
  EXPECT_EQ(r.check_path, "/x/..");
  EXPECT_EQ(r.check_expect, "/");
  EXPECT_EQ(r.check_rest, 5u);
  // ".." of the base's own components, or at "/", need no check.
  EXPECT_EQ(Host("/m/home/q", "../../other"), "amino /db/other /");
  EXPECT_EQ(Host("/m", "/../.."), "host");
  // Nor does anything inside a mount: that is the schema's.
  EXPECT_EQ(Host("/m", "other/x/.."), "amino /db/other /x/..");
}

TEST_F(PathResolverTest, RecheckFollowsTheKernel) {
  // "lnk/.." is not /m/home when lnk is a symbolic link: continue from where the kernel went.
  std::string arg = "lnk/../amino/f";
  ClassifiedPath r = Ok(resolver_.Classify(PathBase::Host("/m/home"), arg));
  EXPECT_EQ(Show(r), "amino /db/home /f check=/m/home/lnk/..>/m/home");
  EXPECT_EQ(Show(resolver_.Recheck(r, "/elsewhere", arg)), "host");
  EXPECT_EQ(Show(resolver_.Recheck(r, "/m//home/", arg)), "amino /db/home /f");
  // A host result can turn out to be inside a mount (lnk/.. is a mount's host directory).
  arg = "lnk/../f/";
  r = Ok(resolver_.Classify(PathBase::Host("/m/home"), arg));
  EXPECT_EQ(Show(r), "host / check=/m/home/lnk/..>/m/home");
  EXPECT_EQ(Show(resolver_.Recheck(r, "/m/other/sub", arg)), "amino /db/other /sub/f/ /");
  EXPECT_EQ(Show(resolver_.Recheck(r, "/real/amino", arg)), "amino /db/alias /f/ /");
  // After an escape the kernel still needs a substitute.
  std::string escaped = "../lnk/../y";
  r = Ok(resolver_.ContinueOnHost(*home_, escaped));
  EXPECT_EQ(Show(r), "host /m/home/y check=/m/home/amino/../lnk/..>/m/home");
  EXPECT_EQ(Show(resolver_.Recheck(r, "/srv", escaped)), "host /srv/y");
  EXPECT_EQ(Show(resolver_.Recheck(r, "/srv", "../lnk/..")), "host /srv");
  EXPECT_EQ(Show(resolver_.Recheck(r, "relative", escaped)), "errno " + std::to_string(EINVAL));
}

TEST_F(PathResolverTest, PairPlacement) {
  ClassifiedPath host1 = Ok(resolver_.Classify(PathBase::Host("/"), "/etc/a"));
  ClassifiedPath host2 = Ok(resolver_.Classify(PathBase::Host("/"), "/tmp/b"));
  ClassifiedPath home1 = Ok(resolver_.Classify(PathBase::Host("/"), "/m/home/amino/a"));
  ClassifiedPath home2 = Ok(resolver_.Classify(PathBase::Virtual(*home_, "/d"), "b"));
  ClassifiedPath other = Ok(resolver_.Classify(PathBase::Host("/m"), "other/c"));
  EXPECT_EQ(PlacePair(host1, host2), PairPlacement::kHost);
  EXPECT_EQ(PlacePair(home1, home2), PairPlacement::kSameMount);
  EXPECT_EQ(PlacePair(home1, other), PairPlacement::kCrossDevice);
  EXPECT_EQ(PlacePair(host1, home1), PairPlacement::kCrossDevice);
  EXPECT_EQ(PlacePair(home2, host2), PairPlacement::kCrossDevice);
  EXPECT_TRUE(SameMount(home1, home2));
  EXPECT_FALSE(SameMount(home1, other));
  EXPECT_FALSE(SameMount(host1, host2));
}

}  // namespace
}  // namespace amino::monitor::mounts
