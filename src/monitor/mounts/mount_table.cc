// The mount table (see mount_table.h).
#include "monitor/mounts/mount_table.h"

#include "monitor/mounts/lexical_path.h"

namespace amino::monitor::mounts {

const char* DurabilityName(Durability d) {
  switch (d) {
    case Durability::kAsync:
      return "async";
    case Durability::kSync:
      return "sync";
  }
  return "?";
}

std::string Mount::HostPathOf(std::string_view rel) const {
  if (rel.empty() || rel == "/") return host_point;
  return host_point + std::string(rel);
}

MountTable::MountTable(std::vector<Mount> mounts) : mounts_(std::move(mounts)) {
  // The views point into mounts_'s elements, whose addresses a move of the vector keeps.
  for (const Mount& m : mounts_) {
    spellings_.push_back({m.point, &m});
    if (!m.host_point.empty() && m.host_point != m.point) spellings_.push_back({m.host_point, &m});
  }
  for (const Spelling& s : spellings_) {
    if (min_length_ == 0 || s.path.size() < min_length_) min_length_ = s.path.size();
    if (s.path.size() > max_length_) max_length_ = s.path.size();
  }
}

std::optional<MountMatch> MountTable::Find(std::string_view path) const {
  if (path.size() < min_length_) return std::nullopt;
  const Spelling* best = nullptr;
  for (const Spelling& s : spellings_) {
    if (IsWithin(path, s.path) && (!best || s.path.size() > best->path.size())) best = &s;
  }
  if (!best) return std::nullopt;
  return MountMatch{best->mount, RemainderBelow(path, best->path)};
}

const Mount* MountTable::AtPoint(std::string_view path) const {
  if (path.size() < min_length_ || path.size() > max_length_) return nullptr;
  for (const Spelling& s : spellings_) {
    if (s.path.size() == path.size() && s.path == path) return s.mount;
  }
  return nullptr;
}

}  // namespace amino::monitor::mounts
