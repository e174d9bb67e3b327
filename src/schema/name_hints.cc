#include "schema/name_hints.h"

namespace amino::schema {

std::array<NameHints::Slot, 256>& NameHints::Mine() {
  thread_local std::array<Slot, 256> slots;
  return slots;
}

const std::string* NameHints::Find(const void* store, uint64_t id) {
  const Slot& s = Mine()[id % 256];
  return s.store == store && s.id == id ? &s.path : nullptr;
}

void NameHints::Note(const void* store, uint64_t id, std::string_view path) {
  Slot& s = Mine()[id % 256];
  s.store = store;
  s.id = id;
  s.path.assign(path);
}

}  // namespace amino::schema
