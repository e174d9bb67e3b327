// The times a change stamps on a file, given as the kernel's multigrain timestamps give them
// (Linux 6.13, fs/inode.c): the coarse clock, which advances once a tick (a few milliseconds),
// unless the file's times were handed to a program since its last change, in which case the
// change takes a fine-grained time so that the next look sees it. Coarse times never go below
// the last fine-grained time handed out, so that a later change never looks older.
//
// What this buys: changes within one tick to a file nobody looked at carry the same time, so a
// change that alters nothing else (the parent directory of the second file created in a tick,
// a rewrite of a page inside a file, a chown to the same owner) leaves the record as it was
// and need not be written at all.
//
// The looks counted are this process's (every stat the monitor serves); one by another process
// sharing the file system is not seen, as with a kernel before 6.13.
#pragma once

#include <time.h>

#include "schema/records.h"

namespace amino::schema {

// The coarse time, or the last fine-grained one handed out if that is later.
timespec CoarseNow();
// The time for a change of file `id`, whose ctime is now `ctime`: fine-grained (and after
// `ctime`) if its times were seen since its last change, else CoarseNow().
timespec ChangeTimeFor(FileId id, const timespec& ctime);
// The times of `id` were handed to a program.
void NoteTimesSeen(FileId id);

}  // namespace amino::schema
