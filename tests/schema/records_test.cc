// Key and value encodings of the schema's records, and the order of Path keys that readdir and
// directory rename rely on: under Berkeley DB's default (byte-wise) comparator each directory's
// entries form one contiguous range, ordered by depth first.
#include "schema/records.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace amino::schema {
namespace {

// Berkeley DB's default btree order: memcmp on the common length, then the shorter first.
bool DbLess(const std::string& a, const std::string& b) {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                      [](char x, char y) { return uint8_t(x) < uint8_t(y); });
}

TEST(RecordsTest, PathDepth) {
  EXPECT_EQ(PathDepth("/"), 0);
  EXPECT_EQ(PathDepth("/a"), 1);
  EXPECT_EQ(PathDepth("/a/b"), 2);
  EXPECT_EQ(PathDepth("/a/b/cde"), 3);
}

TEST(RecordsTest, PathKeyRoundTrips) {
  for (std::string p : std::vector<std::string>{"/", "/a", "/a/b", "/x\x01y/\xff"}) {
    EXPECT_EQ(PathFromKey(PathKey(p)), p);
  }
}

TEST(RecordsTest, PathKeysOrderByDepthThenBytes) {
  std::vector<std::string> paths = {"/zzz", "/a/b", "/a", "/b/a/c", "/a/a", "/"};
  std::vector<std::string> keys;
  for (const std::string& p : paths) keys.push_back(PathKey(p));
  std::sort(keys.begin(), keys.end(), DbLess);
  std::vector<std::string> sorted;
  for (const std::string& k : keys) sorted.push_back(PathFromKey(k));
  EXPECT_EQ(sorted, (std::vector<std::string>{"/", "/a", "/zzz", "/a/a", "/a/b", "/b/a/c"}));
}

// A random tree whose names use bytes that sort before and after '/' ("a-b", "a.b", "a0",
// "a\x01", "a\xff"): each directory's entries must still be exactly the keys in the range that
// starts at DirEntriesPrefix(dir) and runs while keys carry that prefix, in byte order.
TEST(RecordsTest, EachDirectorysEntriesAreContiguousAndOrdered) {
  const std::vector<std::string> names = {"a",     "a-b", "a.b", "a0", "ab", std::string("a\x01"),
                                          "a\xff", "b",   "A",   "~"};
  std::mt19937 rng(7);
  std::set<std::string> paths = {"/"};
  std::vector<std::string> dirs = {"/"};
  for (int i = 0; i < 400; ++i) {
    std::string dir = dirs[rng() % dirs.size()];
    std::string p = JoinPath(dir, names[rng() % names.size()]);
    if (paths.insert(p).second && rng() % 2 == 0) dirs.push_back(p);
  }
  std::vector<std::string> keys;
  for (const std::string& p : paths) keys.push_back(PathKey(p));
  std::sort(keys.begin(), keys.end(), DbLess);

  for (const std::string& dir : dirs) {
    std::string prefix = DirEntriesPrefix(dir);
    auto first = std::lower_bound(keys.begin(), keys.end(), prefix, DbLess);
    std::vector<std::string> scanned;
    for (auto it = first; it != keys.end() && it->compare(0, prefix.size(), prefix) == 0; ++it) {
      scanned.push_back(PathFromKey(*it));
    }
    std::vector<std::string> expected;
    for (const std::string& p : paths) {
      if (p != "/" && ParentPath(p) == dir) expected.push_back(p);
    }
    std::sort(expected.begin(), expected.end(), DbLess);
    EXPECT_EQ(scanned, expected) << "entries of " << dir;
    // No key outside the range belongs to the directory.
    size_t total = 0;
    for (const std::string& k : keys) total += k.compare(0, prefix.size(), prefix) == 0;
    EXPECT_EQ(total, expected.size()) << dir;
  }
}

TEST(RecordsTest, PathHelpers) {
  EXPECT_EQ(JoinPath("/", "a"), "/a");
  EXPECT_EQ(JoinPath("/a", "b"), "/a/b");
  EXPECT_EQ(ParentPath("/"), "/");
  EXPECT_EQ(ParentPath("/a"), "/");
  EXPECT_EQ(ParentPath("/a/b"), "/a");
  EXPECT_EQ(BaseName("/"), "");
  EXPECT_EQ(BaseName("/a/bc"), "bc");
  EXPECT_TRUE(IsSameOrDescendant("/a", "/a"));
  EXPECT_TRUE(IsSameOrDescendant("/a/b", "/a"));
  EXPECT_TRUE(IsSameOrDescendant("/a", "/"));
  EXPECT_FALSE(IsSameOrDescendant("/ab", "/a"));
  EXPECT_FALSE(IsSameOrDescendant("/a", "/a/b"));
}

