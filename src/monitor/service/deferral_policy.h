// Which served calls first try a deferred transaction (schema::TxnOptions::deferred): one that
// begins no Berkeley DB transaction of its own. It takes records from the read cache and reads
// the rest through the store's reader (Store::ReadVia), never waiting for a lock; it is
// refused anything that changes the file system or must keep a lock, and then the call runs
// again in a real transaction, which costs what the try did before the refusal.
//
// Only calls that look and change nothing try (the stat, access, readlink, extended attribute
// reading and statfs families, reads of data and listings): a call that changes something
// always needs a transaction, and some bodies fold every status into an errno of their own.
// The access-time check after a read, a listing, a mapping or a copy tries too (kAccessTime, a
// number of no system call): it writes only when relatime says the access time is due, which a
// deferred try finds out from the cache. Among those, by number, from how that number's last
// tries went: after a refusal the number skips its next 1, 2, 4 ... 64 chances, and one try
// that succeeds makes it try every time again. A number whose tries are always refused so
// loses at most a 64th of a refused try's work; one refused now and then keeps trying.
#pragma once

#include <array>
#include <cstdint>

namespace amino::monitor::service {

class DeferralPolicy {
 public:
  static constexpr long kNumbers = 512;          // x86-64 system call numbers are below this
  static constexpr long kAccessTime = kNumbers;  // the access-time check after an access
  static constexpr uint8_t kMaxSkip = 64;

  DeferralPolicy();
  // Whether the next call numbered `nr` should try; numbers of other calls never do.
  bool ShouldTry(long nr);
  // How its try went: `refused` when it needed the database.
  void Tried(long nr, bool refused);

 private:
  struct Entry {
    bool looks = false;   // a call that only looks
    uint8_t skip = 0;     // chances still to skip
    uint8_t backoff = 0;  // what the next refusal skips (0: none yet)
  };
  std::array<Entry, kNumbers + 1> by_nr_{};  // and kAccessTime
};

}  // namespace amino::monitor::service
