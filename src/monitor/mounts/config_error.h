// The result of reading the mount configuration: a value, or one error message ready to print
// ("FILE:LINE:COL: what", "FILE: what", or "--mount 'ARG': what"). Configuration is read once at
// start-up, before any tracing, so a message is all a caller needs.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace amino::monitor::mounts {

struct ConfigError {
  std::string message;
};

template <typename T>
class [[nodiscard]] ConfigResult {
 public:
  ConfigResult(T value) : v_(std::move(value)) {}            // NOLINT: implicit by design
  ConfigResult(ConfigError error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  const std::string& error() const { return std::get<ConfigError>(v_).message; }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, ConfigError> v_;
};

}  // namespace amino::monitor::mounts
