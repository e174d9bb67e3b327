#include "ptrace-ext/features_cache.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace amino::ptrace_ext {
namespace {

class FeaturesCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/amino-features-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  // The one kept file in the directory, or "".
  std::string Kept() const {
    std::string found;
    DIR* d = opendir(dir_.c_str());
    while (dirent* e = readdir(d)) {
      if (std::string(e->d_name).rfind("amino-features-", 0) == 0) found = dir_ + "/" + e->d_name;
    }
    closedir(d);
    return found;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
  }
  std::string dir_;
};

bool Same(const KernelFeatures& a, const KernelFeatures& b) {
  return EncodeFeatures(a) == EncodeFeatures(b);
}

TEST_F(FeaturesCacheTest, TheFirstRunProbesAndKeepsWhatTheNextOnesRead) {
  const KernelFeatures probed = ProbeKernel();
  EXPECT_TRUE(Same(ProbeKernelKept(dir_), probed));
  const std::string kept = Kept();
  ASSERT_FALSE(kept.empty());
  struct stat st;
  ASSERT_EQ(stat(kept.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // The next run takes the kept answer, not a probe's: change it and it shows.
  std::string text = Read(kept);
  const std::string from = "proc_mem " + std::string(probed.proc_mem ? "1" : "0");
  const std::string to = "proc_mem " + std::string(probed.proc_mem ? "0" : "1");
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), to);
  Write(kept, text);
  chmod(kept.c_str(), 0600);
  EXPECT_EQ(ProbeKernelKept(dir_).proc_mem, !probed.proc_mem);
}

TEST_F(FeaturesCacheTest, AnAnswerForAnotherSituationOrOpenToOthersIsNotTrusted) {
  const KernelFeatures probed = ProbeKernel();
  ProbeKernelKept(dir_);
  const std::string kept = Kept();
  ASSERT_FALSE(kept.empty());
  std::string text = Read(kept);
  const std::string flipped = "proc_mem " + std::string(probed.proc_mem ? "0" : "1");
  text.replace(text.find("proc_mem "), flipped.size(), flipped);
  // Another boot's answer under this name.
  std::string other = text;
  other.replace(other.find("boot ") + 5, 1, "#");
  Write(kept, other);
  chmod(kept.c_str(), 0600);
  EXPECT_EQ(ProbeKernelKept(dir_).proc_mem, probed.proc_mem);
  // A file others may write.
  Write(kept, text);
  chmod(kept.c_str(), 0620);
  EXPECT_EQ(ProbeKernelKept(dir_).proc_mem, probed.proc_mem);
}

TEST_F(FeaturesCacheTest, ADirectoryOthersMayWriteIsNotUsed) {
  chmod(dir_.c_str(), 0777);
  ProbeKernelKept(dir_);
  EXPECT_EQ(Kept(), "");
}

TEST(FeaturesTextTest, RoundTripsAndRefusesWhatIsIncomplete) {
  KernelFeatures f;
  f.kernel = "6.1.0 #1 SMP";
  f.user_notif = true;
  f.proc_mem = true;
  KernelFeatures back;
  ASSERT_TRUE(DecodeFeatures(EncodeFeatures(f), &back));
  EXPECT_TRUE(Same(f, back));
  const std::string text = EncodeFeatures(f);
  EXPECT_FALSE(DecodeFeatures(text.substr(0, text.size() - 10), &back));  // a field missing
  EXPECT_FALSE(DecodeFeatures(text + "later_field 1\n", &back));          // unknown
  std::string bad = text;
  bad.replace(bad.find("user_notif 1"), 12, "user_notif 2");
  EXPECT_FALSE(DecodeFeatures(bad, &back));
}

}  // namespace
}  // namespace amino::ptrace_ext
