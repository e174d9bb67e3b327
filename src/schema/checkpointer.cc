#include "schema/checkpointer.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>

namespace amino::schema {

Checkpointer::Checkpointer(DB_ENV* env, uint32_t kbytes)
    : env_(env), kbytes_(kbytes), use_thread_(Worthwhile()) {}

Checkpointer::~Checkpointer() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

bool Checkpointer::Worthwhile() {
  cpu_set_t cpus;
  return sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 1;
}

void Checkpointer::Ask() {
  if (!use_thread_) {
    env_->txn_checkpoint(env_, kbytes_, 0, 0);
    return;
  }
  std::lock_guard lock(mu_);
  asked_ = true;
  if (!thread_.joinable()) {
    // The thread takes no signal: a monitor reads its own from a signalfd in its main thread.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  wake_.notify_one();
}

uint64_t Checkpointer::taken() const {
  std::lock_guard lock(mu_);
  return taken_;
}

void Checkpointer::Run(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (wake_.wait(lock, stop, [&] { return asked_; })) {
    asked_ = false;
    lock.unlock();
    // Its errors are the next commit's to meet (a full disk: the store's reclaim checkpoints
    // on its own), as they were when the committing call took it.
    const bool ok = env_->txn_checkpoint(env_, kbytes_, 0, 0) == 0;
    lock.lock();
    if (ok) ++taken_;
  }
}

}  // namespace amino::schema