TEST(RecordsTest, IdAndPageKeysSortNumerically) {
  // Big-endian: byte order is numeric order, so a file's pages are contiguous after its inode
  // record and in page order.
  EXPECT_TRUE(DbLess(IdKey(1), IdKey(2)));
  EXPECT_TRUE(DbLess(IdKey(255), IdKey(256)));
  EXPECT_TRUE(DbLess(IdKey(7), PageKey(7, 0)));
  EXPECT_TRUE(DbLess(PageKey(7, 1), PageKey(7, 256)));
  EXPECT_TRUE(DbLess(PageKey(7, ~0ull), IdKey(8)));
  EXPECT_TRUE(DbLess(XattrKey(7, "user.a"), XattrKey(7, "user.b")));

  FileId id = 0;
  uint64_t page = 0;
  ASSERT_TRUE(ParseIdKey(IdKey(0x0102030405060708ull), &id));
  EXPECT_EQ(id, 0x0102030405060708ull);
  ASSERT_TRUE(ParsePageKey(PageKey(42, 1ull << 40), &id, &page));
  EXPECT_EQ(id, 42u);
  EXPECT_EQ(page, 1ull << 40);
  EXPECT_FALSE(ParseIdKey(PageKey(1, 1), &id));
  EXPECT_FALSE(ParsePageKey(IdKey(1), &id, &page));
}

Attr SampleAttr() {
  Attr a;
  a.mode = S_IFREG | 04755;
  a.nlink = 3;
  a.uid = 1000;
  a.gid = 100;
  a.size = kMaxFileSize;
  a.blocks = 8;
  a.rdev = 0x0801;
  a.atime = {1, 2};
  a.mtime = {-5, 999999999};
  a.ctime = {1700000000, 0};
  return a;
}

void ExpectSameAttr(const Attr& a, const Attr& b) {
  EXPECT_EQ(a.mode, b.mode);
  EXPECT_EQ(a.nlink, b.nlink);
  EXPECT_EQ(a.uid, b.uid);
  EXPECT_EQ(a.gid, b.gid);
  EXPECT_EQ(a.size, b.size);
  EXPECT_EQ(a.blocks, b.blocks);
  EXPECT_EQ(a.rdev, b.rdev);
  EXPECT_EQ(a.atime.tv_sec, b.atime.tv_sec);
  EXPECT_EQ(a.atime.tv_nsec, b.atime.tv_nsec);
  EXPECT_EQ(a.mtime.tv_sec, b.mtime.tv_sec);
  EXPECT_EQ(a.mtime.tv_nsec, b.mtime.tv_nsec);
  EXPECT_EQ(a.ctime.tv_sec, b.ctime.tv_sec);
  EXPECT_EQ(a.ctime.tv_nsec, b.ctime.tv_nsec);
}

TEST(RecordsTest, AttrRoundTripsAndRejectsDamage) {
  Attr a = SampleAttr();
  std::string enc = EncodeAttr(a);
  Attr b;
  ASSERT_TRUE(DecodeAttr(enc, &b));
  ExpectSameAttr(a, b);
  EXPECT_FALSE(DecodeAttr(enc.substr(0, enc.size() - 1), &b));
  EXPECT_FALSE(DecodeAttr(enc + "x", &b));
  EXPECT_FALSE(DecodeAttr("", &b));
}

TEST(RecordsTest, AttrFlagsRoundTripAndLeaveFlaglessEncodingsAsBefore) {
  Attr a = SampleAttr();
  const std::string plain = EncodeAttr(a);
  EXPECT_EQ(plain[0], 1);  // the version 1 encoding, which databases without flags hold
  a.flags = kHasAccessAcl | kHasDefaultAcl;
  const std::string flagged = EncodeAttr(a);
  EXPECT_EQ(flagged.size(), plain.size() + 4);
  Attr b;
  ASSERT_TRUE(DecodeAttr(flagged, &b));
  ExpectSameAttr(a, b);
  EXPECT_EQ(b.flags, a.flags);
  ASSERT_TRUE(DecodeAttr(plain, &b));
  EXPECT_EQ(b.flags, 0u);
  // Version 2 with no flag, or an unknown flag, is damage.
  std::string zero = flagged;
  zero.replace(zero.size() - 4, 4, std::string(4, '\0'));
  EXPECT_FALSE(DecodeAttr(zero, &b));
  std::string unknown = flagged;
  unknown[unknown.size() - 4] = 8;
  EXPECT_FALSE(DecodeAttr(unknown, &b));
  EXPECT_FALSE(DecodeAttr(flagged.substr(0, flagged.size() - 1), &b));
}

