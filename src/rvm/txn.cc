#include "rvm/txn.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "rvm/store.h"

namespace amino::rvm {
namespace {

// initial-exec: reading the pointer in the signal handler must not call into the dynamic
// linker (which may allocate) the way a lazily allocated TLS block would.
__thread ThreadTxn* t_txn __attribute__((tls_model("initial-exec"))) = nullptr;

pthread_key_t g_exit_key;
std::once_flag g_exit_key_once;

bool SetProtection(uintptr_t start, size_t bytes, int prot) {
  return mprotect(reinterpret_cast<void*>(start), bytes, prot) == 0;
}

}  // namespace

void Fatal(const char* message) {
  ssize_t unused = write(STDERR_FILENO, message, strlen(message));
  (void)unused;
  abort();
}

ThreadTxn* ThreadTxn::Current() { return t_txn; }

ThreadTxn* ThreadTxn::Get() {
  if (t_txn) return t_txn;
  std::call_once(g_exit_key_once, [] { pthread_key_create(&g_exit_key, OnThreadExit); });
  auto* txn = new (std::nothrow) ThreadTxn();
  if (!txn) return nullptr;
  pthread_setspecific(g_exit_key, txn);
  t_txn = txn;
  return txn;
}

// A thread that ends with transactions open has them aborted, like a process that exits
// (DESIGN.md §4: a transaction nobody is attached to is aborted).
void ThreadTxn::OnThreadExit(void* self) {
  auto* txn = static_cast<ThreadTxn*>(self);
  while (txn->depth_ > 0) txn->Abort();
  t_txn = nullptr;
  delete txn;
}

ThreadTxn::ThreadTxn() : page_size_(PageSize()), images_(PageSize()) {}

ThreadTxn::~ThreadTxn() = default;

int ThreadTxn::Begin() {
  if (!levels_.push_back(static_cast<uint32_t>(records_.size()))) return ENOMEM;
  if (depth_ > 0) ProtectWritable([](uintptr_t) { return false; });
  ++depth_;
  return 0;
}

int ThreadTxn::Commit() {
  if (depth_ == 0) return EINVAL;
  if (depth_ > 1) {
    CommitNested();
    return 0;
  }
  if (!(prepared_ && !written_since_prepare_) && HasPersistentPages()) {
    int err = WritePersistent(nullptr);
    if (err != 0) {
      AbortLevel();
      return err;
    }
  }
  FinishTopLevel();
  return 0;
}

int ThreadTxn::Abort() {
  if (depth_ == 0) return EINVAL;
  AbortLevel();
  return 0;
}

int ThreadTxn::Prepare(DB_TXN* parent) {
  if (depth_ != 1 || parent == nullptr) return EINVAL;
  int err = WritePersistent(parent);
  if (err != 0) return err;
  // Writes after this point must fault, so that Commit knows to write them itself.
  ProtectWritable([](uintptr_t) { return false; });
  prepared_ = true;
  written_since_prepare_ = false;
  return 0;
}

bool ThreadTxn::Claim(rvm_region* region) {
  ThreadTxn* owner = region->owner.load(std::memory_order_acquire);
  if (owner == this) return true;
  if (owner != nullptr) return false;
  if (!owned_.push_back(region)) return false;
  if (!region->owner.compare_exchange_strong(owner, this, std::memory_order_acq_rel)) {
    owned_.pop_back();
    return false;
  }
  return true;
}

int ThreadTxn::OnWriteFault(rvm_region* region, uintptr_t addr, bool from_fault) {
  if (depth_ == 0) return EPERM;
  if (!Claim(region)) return EBUSY;
  const uintptr_t page = addr & ~(page_size_ - 1);
  const uint32_t level = static_cast<uint32_t>(depth_);
  PageMap::Entry* e = map_.Find(page);
  if (e && records_[e->record].level == level) {
    // This level saved the page already; Begin or Prepare made it read-only since.
    if (!e->writable) {
      if (!writable_.push_back(Writable{page, region})) return ENOMEM;
      if (!SetProtection(page, page_size_, PROT_READ | PROT_WRITE)) {
        writable_.pop_back();
        return ENOMEM;
      }
      e->writable = 1;
      written_since_prepare_ = true;
    }
    faults_ += from_fault;
    return 0;
  }

  void* image = images_.Take();
  if (!image) return ENOMEM;
  std::memcpy(image, reinterpret_cast<const void*>(page), page_size_);
  const int32_t prev = e ? static_cast<int32_t>(e->record) : -1;
  if (!records_.push_back(Record{page, region, image, prev, level})) {
    images_.Give(image);
    return ENOMEM;
  }
  const uint32_t index = static_cast<uint32_t>(records_.size() - 1);
  if (e) {
    e->record = index;
  } else if (!(e = map_.Insert(page, index))) {
    records_.pop_back();
    images_.Give(image);
    return ENOMEM;
  }
  if (!e->writable) {
    if (!writable_.push_back(Writable{page, region}) ||
        !SetProtection(page, page_size_, PROT_READ | PROT_WRITE)) {
      if (writable_.size() > 0 && writable_.back().page == page) writable_.pop_back();
      if (prev >= 0) {
        e->record = static_cast<uint32_t>(prev);
      } else {
        map_.Erase(page);
      }
      records_.pop_back();
      images_.Give(image);
      return ENOMEM;
    }
    e->writable = 1;
  }
  faults_ += from_fault;
  ++before_images_;
  written_since_prepare_ = true;
  return 0;
}

void ThreadTxn::CommitNested() {
  const uint32_t level = static_cast<uint32_t>(depth_);
  const uint32_t start = levels_.back();
  size_t out = start;
  for (size_t i = start; i < records_.size(); ++i) {
    Record r = records_[i];
    if (r.prev >= 0 && records_[r.prev].level == level - 1) {
      // The parent saved this page before the child began: its image is the one an abort of
      // the parent needs; the child's is redundant.
      map_.Find(r.page)->record = static_cast<uint32_t>(r.prev);
      images_.Give(r.image);
      continue;
    }
    r.level = level - 1;
    records_[out] = r;
    if (out != i) map_.Find(r.page)->record = static_cast<uint32_t>(out);
    ++out;
  }
  records_.shrink_to(out);
  levels_.pop_back();
  --depth_;
}

void ThreadTxn::AbortLevel() {
  const uint32_t start = levels_.back();
  for (size_t i = records_.size(); i-- > start;) {
    const Record& r = records_[i];
    PageMap::Entry* e = map_.Find(r.page);
    if (!e->writable) {
      if (!writable_.push_back(Writable{r.page, r.region})) {
        Fatal("rvm: out of memory while aborting\n");
      }
      if (!SetProtection(r.page, page_size_, PROT_READ | PROT_WRITE)) {
        Fatal("rvm: mprotect failed while aborting\n");
      }
      e->writable = 1;
    }
    std::memcpy(reinterpret_cast<void*>(r.page), r.image, page_size_);
    images_.Give(r.image);
    e->record = r.prev >= 0 ? static_cast<uint32_t>(r.prev) : kNoRecord;
  }
  records_.shrink_to(start);
  levels_.pop_back();
  --depth_;
  if (depth_ == 0) {
    FinishTopLevel();
    return;
  }
  // A restored page stays writable only if its newest record is now the innermost level's.
  const uint32_t level = static_cast<uint32_t>(depth_);
  ProtectWritable([&](uintptr_t page) {
    PageMap::Entry* e = map_.Find(page);
    if (e->record == kNoRecord) {
      map_.Erase(page);
      return false;
    }
    if (records_[e->record].level != level) {
      e->writable = 0;
      return false;
    }
    return true;
  });
}

void ThreadTxn::FinishTopLevel() {
  // After an abort the records are gone but the restored pages' entries remain, all writable.
  for (const Writable& w : writable_) map_.Erase(w.page);
  ProtectWritable([](uintptr_t) { return false; });
  for (Record& r : records_) {
    images_.Give(r.image);
    map_.Erase(r.page);
  }
  records_.clear();
  levels_.clear();
  depth_ = 0;
  for (rvm_region* region : owned_) region->owner.store(nullptr, std::memory_order_release);
  owned_.clear();
  prepared_ = false;
  images_.Trim();
}

template <typename Keep>
void ThreadTxn::ProtectWritable(Keep keep) {
  const size_t n = writable_.size();
  if (n == 0) return;
  // Pages to keep move to the front; the tail [kept, n) is protected and dropped.
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    uintptr_t page = writable_[i].page;
    if (keep(page)) {
      std::swap(writable_[kept++], writable_[i]);
    } else if (PageMap::Entry* e = map_.Find(page)) {
      e->writable = 0;
    }
  }
  auto by_page = [](const Writable& a, const Writable& b) { return a.page < b.page; };
  Writable* keep_begin = writable_.begin();
  Writable* keep_end = keep_begin + kept;
  Writable* end = writable_.end();
  std::sort(keep_begin, keep_end, by_page);
  std::sort(keep_end, end, by_page);
  // Each page table change is costly, but so is each call: one mprotect per span of a region
  // that holds no page staying writable. Pages of the span that are read-only already are
  // unaffected, and the kernel merges the span back into one mapping.
  Writable* kept_page = keep_begin;
  for (Writable* run = keep_end; run < end;) {
    uintptr_t span_end = run->page + page_size_;
    Writable* next = run + 1;
    for (; next < end && next->region == run->region; ++next) {
      while (kept_page < keep_end && kept_page->page < span_end) ++kept_page;
      if (kept_page < keep_end && kept_page->page < next->page) break;
      span_end = next->page + page_size_;
    }
    if (!SetProtection(run->page, span_end - run->page, PROT_READ)) {
      Fatal("rvm: mprotect failed while write-protecting a region\n");
    }
    run = next;
  }
  writable_.shrink_to(kept);
}

bool ThreadTxn::HasPersistentPages() const {
  for (size_t i = 0; i < records_.size(); ++i) {
    if (records_[i].region->store) return true;
  }
  return false;
}

int ThreadTxn::WritePersistent(DB_TXN* parent) {
  // At the top level every record is a level-1 record holding the page as the transaction
  // found it, which is the committed state in the store.
  std::vector<DirtyPage> pages;
  for (size_t i = 0; i < records_.size(); ++i) {
    const Record& r = records_[i];
    if (r.region->store) pages.push_back(DirtyPage{r.region, r.page, r.image});
  }
  std::stable_sort(pages.begin(), pages.end(), [](const DirtyPage& a, const DirtyPage& b) {
    return a.region->store < b.region->store;
  });
  for (size_t i = 0; i < pages.size();) {
    size_t j = i;
    while (j < pages.size() && pages[j].region->store == pages[i].region->store) ++j;
    int err = WritePages(pages[i].region->store, parent, pages.data() + i, j - i);
    if (err != 0) return err;
    i = j;
  }
  return 0;
}

void ThreadTxn::Stats(rvm_stats* out) const {
  out->faults = faults_;
  out->before_images = before_images_;
  out->pages_logged = map_.size();
}

}  // namespace amino::rvm
