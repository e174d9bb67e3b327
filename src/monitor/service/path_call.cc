#include "monitor/service/path_call.h"

namespace amino::monitor::service {

ServedPathCall::ServedPathCall(MountHandler& handler, Thread& thread, SyscallRegs& regs,
                               Target* call_targets, int count, int* args, const PathExtras& extras,
                               int rerun_count)
    : h(handler),
      t(thread),
      call(regs),
      targets(call_targets),
      n(count),
      path_args(args),
      reruns(rerun_count),
      nr(regs.nr()),
      a1(regs.arg(1)),
      a2(regs.arg(2)),
      a3(regs.arg(3)),
      a4(regs.arg(4)),
      x(extras),
      target(call_targets[0]),
      arg(args[0]),
      on_file(call_targets[0].kind == Target::Kind::kFile),
      file(call_targets[0].file.get()),
      cred(handler.CredOf(thread)) {}

Decision ServedPathCall::Serve() {
  switch (FamilyOf(nr)) {
    case Family::kStat:
      return Stats();
    case Family::kAttr:
    case Family::kData:  // truncate
      return Attributes();
    case Family::kXattr:
      return Xattrs();
    case Family::kNames:
      return n == 2 ? Pair() : Names();
    default:
      return Decision::Emulate(-ENOSYS);
  }
}

Decision ServedPathCall::Run(const OnPath& on_path, const OnId& on_id,
                             const MountHandler::Done& done) {
  if (on_file) {
    where = file->mfs;
    return h.RunOnFile(
        *file, [&](schema::Transaction& txn) { return on_id(*file->mfs, txn, file->id); }, done);
  }
  return h.RunOnTarget(
      t, call, target, arg,
      [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
        where = &m;
        return on_path(m, txn, rel);
      },
      done);
}

Decision ServedPathCall::RunStat(bool follow,
                                 const std::function<long(const schema::Stat&)>& done) {
  schema::Stat st;
  return Run(
      [&](MountFs& m, schema::Transaction& txn, const std::string& rel) -> schema::Status {
        auto r = m.fs->GetStat(txn, cred, rel, follow);
        if (!r.ok()) return r.status();
        st = *r;
        return schema::Status::Ok();
      },
      [&](MountFs& m, schema::Transaction& txn, schema::FileId id) -> schema::Status {
        auto r = m.fs->FStat(txn, id);
        if (!r.ok()) return r.status();
        st = *r;
        return schema::Status::Ok();
      },
      [&] { return done(st); });
}

}  // namespace amino::monitor::service
