#include "schema/records.h"

#include <cstring>

namespace amino::schema {
namespace {

// Fixed-width little-endian fields for values; big-endian for keys (so byte order sorts).
class Writer {
 public:
  explicit Writer(std::string* out) : out_(out) {}
  template <typename T>
  void Put(T v) {
    char bytes[sizeof(T)];  // little-endian whatever the host; one append, not one per byte
    for (size_t i = 0; i < sizeof(T); ++i)
      bytes[i] = static_cast<char>((uint64_t(v) >> (8 * i)) & 0xff);
    out_->append(bytes, sizeof(T));
  }

 private:
  std::string* out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T>
  bool Get(T* v) {
    if (in_.size() < sizeof(T)) return false;
    uint64_t r = 0;
    for (size_t i = 0; i < sizeof(T); ++i) r |= uint64_t(uint8_t(in_[i])) << (8 * i);
    *v = static_cast<T>(r);
    in_.remove_prefix(sizeof(T));
    return true;
  }
  bool empty() const { return in_.empty(); }
  size_t size() const { return in_.size(); }

 private:
  std::string_view in_;
};

void PutBE64(std::string* out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetBE64(std::string_view in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | uint8_t(in[i]);
  return v;
}

// Version 2 is version 1 followed by a u32 of flags. Attrs without flags keep the version 1
// encoding, so databases written before flags existed read unchanged and most records stay as
// short as before.
constexpr uint8_t kAttrVersion = 1;
constexpr uint8_t kAttrVersionWithFlags = 2;
constexpr size_t kAttrSize = 1 + 4 * 4 + 8 * 3 + 3 * 12 + 4;

void PutTime(Writer& w, const timespec& t) {
  w.Put<int64_t>(t.tv_sec);
  w.Put<uint32_t>(static_cast<uint32_t>(t.tv_nsec));
}

bool GetTime(Reader& r, timespec* t) {
  int64_t s;
  uint32_t ns;
  if (!r.Get(&s) || !r.Get(&ns) || ns >= 1000000000u) return false;
  t->tv_sec = s;
  t->tv_nsec = ns;
  return true;
}

}  // namespace

uint16_t PathDepth(std::string_view path) {
  if (path.size() <= 1) return 0;
  uint16_t d = 0;
  for (char ch : path) d += ch == '/';
  return d;
}

std::string PathKey(std::string_view path) {
  std::string k;
  uint16_t d = PathDepth(path);
  k.reserve(path.size() + 2);
  k.push_back(static_cast<char>(d >> 8));
  k.push_back(static_cast<char>(d & 0xff));
  k.append(path);
  return k;
}

std::string PathFromKey(std::string_view key) {
  return key.size() < 2 ? std::string() : std::string(key.substr(2));
}

std::string DirEntriesPrefix(std::string_view dir) {
  std::string p = dir == "/" ? std::string("/") : std::string(dir) + "/";
  uint16_t d = static_cast<uint16_t>(PathDepth(dir) + 1);
  std::string k;
  k.push_back(static_cast<char>(d >> 8));
  k.push_back(static_cast<char>(d & 0xff));
  k.append(p);
  return k;
}

std::string JoinPath(std::string_view dir, std::string_view name) {
  std::string p(dir);
  if (p != "/") p.push_back('/');
  p.append(name);
  return p;
}

std::string_view ParentPath(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return "/";
  return path.substr(0, slash);
}

std::string_view BaseName(std::string_view path) {
  if (path == "/") return "";
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool IsSameOrDescendant(std::string_view path, std::string_view ancestor) {
  if (ancestor == "/") return true;
  if (path.size() < ancestor.size() || path.substr(0, ancestor.size()) != ancestor) return false;
  return path.size() == ancestor.size() || path[ancestor.size()] == '/';
}

std::string IdKey(FileId id) {
  std::string k;
  PutBE64(&k, id);
  return k;
}

std::string PageKey(FileId id, uint64_t page) {
  std::string k;
  PutBE64(&k, id);
  PutBE64(&k, page);
  return k;
}

std::string XattrKey(FileId id, std::string_view name) {
  std::string k;
  PutBE64(&k, id);
  k.append(name);
  return k;
}

bool ParseIdKey(std::string_view key, FileId* id) {
  if (key.size() != 8) return false;
  *id = GetBE64(key);
  return true;
}

bool ParsePageKey(std::string_view key, FileId* id, uint64_t* page) {
  if (key.size() != 16) return false;
  *id = GetBE64(key);
  *page = GetBE64(key.substr(8));
  return true;
}

static void AppendAttr(const Attr& a, std::string* out) {
  Writer w(out);
  w.Put<uint8_t>(a.flags ? kAttrVersionWithFlags : kAttrVersion);
  w.Put(a.mode);
  w.Put(a.nlink);
  w.Put(a.uid);
  w.Put(a.gid);
  w.Put(a.size);
  w.Put(a.blocks);
  w.Put(a.rdev);
  PutTime(w, a.atime);
  PutTime(w, a.mtime);
  PutTime(w, a.ctime);
  if (a.flags) w.Put(a.flags);
}

std::string EncodeAttr(const Attr& a) {
  std::string out;
  out.reserve(kAttrSize);
  AppendAttr(a, &out);
  return out;
}

static bool DecodeAttrFrom(Reader& r, Attr* a) {
  uint8_t version;
  if (!r.Get(&version) || (version != kAttrVersion && version != kAttrVersionWithFlags)) {
    return false;
  }
  if (!(r.Get(&a->mode) && r.Get(&a->nlink) && r.Get(&a->uid) && r.Get(&a->gid) &&
        r.Get(&a->size) && r.Get(&a->blocks) && r.Get(&a->rdev) && GetTime(r, &a->atime) &&
        GetTime(r, &a->mtime) && GetTime(r, &a->ctime))) {
    return false;
  }
  a->flags = 0;
  if (version == kAttrVersion) return true;
  // Version 2 always has some flag set: one canonical encoding per Attr.
  return r.Get(&a->flags) && a->flags != 0 && (a->flags & ~(kHasAccessAcl | kHasDefaultAcl)) == 0;
}

bool DecodeAttr(std::string_view in, Attr* a) {
  Reader r(in);
  return DecodeAttrFrom(r, a) && r.empty();
}

std::string EncodePathValue(const PathValue& v) {
  std::string out;
  out.reserve(sizeof v.id + sizeof v.mode + 1 + kAttrSize);
  Writer w(&out);
  w.Put(v.id);
  w.Put(v.mode);
  w.Put<uint8_t>(v.plmd ? 1 : 0);
  if (v.plmd) AppendAttr(*v.plmd, &out);
  return out;
}

bool DecodePathValue(std::string_view in, PathValue* v) {
  Reader r(in);
  uint8_t has;
  if (!r.Get(&v->id) || !r.Get(&v->mode) || !r.Get(&has) || has > 1) return false;
  if (!has) {
    v->plmd.reset();
    return r.empty();
  }
  Attr a;
  if (!DecodeAttrFrom(r, &a) || !r.empty()) return false;
  v->plmd = a;
  return true;
}

bool DecodePathEntry(std::string_view in, FileId* id, uint32_t* mode) {
  Reader r(in);
  uint8_t has;
  if (!r.Get(id) || !r.Get(mode) || !r.Get(&has) || has > 1) return false;
  if (!has) return r.empty();
  uint8_t version;
  if (!r.Get(&version)) return false;
  if (version == kAttrVersion) return r.size() == kAttrSize - 1 - sizeof(uint32_t);
  return version == kAttrVersionWithFlags && r.size() == kAttrSize - 1;
}

std::string EncodeInodeValue(const InodeValue& v) {
  std::string out;
  Writer w(&out);
  w.Put(v.link_count);
  w.Put(v.open_count);
  w.Put<uint8_t>(v.dlmd ? 1 : 0);
  if (v.dlmd) out += EncodeAttr(*v.dlmd);
  return out;
}

bool DecodeInodeValue(std::string_view in, InodeValue* v) {
  Reader r(in);
  uint8_t has;
  if (!r.Get(&v->link_count) || !r.Get(&v->open_count) || !r.Get(&has) || has > 1) return false;
  if (!has) {
    v->dlmd.reset();
    return r.empty();
  }
  Attr a;
  if (!DecodeAttrFrom(r, &a) || !r.empty()) return false;
  v->dlmd = a;
  return true;
}

std::string EncodeSuperblock(const Superblock& s) {
  std::string out(kSuperblockMagic);
  Writer w(&out);
  w.Put(s.format);
  w.Put(s.transfer_unit);
  w.Put(s.created);
  return out;
}

bool DecodeSuperblock(std::string_view in, Superblock* s) {
  return SuperblockFormat(in) != 0 && DecodeSuperblockOfAnyFormat(in, s) && s->format <= kFormat &&
         s->transfer_unit == kTransferUnit;
}

bool DecodeSuperblockOfAnyFormat(std::string_view in, Superblock* s) {
  if (in.substr(0, kSuperblockMagic.size()) != kSuperblockMagic) return false;
  Reader r(in.substr(kSuperblockMagic.size()));
  return r.Get(&s->format) && r.Get(&s->transfer_unit) && r.Get(&s->created) && r.empty() &&
         s->format >= 1;
}

uint32_t SuperblockFormat(std::string_view in) {
  Superblock s;
  return DecodeSuperblockOfAnyFormat(in, &s) ? s.format : 0;
}

}  // namespace amino::schema
