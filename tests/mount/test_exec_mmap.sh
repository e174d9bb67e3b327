#!/bin/bash
# exec of programs stored in an Amino mount and mmap of served files, under `amino run --mount`:
# each check runs a real program and compares what it prints with what the same program prints
# natively on a host copy of the same files. Exits non-zero on the first failure.
#
#   AMINO=build/default/amino tests/mount/test_exec_mmap.sh [BACKEND...]
#
# Backends default to "seccomp ptrace notify" (those `amino run --backend` accepts here).
set -u

AMINO=${AMINO:?set AMINO to the amino executable}
BACKENDS=("$@")
[ ${#BACKENDS[@]} -eq 0 ] && BACKENDS=(seccomp ptrace notify)

WORK=$(mktemp -d /tmp/amino-exec-test.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
MNT=$WORK/mnt   # the mount point
DB=$WORK/db
HOST=$WORK/host # the same files natively, for the expected outputs
mkdir -p "$MNT" "$HOST"
"$AMINO" mkfs "$DB" >/dev/null || exit 1

failures=0
fail() {
  echo "FAIL [$backend] $1" >&2
  failures=$((failures + 1))
}

# Runs a shell command line under amino run with the mount.
in_amino() {
  timeout 60 "$AMINO" run --backend "$backend" --mount "$MNT=$DB" -- bash -c "$1"
}

# check NAME EXPECTED COMMAND: the command's stdout and stderr under amino run, with its exit
# status appended, must equal EXPECTED. The checks are collected, then run in one `amino run`
# per backend (each command in its own bash, as `bash -c` natively).
names=() expects=() commands=()
check() {
  names+=("$1")
  expects+=("$2")
  commands+=("$3")
}

# Runs every check under `amino run --backend $backend` and compares.
run_checks() {
  local script=$WORK/checks.sh i
  : >"$script"
  for i in "${!commands[@]}"; do
    printf 'echo "@@@ %d"\nbash -c %q 2>&1\necho "status=$?"\n' "$i" "${commands[$i]}" >>"$script"
  done
  rm -f "$WORK"/out.*
  in_amino "bash '$script'" 2>&1 |
    awk -v dir="$WORK" '/^@@@ [0-9]+$/ { file = dir "/out." $2; printf "" > file; next }
                        file { print >> file }'
  for i in "${!commands[@]}"; do
    local got
    got=$(cat "$WORK/out.$i" 2>/dev/null)
    if [ "$got" != "${expects[$i]}" ]; then
      fail "${names[$i]}"
      diff <(echo "${expects[$i]}") <(echo "$got") | sed 's/^/    /' >&2
    fi
  done
}

# --- The files: built on the host, copied into the mount by a traced cp ---------------------
mkdir -p "$HOST/bin" "$HOST/lib" "$HOST/dir" "$HOST/data"
cp /bin/ls "$HOST/bin/ls"
cp /usr/bin/id "$HOST/bin/id"
cat >"$HOST/bin/args.sh" <<'EOF'
#!/bin/sh
echo "sh: 0=$0 args=$*"
EOF
cat >"$HOST/bin/args.py" <<'EOF'
#!/usr/bin/env python3
import os, sys
print("py:", sys.argv, __file__ == sys.argv[0], os.path.basename(os.path.dirname(__file__)))
EOF
# An interpreter that is itself a script in the mount, with an argument on the #! line.
cat >"$HOST/bin/interp" <<'EOF'
#!/bin/sh
echo "interp: $*"
EOF
printf '#!%s/bin/interp  -x  y\necho never\n' "$MNT" >"$HOST/bin/nested"
# A script on the host whose interpreter is stored in the mount.
printf '#!%s/bin/interp -a\n' "$MNT" >"$WORK/host_script"
chmod 755 "$WORK/host_script"
# A virtual environment's interpreter: a link in the mount to one on the host.
mkdir -p "$HOST/venv/bin"
ln -s /usr/bin/python3 "$HOST/venv/bin/python3"
printf '#!%s/venv/bin/python3\nimport sys\nprint("venv", sys.argv)\n' "$MNT" >"$HOST/bin/venv.py"
cat >"$HOST/dir/rel.sh" <<'EOF'
#!/bin/sh
echo "rel: $0 in $(basename "$PWD")"
EOF
printf 'echo "no #! line: run by the shell"\n' >"$HOST/bin/plain"
printf '#!/bin/sh\necho not executable\n' >"$HOST/bin/noexec"
cat >"$WORK/greet.c" <<'EOF'
#include <stdio.h>
const char* greeting = "hello from a library in the mount";
void greet(void) { puts(greeting); }
EOF
cat >"$WORK/main.c" <<'EOF'
void greet(void);
int main(void) { greet(); return 0; }
EOF
gcc -shared -fPIC -o "$HOST/lib/libgreet.so" "$WORK/greet.c" &&
  gcc -o "$HOST/bin/greet" "$WORK/main.c" -L"$HOST/lib" -lgreet || exit 1
# Data for mmap: 5000 bytes (the last page partly beyond the end of file), and 3 pages.
python3 -c "import sys; sys.stdout.write(''.join(chr(65 + i % 26) for i in range(5000)))" \
  >"$HOST/data/small"
python3 -c "import sys; sys.stdout.write(''.join(chr(97 + i // 4096) for i in range(3 * 4096)))" \
  >"$HOST/data/pages"
chmod 755 "$HOST"/bin/* "$HOST"/dir/rel.sh "$HOST/bin/venv.py"
chmod 644 "$HOST/bin/noexec" "$HOST/bin/plain"
chmod 4755 "$HOST/bin/id"
chmod 755 "$HOST/bin/plain"
backend=${BACKENDS[0]}
in_amino "cp -a '$HOST'/. '$MNT'/" || { echo "cannot populate the mount" >&2; exit 1; }

# A python program reading the mmap checks (run on the host copy for the expected output).
cat >"$WORK/mmap_check.py" <<'EOF'
import mmap, os, sys
d = sys.argv[1]
with open(d + "/small", "rb") as f:
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)        # MAP_SHARED, read-only
    print("shared-ro", len(m), m[:3], m[4997:5000], m.find(b"XYZ"))
    m.close()
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)        # MAP_PRIVATE, writable
    m[0:5] = b"12345"
    print("private", m[:7])
    m.close()
    f.seek(0)
    print("file unchanged", f.read(5))
with open(d + "/pages", "rb") as f:
    m = mmap.mmap(f.fileno(), 4096, access=mmap.ACCESS_READ, offset=8192)
    print("offset", m[0:2], m[4095:4096])
    m.close()
    # Beyond the end of file but in its last page: zeros.
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    print("size", len(m))
    m.close()
with open(d + "/small", "rb") as f:
    try:
        mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_WRITE)
    except OSError as e:
        print("shared-rw on read-only", e.strerror)
fd = os.open(d, os.O_RDONLY)
try:
    mmap.mmap(fd, 4096, access=mmap.ACCESS_READ)
except OSError as e:
    print("directory", e.strerror)
os.close(fd)
fd = os.open(d + "/small", os.O_WRONLY)
try:
    mmap.mmap(fd, 4096, access=mmap.ACCESS_READ)
except OSError as e:
    print("write-only", e.strerror)
os.close(fd)
EOF
# The C library's own view: ld.so maps a shared library with MAP_PRIVATE | MAP_FIXED.
cat >"$WORK/mmap_c.c" <<'EOF'
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
int main(int argc, char** argv) {
  int fd = open(argv[1], O_RDONLY);
  char* resv = mmap(NULL, 3 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char* p = mmap(resv + 4096, 8192, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 4096);
  printf("fixed %d %c %c %d\n", p == resv + 4096, p[0], p[4096], p[8191]);
  char* q = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  q[0] = '!';
  printf("private-rw %c%c\n", q[0], q[1]);
  close(fd);
  return 0;
}
EOF
gcc -o "$WORK/mmap_c" "$WORK/mmap_c.c" || exit 1

# native VAR STATUS COMMAND: sets VAR to the command's output on the host copy with its exit
# status appended (paths then differ only by $HOST for $MNT). The command must exit with STATUS:
# an expectation taken from a native run that failed would let the same failure under amino pass.
native() {
  local out
  out=$( (cd "$HOST" && bash -c "$3" 2>&1; echo "status=$?") | sed "s#$HOST#$MNT#g")
  if [ "${out##*status=}" != "$2" ]; then
    echo "FAIL natively: $3 exited ${out##*status=}, expected $2:" >&2
    sed 's/^/    /' <<<"$out" >&2
    exit 1
  fi
  printf -v "$1" '%s' "$out"
}
native exp_ls 0 "'$HOST/bin/ls' -1 /usr/share/doc/bash"
native exp_args 0 "'$HOST/bin/args.sh' a 'b c'"
native exp_py 0 "'$HOST/bin/args.py' x y"
native exp_noexec 126 "'$HOST/bin/noexec'"
native exp_dir 126 "'$HOST/bin'"
native exp_mmap 0 "python3 '$WORK/mmap_check.py' '$HOST/data'"
native exp_mmap_c 0 "'$WORK/mmap_c' '$HOST/data/pages'"

check "ELF program stored in the mount" "$exp_ls" "'$MNT/bin/ls' -1 /usr/share/doc/bash"
check "shell script" "$exp_args" "'$MNT/bin/args.sh' a 'b c'"
check "python script through /usr/bin/env" "$exp_py" "'$MNT/bin/args.py' x y"
check "program with its own shared library" \
    "hello from a library in the mount
status=0" "LD_LIBRARY_PATH='$MNT/lib' '$MNT/bin/greet'"
check "script by a relative path from a cwd in the mount" \
    "rel: ./rel.sh in dir
status=0" "cd '$MNT/dir' && sh -c ./rel.sh"
check "interpreter stored in the mount, itself a script" \
    "interp: -x  y $MNT/bin/nested 1 2
status=0" "'$MNT/bin/nested' 1 2"
check "script on the host, interpreter in the mount" "interp: -a $WORK/host_script q
status=0" "'$WORK/host_script' q"
check "interpreter through a link from the mount to the host" "venv ['$MNT/bin/venv.py', '1']
status=0" "'$MNT/bin/venv.py' 1"
check "no #! line: ENOEXEC, then the shell runs it" \
    "no #! line: run by the shell
status=0" "'$MNT/bin/plain'"
check "not executable: EACCES" "$exp_noexec" "'$MNT/bin/noexec'"
check "a directory: EACCES" "$exp_dir" "'$MNT/bin'"
check "a failed exec leaves the caller as it was" \
    "PermissionError 13
still here
status=0" "python3 -c \"
import os
try:
    os.execv('$MNT/bin/noexec', ['x'])
except OSError as e:
    print(type(e).__name__, e.errno)
print('still here')\""
check "fexecve of a stored program (execveat AT_EMPTY_PATH)" "$exp_ls" "python3 -c \"
import os
fd = os.open('$MNT/bin/ls', os.O_RDONLY)
os.execve(fd, ['ls', '-1', '/usr/share/doc/bash'], dict(os.environ))\""
check "set-user-ID program: runs with its owner's effective id, the caller's real one" "0
65534
status=0" "setpriv --reuid 65534 --regid 65534 --clear-groups sh -c \"'$MNT/bin/id' -u; '$MNT/bin/id' -ru\""
check "many arguments to a stored script" "sh: 0=$MNT/bin/args.sh args=$(seq -s ' ' 1 5000)
status=0" "'$MNT/bin/args.sh' \$(seq 1 5000)"
check "python mmap of served files" "$exp_mmap" "python3 '$WORK/mmap_check.py' '$MNT/data'"
# Stores through a shared writable mapping reach the file (read() sees them, and a new open
# after close); the original bytes are put back the same way for the next backend's checks.
check "MAP_SHARED writable: stores reach the file" "b'STORED' b'ABCDEF'
status=0" "python3 -c \"
import mmap
with open('$MNT/data/small', 'r+b') as f:
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_WRITE)
    m[0:6] = b'STORED'
    m.flush()
    seen = f.read(6)
    m[0:6] = b'ABCDEF'
    m.close()
with open('$MNT/data/small', 'rb') as f:
    print(seen, f.read(6))\""
check "MAP_FIXED and private writable mappings" "$exp_mmap_c" "'$WORK/mmap_c' '$MNT/data/pages'"

for backend in "${BACKENDS[@]}"; do
  run_checks
done

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all exec and mmap checks passed (${BACKENDS[*]})"
