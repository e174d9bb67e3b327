#include "rvm/page_map.h"

#include <sys/mman.h>

#include "rvm/sigsafe.h"

namespace amino::rvm {

PageMap::~PageMap() {
  if (slots_) munmap(slots_, capacity_ * sizeof(Entry));
}

PageMap::Entry* PageMap::Find(uintptr_t page) {
  if (size_ == 0) return nullptr;
  size_t mask = capacity_ - 1;
  for (size_t i = Hash(page) & mask;; i = (i + 1) & mask) {
    if (slots_[i].page == page) return &slots_[i];
    if (slots_[i].page == 0) return nullptr;
  }
}

PageMap::Entry* PageMap::Insert(uintptr_t page, uint32_t record) {
  // At most half full: probes stay short.
  if ((size_ + 1) * 2 > capacity_ && !Grow()) return nullptr;
  size_t mask = capacity_ - 1;
  size_t i = Hash(page) & mask;
  while (slots_[i].page != 0) i = (i + 1) & mask;
  slots_[i] = Entry{page, record, 0};
  ++size_;
  return &slots_[i];
}

void PageMap::Erase(uintptr_t page) {
  Entry* e = Find(page);
  if (!e) return;
  // Backward-shift deletion: later entries of the probe run move into the hole when their home
  // slot does not lie between the hole and them, so no tombstones accumulate.
  size_t mask = capacity_ - 1;
  size_t hole = static_cast<size_t>(e - slots_);
  size_t j = hole;
  for (;;) {
    j = (j + 1) & mask;
    if (slots_[j].page == 0) break;
    size_t home = Hash(slots_[j].page) & mask;
    bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (stays) continue;
    slots_[hole] = slots_[j];
    hole = j;
  }
  slots_[hole] = Entry{0, 0, 0};
  --size_;
}

bool PageMap::Grow() {
  size_t capacity = capacity_ ? capacity_ * 2 : 4096 / sizeof(Entry);
  auto* slots = static_cast<Entry*>(MapAnonymous(capacity * sizeof(Entry)));
  if (!slots) return false;
  size_t mask = capacity - 1;
  for (size_t k = 0; k < capacity_; ++k) {
    if (slots_[k].page == 0) continue;
    size_t i = Hash(slots_[k].page) & mask;
    while (slots[i].page != 0) i = (i + 1) & mask;
    slots[i] = slots_[k];
  }
  if (slots_) munmap(slots_, capacity_ * sizeof(Entry));
  slots_ = slots;
  capacity_ = capacity;
  return true;
}

}  // namespace amino::rvm
