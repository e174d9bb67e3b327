// The project's result type: an errno exactly as Linux would return it for the same call, or a
// storage condition the caller must handle (a lock conflict to retry, a failure of the database
// itself). Never an exception. Every module reports errors with it; it depends on nothing.
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace amino {

class [[nodiscard]] Status {
 public:
  enum class Kind {
    kOk,
    kErrno,     // the file-system call fails with errno(); nothing changed
    kConflict,  // lock conflict or deadlock victim: abort the transaction and retry it
    kStorage,   // the database failed (I/O error, corruption, needs recovery)
    kEscape,    // path resolution left the file system at escaped_path(); error() is EXDEV,
                // what the call reports if nobody follows the path on
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status Errno(int err) { return Status(Kind::kErrno, err, {}); }
  static Status Conflict(std::string msg) {
    return Status(Kind::kConflict, EDEADLK, std::move(msg));
  }
  static Status Storage(int err, std::string msg) {
    return Status(Kind::kStorage, err, std::move(msg));
  }
  // Path resolution left the file system, carrying the path to continue with (absolute: a host
  // path; relative: relative to the directory the file system is mounted on).
  static Status Escape(std::string path) { return Status(Kind::kEscape, EXDEV, std::move(path)); }

  bool ok() const { return kind_ == Kind::kOk; }
  Kind kind() const { return kind_; }
  bool is_conflict() const { return kind_ == Kind::kConflict; }
  bool is_storage() const { return kind_ == Kind::kStorage; }
  bool is_escape() const { return kind_ == Kind::kEscape; }
  // The errno a system call reports for this status (EIO for storage failures).
  int error() const { return err_; }
  std::string message() const;
  // Where an escape left the file system (see Escape()); empty for any other status.
  const std::string& escaped_path() const { return is_escape() ? msg_ : kNoPath; }

 private:
  Status(Kind kind, int err, std::string msg) : kind_(kind), err_(err), msg_(std::move(msg)) {}
  Kind kind_ = Kind::kOk;
  int err_ = 0;
  std::string msg_;
  static inline const std::string kNoPath;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: must not be ok()

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace amino

// Propagate a non-ok Status/Result out of the current function.
#define AMINO_RETURN_IF_ERROR(expr) \
  do {                              \
    ::amino::Status _st = (expr);   \
    if (!_st.ok()) return _st;      \
  } while (0)

#define AMINO_CONCAT_INNER(a, b) a##b
#define AMINO_CONCAT(a, b) AMINO_CONCAT_INNER(a, b)
#define AMINO_ASSIGN_OR_RETURN(lhs, expr)                                                 \
  auto AMINO_CONCAT(_res_, __LINE__) = (expr);                                            \
  if (!AMINO_CONCAT(_res_, __LINE__).ok()) return AMINO_CONCAT(_res_, __LINE__).status(); \
  lhs = std::move(AMINO_CONCAT(_res_, __LINE__)).value()
