#include "monitor/run.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "monitor/call_handler.h"
#include "monitor/host/host_handler.h"
#include "monitor/trace_handler.h"
#include "monitor/tracer.h"

namespace amino::monitor {

int Run(const RunOptions& options) {
  if (options.argv.empty()) {
    std::fprintf(stderr, "amino run: no command given\n");
    return 2;
  }
  TracerOptions t;
  t.argv = options.argv;
  t.stats = options.stats;
  ptrace_ext::KernelFeatures features = ptrace_ext::ProbeKernel();
  if (options.backend == "auto") {
    t.backend = ptrace_ext::ChooseBackend(features);
  } else if (!ptrace_ext::ParseBackend(options.backend, &t.backend)) {
    std::fprintf(stderr,
                 "amino run: unknown backend '%s' (auto, notify, seccomp, ptrace, kernel)\n",
                 options.backend.c_str());
    return 2;
  }
  if (t.backend == ptrace_ext::Backend::kKernel &&
      !(features.ptrace_select && features.ptrace_checkemu && features.ptrace_sysskip)) {
    std::fprintf(stderr,
                 "amino run: backend 'kernel' needs a kernel with Amino's ptrace patches "
                 "(kernel-patches/); this one (%s) has none\n",
                 features.kernel.c_str());
    return 2;
  }
  if (t.backend == ptrace_ext::Backend::kKernel) {
    std::fprintf(stderr, "amino run: backend 'kernel' is not implemented by this monitor yet\n");
    return 2;
  }
  if ((t.backend == ptrace_ext::Backend::kSeccomp || t.backend == ptrace_ext::Backend::kNotify) &&
      !features.seccomp_skip) {
    std::fprintf(stderr,
                 "amino run: this kernel cannot trace through seccomp; use --backend ptrace\n");
    return 2;
  }
  if (t.backend == ptrace_ext::Backend::kNotify &&
      !(features.user_notif && features.notif_wait_killable)) {
    std::fprintf(stderr,
                 "amino run: backend 'notify' needs seccomp user notification with a killable "
                 "wait (Linux 5.19); this kernel (%s) lacks it: use --backend seccomp\n",
                 features.kernel.c_str());
    return 2;
  }
  if (!options.emulate.empty() && options.emulate != "host") {
    std::fprintf(stderr, "amino run: unknown --emulate value '%s' (host)\n",
                 options.emulate.c_str());
    return 2;
  }

  std::unique_ptr<CallHandler> handler;
  if (options.emulate == "host") {
    handler = std::make_unique<host::HostHandler>();
  } else {
    handler = std::make_unique<PassThroughHandler>();
  }
  FILE* trace_out = nullptr;
  if (options.trace) {
    trace_out = options.trace_file.empty() ? stderr : std::fopen(options.trace_file.c_str(), "we");
    if (!trace_out) {
      std::fprintf(stderr, "amino run: %s: %s\n", options.trace_file.c_str(), std::strerror(errno));
      return 2;
    }
    handler = std::make_unique<TraceHandler>(std::move(handler), trace_out);
  }
  Tracer tracer(t, *handler);
  int status = tracer.Run();
  if (trace_out && trace_out != stderr) std::fclose(trace_out);
  return status;
}

}  // namespace amino::monitor