TEST(RecordsTest, PathValueRoundTripsWithAndWithoutPlmd) {
  PathValue v;
  v.id = 99;
  v.mode = S_IFREG | 0644;
  v.plmd = SampleAttr();
  PathValue w;
  ASSERT_TRUE(DecodePathValue(EncodePathValue(v), &w));
  EXPECT_EQ(w.id, 99u);
  EXPECT_EQ(w.mode, v.mode);
  ASSERT_TRUE(w.plmd.has_value());
  ExpectSameAttr(*v.plmd, *w.plmd);

  v.plmd.reset();
  ASSERT_TRUE(DecodePathValue(EncodePathValue(v), &w));
  EXPECT_FALSE(w.plmd.has_value());
  std::string enc = EncodePathValue(v);
  EXPECT_FALSE(DecodePathValue(enc.substr(0, enc.size() - 1), &w));
  EXPECT_FALSE(DecodePathValue(enc + "junk", &w));
}

TEST(RecordsTest, APathEntryIsTheRecordsIdAndTypeAndItsShapeIsChecked) {
  PathValue v;
  v.id = 0x0123456789abcdefULL;
  v.mode = S_IFDIR | 0755;
  for (int form = 0; form < 3; ++form) {
    v.plmd.reset();
    if (form > 0) v.plmd = SampleAttr();
    if (form == 2) v.plmd->flags = kHasAccessAcl;  // the longer, flagged stat record
    const std::string enc = EncodePathValue(v);
    FileId id = 0;
    uint32_t mode = 0;
    ASSERT_TRUE(DecodePathEntry(enc, &id, &mode)) << "form " << form;
    EXPECT_EQ(id, v.id);
    EXPECT_EQ(mode, v.mode);
    // Whatever DecodePathValue takes for damage by its length, so does DecodePathEntry.
    for (size_t cut = 0; cut < enc.size(); ++cut) {
      EXPECT_FALSE(DecodePathEntry(enc.substr(0, cut), &id, &mode)) << form << " cut " << cut;
    }
    EXPECT_FALSE(DecodePathEntry(enc + "x", &id, &mode)) << "form " << form;
    std::string bad_has = enc;
    bad_has[12] = 2;
    EXPECT_FALSE(DecodePathEntry(bad_has, &id, &mode)) << "form " << form;
    if (form > 0) {
      std::string bad_version = enc;
      bad_version[13] = 7;
      EXPECT_FALSE(DecodePathEntry(bad_version, &id, &mode)) << "form " << form;
    }
  }
}

TEST(RecordsTest, InodeValueRoundTripsWithAndWithoutDlmd) {
  InodeValue v;
  v.link_count = 2;
  v.open_count = 5;
  v.dlmd = SampleAttr();
  InodeValue w;
  ASSERT_TRUE(DecodeInodeValue(EncodeInodeValue(v), &w));
  EXPECT_EQ(w.link_count, 2u);
  EXPECT_EQ(w.open_count, 5u);
  ASSERT_TRUE(w.dlmd.has_value());
  ExpectSameAttr(*v.dlmd, *w.dlmd);

  v.dlmd.reset();
  ASSERT_TRUE(DecodeInodeValue(EncodeInodeValue(v), &w));
  EXPECT_FALSE(w.dlmd.has_value());
  std::string enc = EncodeInodeValue(v);
  EXPECT_FALSE(DecodeInodeValue(enc.substr(0, 3), &w));
}

TEST(RecordsTest, SuperblockRoundTripsAndChecksMagic) {
  Superblock s;
  s.created = 1700000000;
  std::string enc = EncodeSuperblock(s);
  EXPECT_EQ(enc.substr(0, kSuperblockMagic.size()), kSuperblockMagic);
  Superblock t;
  ASSERT_TRUE(DecodeSuperblock(enc, &t));
  EXPECT_EQ(t.format, 2u);
  EXPECT_EQ(t.transfer_unit, kTransferUnit);
  EXPECT_EQ(t.created, 1700000000);
  std::string bad = enc;
  bad[0] = 'X';
  EXPECT_FALSE(DecodeSuperblock(bad, &t));
  EXPECT_FALSE(DecodeSuperblock(enc.substr(0, enc.size() - 1), &t));
  // Older layouts still open; newer ones are refused.
  s.format = 1;
  ASSERT_TRUE(DecodeSuperblock(EncodeSuperblock(s), &t));
  EXPECT_EQ(t.format, 1u);
  s.format = kFormat + 1;
  EXPECT_FALSE(DecodeSuperblock(EncodeSuperblock(s), &t));
  EXPECT_EQ(SuperblockFormat(EncodeSuperblock(s)), kFormat + 1);
  EXPECT_EQ(SuperblockFormat(bad), 0u);
}

}  // namespace
}  // namespace amino::schema
