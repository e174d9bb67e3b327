// A C++ program whose watched functions are left by exceptions (tests/profiles/function_test.py):
// each mode writes files in DIR through save(), from calls that return, throw, catch inside,
// rethrow, or end their thread, and exits 0 only when the program ran as C++ says it must.
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

static const char* dir;

// Writes DIR/NAME with its name as content; false when it could not.
static bool write_file(const std::string& name) {
  const std::string path = std::string(dir) + "/" + name;
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return false;
  const bool ok = write(fd, name.data(), name.size()) == static_cast<ssize_t>(name.size());
  return close(fd) == 0 && ok;
}

// Destroyed as an exception passes: its destructor runs in a cleanup landing pad, which
// resumes the unwinding (_Unwind_Resume).
struct Mark {
  std::string name;
  ~Mark() { std::fprintf(stderr, "throws: unwinding %s\n", name.c_str()); }
};

extern "C" {

// Writes NAME, then throws when told to.
__attribute__((noinline)) int save(const char* name, int throw_after) {
  Mark mark{name};
  if (!write_file(name)) return -3;
  if (throw_after) throw std::runtime_error(name);
  return 0;
}

// Writes NAME and calls save(NAME-inner), which throws; catches it here and returns 0.
__attribute__((noinline)) int catcher(const char* name) {
  if (!write_file(name)) return -3;
  try {
    save((std::string(name) + "-inner").c_str(), 1);
  } catch (const std::runtime_error&) {
    return 0;
  }
  return -3;
}

// Writes NAME, then calls save(NAME-inner), which throws; catches it and throws again.
__attribute__((noinline)) int rethrower(const char* name) {
  if (!write_file(name)) return -3;
  try {
    save((std::string(name) + "-inner").c_str(), 1);
  } catch (const std::runtime_error&) {
    throw;
  }
  return -3;
}

// Writes xN and calls itself for N-1; the call for 0 throws, the call for 2 catches.
__attribute__((noinline)) int deep(int n) {
  const std::string name = "x" + std::to_string(n);
  if (!write_file(name)) return -3;
  if (n == 0) throw std::runtime_error(name);
  if (n == 2) {
    try {
      deep(n - 1);
    } catch (const std::runtime_error&) {
      return 0;
    }
    return -3;
  }
  return deep(n - 1);
}

// Writes NAME and ends its thread from inside (pthread_exit unwinds the stack: a forced
// unwind through this call's frame).
__attribute__((noinline)) int quitter(const char* name) {
  write_file(name);
  pthread_exit(nullptr);
}

}  // extern "C"

static void* quitting_thread(void*) {
  quitter("q");
  return reinterpret_cast<void*>(1);  // never: quitter does not return
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: throws through|inside|rethrow|deep|cancel DIR\n");
    return 2;
  }
  dir = argv[2];
  const std::string mode = argv[1];
  if (mode == "through") {
    // s1 is left by an exception caught here; s2 returns.
    bool caught = false;
    try {
      save("s1", 1);
    } catch (const std::runtime_error& e) {
      caught = std::strcmp(e.what(), "s1") == 0;
    }
    return caught && save("s2", 0) == 0 ? 0 : 1;
  }
  if (mode == "inside") return catcher("c") == 0 ? 0 : 1;
  if (mode == "rethrow") {
    try {
      rethrower("r");
    } catch (const std::runtime_error&) {
      return save("r2", 0) == 0 ? 0 : 1;
    }
    return 1;
  }
  if (mode == "deep") return deep(3) == 0 ? 0 : 1;
  if (mode == "cancel") {
    pthread_t th;
    void* result = nullptr;
    if (pthread_create(&th, nullptr, quitting_thread, nullptr) != 0 ||
        pthread_join(th, &result) != 0 || result != nullptr) {
      return 1;
    }
    return save("q2", 0) == 0 ? 0 : 1;
  }
  std::fprintf(stderr, "throws: unknown mode %s\n", mode.c_str());
  return 2;
}
