// What every subcommand shares: exit statuses, one-line error reports, opening a database
// directory, and printing arbitrary path bytes readably.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "schema/filesystem.h"
#include "schema/status.h"

namespace amino::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the operation failed (or fsck found violations)
inline constexpr int kExitUsage = 2;    // bad command line, or the database could not be opened

// Writes "amino <cmd>: <message>" and a newline to stderr.
void Error(std::string_view cmd, std::string_view message);
void Warning(std::string_view cmd, std::string_view message);

// "No such file or directory", or the storage failure's own message.
std::string Describe(const schema::Status& status);
std::string ErrnoText(int err);

// Checks that `dir` is an existing directory holding an Amino database before the storage
// layer sees it, so a mistyped path gives a clear message and leaves no files behind.
schema::Status CheckDatabaseDir(const std::string& dir);

// Opens the file system in `dir`, reporting a failure as "amino <cmd>: <dir>: <reason>".
std::unique_ptr<schema::FileSystem> OpenFileSystem(std::string_view cmd, const std::string& dir);

// Every entry of the directory `path` ("." and ".." excepted), in the order ReadDir gives.
schema::Result<std::vector<schema::DirEntry>> ReadAllEntries(schema::FileSystem& fs,
                                                             schema::Transaction& t,
                                                             const schema::Cred& cred,
                                                             const std::string& path);

// A path or name as one printable line: control bytes, backslashes and bytes that are not
// UTF-8 become backslash escapes (\n, \t, \\, \ooo), so a name can never forge a line.
std::string Printable(std::string_view bytes);

// True when the host path `path` (which need not exist yet) is the directory `dir` or lies
// below it, following symbolic links: a copy must never write into the database directory.
bool PathIsWithin(const std::string& path, const std::string& dir);

// After CatchInterrupts(), SIGINT, SIGTERM and SIGHUP only set a flag that long copies poll
// between files, so they abort their transaction themselves and say so.
void CatchInterrupts();
bool Interrupted();

// The host path `dir`/`name` ("dir/name", or "name" under an empty dir).
std::string HostJoin(std::string_view dir, std::string_view name);

}  // namespace amino::cli
