// The fixture of the mount's unit tests: a file system made in a fresh directory under /dev/shm
// and opened as a mount's MountFs (a real database, no monitor), removed after each test.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <string>

#include "monitor/service/mount_fs.h"
#include "schema/filesystem.h"

namespace amino::monitor::service {

class ScratchMountTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/dev/shm/amino-unit-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    ASSERT_TRUE(schema::FileSystem::Mkfs(root_ + "/db").ok());
    auto fs = schema::FileSystem::Open(root_ + "/db");
    ASSERT_TRUE(fs.ok()) << fs.status().message();
    mfs_.fs = std::move(*fs);
    mount_.point = root_ + "/mp";
    mount_.db_dir = root_ + "/db";
    mfs_.mount = &mount_;
  }
  void TearDown() override {
    mfs_.fs.reset();
    std::string cmd = "rm -rf '" + root_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }

  std::string root_;
  mounts::Mount mount_;
  MountFs mfs_;
};

}  // namespace amino::monitor::service
