#include "monitor/run.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>

#include "monitor/call_handler.h"
#include "monitor/host/host_handler.h"
#include "monitor/host_dir_guard.h"
#include "monitor/mounts/mount_config.h"
#include "monitor/mounts/mount_prepare.h"
#include "monitor/profiles/profile_handler.h"
#include "monitor/profiles/profile_library.h"
#include "monitor/service/mount_handler.h"
#include "monitor/trace_handler.h"
#include "monitor/tracer.h"
#include "ptrace-ext/features_cache.h"

namespace amino::monitor {

namespace {

// The mount table from the command line, the mounts file or the default, made ready (mount
// points and default databases created) and opened.
std::unique_ptr<CallHandler> MakeMountHandler(const RunOptions& options) {
  mounts::MountSources sources;
  sources.mount_args = options.mounts;
  if (!options.config.empty()) sources.config_file = options.config;
  auto config = mounts::LoadMounts(sources, mounts::Environment::FromProcess());
  if (!config.ok()) {
    std::fprintf(stderr, "amino run: %s\n", config.error().c_str());
    return nullptr;
  }
  auto prepared = mounts::PrepareMounts(config->table);
  if (!prepared.ok()) {
    std::fprintf(stderr, "amino run: %s\n", prepared.error().c_str());
    return nullptr;
  }
  // What the default mount creates on first use is not reported: the command's terminal and
  // stderr are its own (README says what the default creates). What concerns a mount the user
  // declared is: a mount point made where none was (a relative one, resolved), a host
  // directory whose files the mount hides.
  for (const std::string& notice : prepared->notices) {
    std::fprintf(stderr, "amino run: %s\n", notice.c_str());
  }
  service::ServiceOptions service;
  service.sync = options.durability == "sync";
  service.flush_user_commits = options.durability == "sync" || options.durability == "commit";
  service.external = options.durability == "external";
  service.lock_timeout =
      std::chrono::milliseconds(static_cast<long long>(options.lock_timeout * 1000));
  auto handler = service::MountHandler::Create(std::move(prepared->table), service);
  if (!handler.ok()) {
    std::fprintf(stderr, "amino run: cannot open a mount: %s\n",
                 handler.status().message().c_str());
    return nullptr;
  }
  // Without the cover (made in the command's process, mount_cover.h), the host directories
  // are made read-only for the run instead.
  if (!MayCoverMountPoints()) (*handler)->GuardHostDirs();
  return std::move(handler).value();
}

// The backend --backend names (or `auto` chooses), if this kernel has what it needs: false,
// with the reason printed, otherwise.
bool BackendFor(const RunOptions& options, ptrace_ext::Backend* backend) {
  ptrace_ext::KernelFeatures features = ptrace_ext::ProbeKernelKept();
  if (options.backend == "auto") {
    *backend = ptrace_ext::ChooseBackend(features);
  } else if (!ptrace_ext::ParseBackend(options.backend, backend)) {
    std::fprintf(stderr,
                 "amino run: unknown backend '%s' (auto, notify, seccomp, ptrace, kernel)\n",
                 options.backend.c_str());
    return false;
  }
  if (*backend == ptrace_ext::Backend::kKernel && !ptrace_ext::HasKernelPatches(features)) {
    std::fprintf(stderr,
                 "amino run: backend 'kernel' needs a kernel with Amino's ptrace patches "
                 "(kernel-patches/); this one (%s) has none\n",
                 features.kernel.c_str());
    return false;
  }
  if ((*backend == ptrace_ext::Backend::kSeccomp || *backend == ptrace_ext::Backend::kNotify) &&
      !features.seccomp_skip) {
    std::fprintf(stderr,
                 "amino run: this kernel cannot trace through seccomp; use --backend ptrace\n");
    return false;
  }
  if (*backend == ptrace_ext::Backend::kNotify &&
      !(features.user_notif && features.notif_wait_killable)) {
    std::fprintf(stderr,
                 "amino run: backend 'notify' needs seccomp user notification with a killable "
                 "wait (Linux 5.19); this kernel (%s) lacks it: use --backend seccomp\n",
                 features.kernel.c_str());
    return false;
  }
  return true;
}

// --emulate, --durability, --lock-timeout and their combinations with --mount, --config and
// --profile:
// false, with the reason printed, when they do not go together.
bool OptionsAgree(const RunOptions& options) {
  if (options.emulate != "amino" && options.emulate != "host" && options.emulate != "none") {
    std::fprintf(stderr, "amino run: unknown --emulate value '%s' (amino, host, none)\n",
                 options.emulate.c_str());
    return false;
  }
  if (options.durability != "async" && options.durability != "sync" &&
      options.durability != "commit" && options.durability != "external") {
    std::fprintf(stderr,
                 "amino run: unknown --durability value '%s' (async, sync, commit, external)\n",
                 options.durability.c_str());
    return false;
  }
  if (!(options.lock_timeout > 0 && options.lock_timeout <= 86400)) {
    std::fprintf(stderr, "amino run: --lock-timeout must be between 0 and 86400 seconds\n");
    return false;
  }
  if (options.emulate != "amino" && (!options.mounts.empty() || !options.config.empty())) {
    std::fprintf(stderr, "amino run: --mount and --config need --emulate=amino (the default)\n");
    return false;
  }
  if (options.emulate != "amino" && !options.profiles.empty()) {
    std::fprintf(stderr,
                 "amino run: --profile needs --emulate=amino (the default): profiles begin and "
                 "end transactions on Amino mounts\n");
    return false;
  }
  return true;
}

}  // namespace

int Run(const RunOptions& options) {
  if (options.argv.empty()) {
    std::fprintf(stderr, "amino run: no command given\n");
    return 2;
  }
  TracerOptions t;
  t.argv = options.argv;
  t.stats = options.stats;
  if (!BackendFor(options, &t.backend) || !OptionsAgree(options)) return 2;
  std::vector<profiles::Profile> loaded;
  for (const std::string& spec : options.profiles) {
    profiles::Parsed p = profiles::FindProfile(spec);
    if (!p.ok()) {
      for (const std::string& e : p.errors) std::fprintf(stderr, "amino run: %s\n", e.c_str());
      return 2;
    }
    loaded.push_back(std::move(p.profile));
  }

  std::unique_ptr<CallHandler> handler;
  if (options.emulate == "host") {
    handler = std::make_unique<host::HostHandler>();
  } else if (options.emulate == "none") {
    handler = std::make_unique<PassThroughHandler>();
  } else {
    handler = MakeMountHandler(options);
    if (!handler) return 2;
  }
  FILE* trace_out = nullptr;
  if (options.trace) {
    trace_out = options.trace_file.empty() ? stderr : std::fopen(options.trace_file.c_str(), "we");
    if (!trace_out) {
      std::fprintf(stderr, "amino run: %s: %s\n", options.trace_file.c_str(), std::strerror(errno));
      return 2;
    }
  }
  if (!loaded.empty()) {
    // Only the mount handler owns transactions; it outlives the wrapper that holds it.
    TxnControl& txns = dynamic_cast<service::MountHandler&>(*handler);
    handler = std::make_unique<profiles::ProfileHandler>(std::move(handler), txns,
                                                         std::move(loaded), trace_out);
  }
  if (trace_out) {
    handler = std::make_unique<TraceHandler>(std::move(handler), trace_out);
  }
  Tracer tracer(t, *handler);
  int status = tracer.Run();
  if (trace_out && trace_out != stderr) std::fclose(trace_out);
  return status;
}

}  // namespace amino::monitor
