// ParseShebang against the rules of Linux's fs/binfmt_script.c.
#include "monitor/service/shebang.h"

#include <gtest/gtest.h>

#include <string>

namespace amino::monitor::service {
namespace {

Shebang Parsed(const std::string& head) {
  Shebang sb;
  EXPECT_TRUE(ParseShebang(head, &sb)) << head;
  return sb;
}

TEST(ShebangTest, NameAndOneArgumentTakingTheRestOfTheLine) {
  Shebang sb = Parsed("#!/bin/sh\necho hi\n");
  EXPECT_EQ(sb.name, "/bin/sh");
  EXPECT_FALSE(sb.arg);
  sb = Parsed("#! \t/usr/bin/env python3 -u\n");
  EXPECT_EQ(sb.name, "/usr/bin/env");
  ASSERT_TRUE(sb.arg);
  EXPECT_EQ(*sb.arg, "python3 -u");  // one argument: the kernel does not split it
  sb = Parsed("#!/bin/sh\t -x\t \n");
  EXPECT_EQ(sb.name, "/bin/sh");
  ASSERT_TRUE(sb.arg);
  EXPECT_EQ(*sb.arg, "-x");  // blanks before the newline are dropped
  sb = Parsed("#!/bin/sh   \n");
  EXPECT_FALSE(sb.arg);
}

TEST(ShebangTest, NotAScript) {
  Shebang sb;
  EXPECT_FALSE(
      ParseShebang("\x7f"
                   "ELF\x02\x01\x01",
                   &sb));
  EXPECT_FALSE(ParseShebang("#/bin/sh\n", &sb));
  EXPECT_FALSE(ParseShebang("#!\n", &sb));       // no interpreter
  EXPECT_FALSE(ParseShebang("#!  \t \n", &sb));  // only blanks
  EXPECT_FALSE(ParseShebang("", &sb));
  EXPECT_FALSE(ParseShebang("#", &sb));
}

TEST(ShebangTest, LinesLongerThanTheBuffer) {
  // The kernel reads 256 bytes: a line without its newline there still runs when the name
  // ended inside them (the argument is cut short)...
  std::string head = "#!/bin/sh " + std::string(400, 'a');
  Shebang sb = Parsed(head);
  EXPECT_EQ(sb.name, "/bin/sh");
  ASSERT_TRUE(sb.arg);
  EXPECT_EQ(sb.arg->size(), kExecHeadSize - 1 - 10);
  // ...but not when the name itself may have been cut.
  EXPECT_FALSE(ParseShebang("#!/" + std::string(400, 'b'), &sb));
  // A NUL ends the name as a blank would.
  sb = Parsed(std::string("#!/bin/sh\0-x\n", 13));
  EXPECT_EQ(sb.name, "/bin/sh");
}

}  // namespace
}  // namespace amino::monitor::service
