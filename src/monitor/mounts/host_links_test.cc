// HostLinks on real host trees: links into a mount point are found, the host directories left
// under a mount point count as inside it, and paths that stay on the host are left alone. (The
// differential test in path_resolver_kernel_test.cc compares whole walks with the kernel.)
#include "monitor/mounts/host_links.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>

#include "monitor/mounts/test_support.h"

namespace amino::monitor::mounts {
namespace {

class HostLinksTest : public ::testing::Test {
 protected:
  // `prepare` runs before the mount table is read (the host tree the run starts with).
  void Start(const std::function<void()>& prepare = [] {}) {
    testing::MakeDir(scratch_ / "mp");
    testing::MakeDir(scratch_ / "h");
    prepare();
    Mount m;
    m.point = m.host_point = scratch_ / "mp";
    m.db_dir = scratch_ / "db";
    std::vector<Mount> mounts;
    mounts.push_back(std::move(m));
    table_ = MountTable(std::move(mounts));
    resolver_ = std::make_unique<PathResolver>(table_);
    links_ = std::make_unique<HostLinks>(table_, *resolver_);
  }
  void Link(const std::string& target, const std::string& rel) {
    ASSERT_EQ(symlink(target.c_str(), (scratch_ / rel).c_str()), 0) << rel;
  }
  // "mount:PATH" inside the mount, "host" when the path stays there, "errno N" on an error.
  std::string Into(const std::string& rel, bool follow) {
    auto r = links_->IntoMount(scratch_ / rel, follow);
    if (!r) return "host";
    if (!r->ok()) return "errno " + std::to_string(r->status().error());
    EXPECT_TRUE((*r)->is_amino());
    return "mount:" + (*r)->path + ((*r)->trailing_slash ? " (slash)" : "");
  }

  testing::ScratchDir scratch_;
  MountTable table_;
  std::unique_ptr<PathResolver> resolver_;
  std::unique_ptr<HostLinks> links_;
};

TEST_F(HostLinksTest, LinkToTheMountPointLeadsIntoTheMount) {
  Start();
  Link("mp", "proj");
  Link(scratch_ / "mp", "abs");
  EXPECT_EQ(Into("proj", true), "mount:/");
  EXPECT_EQ(Into("proj/", false), "mount:/ (slash)");  // a slash follows it anyway
  EXPECT_EQ(Into("proj", false), "host");              // lstat, unlink: the link itself
  EXPECT_EQ(Into("proj/new", false), "mount:/new");
  EXPECT_EQ(Into("abs/a/b/c", true), "mount:/a/b/c");  // names only the mount may have
  EXPECT_EQ(Into("proj/../h", true), "host");          // ".." from the mount point: its host parent
}

TEST_F(HostLinksTest, LinksPartwayAndInChains) {
  Start();
  Link("../mp/sub", "h/down");  // a target only the mount has: dangling on the host
  Link("h/down", "chain");
  Link("down", "h/again");
  EXPECT_EQ(Into("h/down", true), "mount:/sub");
  EXPECT_EQ(Into("h/down", false), "host");
  EXPECT_EQ(Into("h/down/", false), "mount:/sub/ (slash)");
  EXPECT_EQ(Into("chain/x/y", false), "mount:/sub/x/y");
  EXPECT_EQ(Into("h/again/x", true), "mount:/sub/x");
}

// After a chroot to the scratch directory, absolute targets and ".." are the process's: from
// its root, not the monitor's.
TEST_F(HostLinksTest, FromAChangedRoot) {
  Start();
  Link("/mp/sub", "h/in");     // absolute from the scratch directory as root
  Link("/../../mp", "h/top");  // ".." at the root stays there
  const std::string root = scratch_.path();
  auto into = [&](const std::string& own, bool follow) -> std::string {
    auto r = links_->IntoMount(own, follow, root);
    if (!r) return "host";
    if (!r->ok()) return "errno " + std::to_string(r->status().error());
    return "mount:" + (*r)->path;
  };
  EXPECT_EQ(into("/h/in", true), "mount:/sub");
  EXPECT_EQ(into("/h/in/x", false), "mount:/sub/x");
  EXPECT_EQ(into("/h/top/y", false), "mount:/y");
  EXPECT_EQ(into("/../h/in/x", false), "mount:/sub/x");
  EXPECT_EQ(into("/h/in", false), "host");  // the link itself
  EXPECT_EQ(into("/h", true), "host");
  // From the monitor's root the same links lead nowhere near the mount.
  EXPECT_EQ(Into("h/in/x", false), "host");
}

TEST_F(HostLinksTest, DirectoriesLeftUnderTheMountPointCountAsInside) {
  Start([&] { testing::MakeDir(scratch_ / "mp/build/obj"); });
  Link("mp/build", "b");
  EXPECT_EQ(Into("b", true), "mount:/build");
  EXPECT_EQ(Into("b/obj/x.o", false), "mount:/build/obj/x.o");
}

TEST_F(HostLinksTest, PathsThatStayOnTheHostAreLeftToTheKernel) {
  Start();
  testing::WriteFile(scratch_ / "h/file", "x");
  Link("h", "hl");
  Link("loop", "loop");
  Link("mpx", "near");  // a name that only starts like the mount point
  EXPECT_EQ(Into("h/file", true), "host");
  EXPECT_EQ(Into("hl/file", true), "host");
  EXPECT_EQ(Into("hl/new", false), "host");
  EXPECT_EQ(Into("missing/x/y", false), "host");
  EXPECT_EQ(Into("h/file/x", false), "host");  // ENOTDIR: the kernel's
  EXPECT_EQ(Into("loop/x", true), "host");     // ELOOP: the kernel's
  EXPECT_EQ(Into("near/x", true), "host");
}

TEST_F(HostLinksTest, NoMountsNothingToFind) {
  MountTable none;
  PathResolver resolver(none);
  HostLinks links(none, resolver);
  EXPECT_TRUE(links.empty());
  EXPECT_FALSE(links.IntoMount("/tmp", true).has_value());
}

}  // namespace
}  // namespace amino::monitor::mounts
