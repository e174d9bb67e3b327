#!/usr/bin/env python3
"""passwd_update under load: concurrent adders and deleters, and two readers that check the pair.

One `amino run` serves a fresh file system. UPDATERS processes each add USERS users and delete
every other one again (passwd_update DIR add|del), while two readers check, over and over, that
DIR/passwd and DIR/shadow list the same users:
  - in a transaction: `passwd_update DIR check` reads both files in one transaction;
  - without one: a Python reader opens passwd, then shadow, then looks up passwd's name again; if
    it still names the file opened first, no update committed in between (every update renames a
    new passwd into place), so the two open files are one version of the pair: it reads and
    compares them. (Every update also checks the pair it reads, in its own transaction.)
Each reader must have checked many versions, every update must succeed, the final files must hold
exactly the users added and not deleted, and `amino fsck` must be clean. Outside `amino run`
passwd_update must refuse (status 75) without creating a file.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "mount"))
import mount_common as mc  # noqa: E402

UPDATERS = 3
USERS = int(30 * mc.SCALE)
MIN_CHECKS = 10

# updater W: adds uW_0, uW_1, ... and deletes each odd one's predecessor; logs "VERB USER STATUS".
UPDATER_SH = r"""w=$1
i=0
while [ $i -lt $USERS ]; do
  "$PASSWD_UPDATE" "$DIR" add "u${w}_$i"; echo "add u${w}_$i $?"
  if [ $((i % 2)) -eq 1 ]; then
    "$PASSWD_UPDATE" "$DIR" del "u${w}_$((i - 1))"; echo "del u${w}_$((i - 1)) $?"
  fi
  i=$((i + 1))
done
"""

# The reader in transactions: `check` until the stop file appears; counts, and shows failures.
TXN_READER_SH = r"""n=0
while [ ! -e "$STOP" ]; do
  "$PASSWD_UPDATE" "$DIR" check > /dev/null || echo "check failed: status $?"
  n=$((n + 1))
done
echo "txn reader: $n checks"
"""

# The reader without transactions (see the module's description).
PLAIN_READER_PY = r"""import os, sys
d, stop = sys.argv[1], sys.argv[2]
pw, sh = os.path.join(d, "passwd"), os.path.join(d, "shadow")

def names(fd, fields):
    lines = os.read(fd, 1 << 20).decode().splitlines()
    if any(line.count(":") != fields - 1 for line in lines):
        sys.exit("malformed: %r" % lines)
    return [line.split(":")[0] for line in lines]

checks = raced = 0
while not os.path.exists(stop):
    try:
        fp = os.open(pw, os.O_RDONLY)
        fs = os.open(sh, os.O_RDONLY)
    except FileNotFoundError:
        continue  # before the first update
    if os.stat(pw).st_ino != os.fstat(fp).st_ino:
        raced += 1
    else:
        a, b = names(fp, 7), names(fs, 9)
        if a != b:
            print("MISMATCH passwd %s shadow %s" % (a, b))
        checks += 1
    os.close(fp)
    os.close(fs)
print("plain reader: %d checks, %d raced" % (checks, raced))
"""

MAIN_SH = r"""sh "$S/txn_reader.sh" > "$S/txn_reader.log" 2>&1 &
python3 "$S/plain_reader.py" "$DIR" "$STOP" > "$S/plain_reader.log" 2>&1 &
pids=
for w in $(seq $UPDATERS); do
  sh "$S/updater.sh" $w > "$S/updater$w.log" 2>&1 &
  pids="$pids $!"
done
wait $pids
touch "$STOP"
wait
"$PASSWD_UPDATE" "$DIR" check > "$S/final.log" 2>&1 && cat "$DIR/passwd" >> "$S/final.log"
"""


def read(path):
    with open(path) as f:
        return f.read()


def body(args, scratch):
    tool = mc.prog("passwd_update")
    host_dir = scratch.sub("host")
    rc, _, err = mc.run([tool, host_dir, "add", "ann"], check=False)
    if rc != 75 or "amino run" not in err or os.listdir(host_dir):
        raise mc.Failure("outside amino run: status %d, %r, files %s" % (
            rc, err, os.listdir(host_dir)))

    db, mp = scratch.sub("db"), scratch.sub("mnt")
    mc.mkfs(db)
    s = scratch.path
    if not args.start_empty:
        # Like a real system: the files exist, with root in them, before the first update.
        etc = scratch.sub("seed", "etc")
        for name, line in (("passwd", "root:x:0:0:root:/root:/bin/sh\n"),
                           ("shadow", "root:*:19000:0:99999:7:::\n")):
            with open(os.path.join(etc, name), "w") as f:
                f.write(line)
        mc.run([mc.AMINO, "import", db, os.path.dirname(etc)], "amino import")
    d = os.path.join(mp, "etc") if not args.start_empty else mp
    for name, text in (("updater.sh", UPDATER_SH), ("txn_reader.sh", TXN_READER_SH),
                       ("plain_reader.py", PLAIN_READER_PY), ("main.sh", MAIN_SH)):
        with open(os.path.join(s, name), "w") as f:
            f.write(text)
    env = dict(os.environ, PASSWD_UPDATE=tool, DIR=d, S=s, STOP=os.path.join(s, "stop"),
               USERS=str(USERS), UPDATERS=str(UPDATERS))
    argv = mc.amino_run([(mp, db)], ["sh", os.path.join(s, "main.sh")])
    proc = mc.start(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    rc, out, err = mc.finish(proc, argv, "the updaters and readers")
    if rc != 0:
        raise mc.Failure("the run exited %d\n%s%s" % (rc, out, err))

    users = set() if args.start_empty else {"root"}
    for w in range(1, UPDATERS + 1):
        for line in read(os.path.join(s, "updater%d.log" % w)).splitlines():
            verb, user, status = (line.split() + ["?", "?"])[:3]
            if status != "0":
                raise mc.Failure("updater %d: %s" % (w, line))
            (users.add if verb == "add" else users.discard)(user)
    for log in ("txn_reader.log", "plain_reader.log"):
        # One line, the reader's summary: anything before it is a failure it reported.
        lines = read(os.path.join(s, log)).splitlines()
        words = lines[-1].split() if lines else []
        checks = int(words[2]) if len(words) > 2 and words[2].isdigit() else 0
        if len(lines) != 1 or checks < MIN_CHECKS:
            raise mc.Failure("%s (at least %d checks needed):\n%s" % (
                log, MIN_CHECKS, "\n".join(lines[-20:])))
        mc.say(lines[0])
    final = read(os.path.join(s, "final.log")).splitlines()
    listed = sorted(line.split(":")[0] for line in final[1:])
    if not final or final[0] != "%d users" % len(users) or listed != sorted(users):
        raise mc.Failure("final files: %s; expected users %s" % (final, sorted(users)))
    mc.say("%d updates; %d users left, in both files" % (UPDATERS * (USERS + USERS // 2),
                                                        len(users)))
    mc.fsck(db)


if __name__ == "__main__":
    sys.exit(mc.main(body, __doc__.splitlines()[0], lambda p: p.add_argument(
        "--start-empty", action="store_true",
        help="start without the two files (the first updates then find them missing)")))
