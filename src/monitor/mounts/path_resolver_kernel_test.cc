// Path resolution against the kernel: chosen paths, then random ones, from every base directory
// (the worlds are in path_resolver_kernel_world.h).
#include <gtest/gtest.h>

#include "monitor/mounts/path_resolver_kernel_world.h"

namespace amino::monitor::mounts {
namespace {

TEST_F(PathResolverKernelTest, ChosenPaths) {
  const char* paths[] = {
      "amino", "amino/", "amino/.", "amino/..", "amino/../amino/g", "amino/d/f", "amino/d/f/",
      "amino/d/f/.", "amino/g/..", "amino//d///e/", "amino2/z", "amino2/../amino/g",
      // Symbolic links stored in the mount, leaving it and coming back.
      "amino/rel", "amino/rel/", "amino/rel/..", "amino/up", "amino/up/file", "amino/up/../amino/g",
      "amino/upup", "amino/upup/sim", "amino/abs_h", "amino/abs_in/f", "amino/abs_in/..",
      "amino/abs_other/y", "amino/loop", "amino/dangling", "amino/dotdot", "amino/dotdot/amino/g",
      "amino/d/back", "other/back/f", "other/back/../../other/x/y",
      // ".." after host components: links, files and missing names before the mount.
      "hl/../amino/g", "deep/../amino/hx", "deep/../../amino/g", "habs/../../amino/d",
      "h/file/../../amino/g", "missing/../amino/g", "h/sub/../../amino/d/f",
      // Names over NAME_MAX: refused where the walk reaches them, in order.
      "amino/LONG", "amino/missing/LONG", "amino/d/LONG/x", "LONG/../amino/g", "h/LONG",
      // Up and out.
      "../../../..", "/../../..", ".", "..", "", "/", "//", "missing", "missing/",
      // Host links into a mount.
      "hin", "hin/", "hin/g", "hin/d/f", "hin/d/e/..", "hin/..", "hin/../h/file", "hin_d", "hin_d/",
      "hin_d/f", "hin_d/e/../f", "hin_d/..", "hin_g", "hin_g/", "h/up_in", "h/up_in/", "h/up_in/..",
      "h/up_in/../f", "hchain/f", "hin_up", "hin_up/file", "hin_up/../amino/g", "hworld/amino/d/f",
      "hworld/hin/d", "hworld/other/x/y", "h/to_other", "h/to_other/y", "hin/missing",
      "hin_d/missing/x", "hin/rel/..", "hin/abs_h",
      // Slashes after a ".." the kernel took elsewhere.
      "habs/../amino/..//file"};
  for (const Base& b : Bases()) {
    for (std::string p : paths) {
      if (size_t at = p.find("LONG"); at != std::string::npos) p.replace(at, 4, kLong);
      Compare(b, p);
      if (!p.empty()) Compare(b, "/" + p);
    }
  }
  EXPECT_GT(amino_calls_, 500);
  EXPECT_GT(escapes_, 50);
  EXPECT_GT(rechecks_, 5);
  EXPECT_GT(into_mounts_, 100);
  printf("compared %d, schema calls %d, escapes %d, rechecks %d, host links into mounts %d\n",
         compared_, amino_calls_, escapes_, rechecks_, into_mounts_);
}

TEST_F(PathResolverKernelTest, RandomPaths) {
  const char* pool[] = {
      "h",       "sub",       "file",  "amino",  "hx",       "amino2", "z",       "hl",   "deep",
      "habs",    "d",         "e",     "f",      "g",        "rel",    "up",      "upup", "abs_h",
      "abs_in",  "abs_other", "loop",  "dotdot", "dangling", "back",   "other",   "x",    "y",
      "missing", ".",         "..",    "..",     "",         "amino",  "..",      "LONG", "hin",
      "hin_d",   "hin_g",     "up_in", "hchain", "hin_up",   "hworld", "to_other"};
  const int n_pool = sizeof pool / sizeof pool[0];
  int count = 1500;
  if (const char* env = getenv("AMINO_MOUNTS_RANDOM_PATHS")) count = atoi(env);
  std::mt19937 rng(7);
  std::vector<Base> bases = Bases();
  for (int i = 0; i < count; ++i) {
    std::string p = rng() % 4 == 0 ? "/" : "";
    int n = 1 + static_cast<int>(rng() % 6);
    for (int k = 0; k < n; ++k) {
      std::string c = pool[rng() % n_pool];
      if (c == "LONG") c = rng() % 4 == 0 ? kLong : "e";
      p += c;
      if (k + 1 < n || rng() % 4 == 0) p += rng() % 5 == 0 ? "//" : "/";
    }
    Compare(bases[rng() % bases.size()], p);
  }
  EXPECT_EQ(compared_, 2 * count);
  EXPECT_GT(amino_calls_, count / 2);
  EXPECT_GT(escapes_, count / 20);
  EXPECT_GT(into_mounts_, count / 20);
  printf("compared %d, schema calls %d, escapes %d, rechecks %d, host links into mounts %d\n",
         compared_, amino_calls_, escapes_, rechecks_, into_mounts_);
}

}  // namespace
}  // namespace amino::monitor::mounts
