"""coreutils under `amino run`: listings, copies, moves, removals, links, find, du and stat give
the same output and leave the same tree as natively."""

import os

import ittest
from ittest import write

LS = "ls -l --time-style=long-iso"


def tree(root):
    """A small tree with every common kind of entry: nested directories, files of several sizes
    and modes, an empty file, a name with spaces, a hard link, relative and dangling symlinks."""
    write(root, "src/a.txt", "alpha\n")
    write(root, "src/b.bin", bytes(range(256)) * 64, 0o600)
    write(root, "src/empty", b"")
    write(root, "src/run.sh", "#!/bin/sh\necho run\n", 0o755)
    write(root, "src/with space.txt", "spaces\n", 0o640)
    write(root, "src/sub/deep/c.txt", "c" * 5000)
    write(root, "src/sub/d.txt", "delta\n", 0o444)
    os.makedirs(os.path.join(root, "src/emptydir"))
    os.chmod(os.path.join(root, "src/emptydir"), 0o700)
    os.link(os.path.join(root, "src/a.txt"), os.path.join(root, "src/a-hardlink"))
    os.symlink("sub/d.txt", os.path.join(root, "src/d-link"))
    os.symlink("does/not/exist", os.path.join(root, "src/dangling"))
    os.symlink("sub", os.path.join(root, "src/sub-link"))


def sh(script):
    return ["/bin/sh", "-c", script]


class CoreutilsTest(ittest.ScenarioTest):
    def test_ls_long_recursive(self):
        self.check(sh(f"{LS} -R src && {LS} -a src/sub && ls -1 src && ls -la --time-style=+%Y "
                      "src/sub-link/ && ls src/missing"), setup=tree, expect_status=2)

    def test_cp_archive(self):
        self.check(sh(f"cp -a src copy && diff -r --no-dereference src copy && {LS} -R copy && "
                      "cp src/b.bin src/a.txt copy/sub/ && cp -r src copy2 && "
                      "cp -a src/d-link src/dangling copy2/ && cp -l src/a.txt hardcopy && "
                      # Plain cp stamps the copies with the current time: not shown, so that a
                      # minute turning between the two runs does not matter.
                      "ls -l --time-style=+ copy/sub copy2"),
                   setup=tree, expect_status=0)

    def test_mv(self):
        self.check(sh("mv src/a.txt src/sub/ && mv src/sub src/moved && mv src/moved/d.txt "
                      "src/moved/renamed.txt && mv src/emptydir elsewhere && mv -n src/b.bin "
                      "src/empty && mv src/nothing src/x; echo status $?; ls -R"), setup=tree)

    def test_rm_recursive(self):
        self.check(sh("rm -r src/sub && rm src/d-link src/dangling && rm -f src/none && "
                      "rmdir src/emptydir && rm src/sub-link; echo status $?; rm -rf src/sub-link "
                      "&& ls -A src && rm -r src && ls"), setup=tree)

    def test_ln(self):
        # The links made here carry the current time: not shown, so that a minute turning
        # between the two runs does not matter.
        self.check(sh("ln -s ../a.txt src/sub/up && ln -s /nonexistent/abs abs && "
                      "ln src/b.bin hard && ln -sf sub/deep src/deep-link && ln src/sub missing; "
                      "echo status $?; readlink src/sub/up abs src/deep-link; cat src/sub/up && "
                      "ls -l --time-style=+ src src/sub hard && ls src/deep-link/"), setup=tree)

    # find and du walk directories in the order the file system lists them, which is its own
    # (ext4: a hash of each name with a per-file-system seed): their output is compared sorted.

    def test_find(self):
        self.check(sh("{ find . -printf '%p %y %m %n %l\\n' && find src -type f -size +1k && "
                      "find . -empty && find src -name '*.txt' -perm -u+w && find src -maxdepth 1 "
                      "-type l -xtype l && find -L src -type f -name 'd*'; } | sort"), setup=tree)

    def test_du_apparent_sizes(self):
        # -l: which of two hard links du counts first depends on the listing order.
        self.check(sh("du -abl src | sort -k2 && du -sb src && du -b --max-depth=1 . | sort -k2 "
                      "&& du -ab src/a.txt src/a-hardlink"), setup=tree)

    def test_access_times_follow_relatime(self):
        # On a relatime mount (Linux's default) reading a file, listing a directory and mapping
        # a file make an access time older than the last change current; reading again does
        # not move it; O_NOATIME reads leave it alone; following a link touches the link.
        script = (
            "old=1000000000; echo data > f; mkdir d; touch -a -d @$old f d; "
            "cat f > /dev/null; a=$(stat -c %X f); [ $a -gt $old ] && echo read: updated; "
            "cat f > /dev/null; [ $(stat -c %X f) = $a ] && echo read again: unchanged; "
            "ls d > /dev/null; [ $(stat -c %X d) -gt $old ] && echo listed: updated; "
            "touch -a -d @$old f; python3 -c \"import os; fd = os.open('f', os.O_RDONLY | "
            "os.O_NOATIME); os.read(fd, 4)\"; [ $(stat -c %X f) = $old ] && echo noatime: "
            "unchanged; python3 -c \"import mmap; f = open('f', 'rb'); mmap.mmap(f.fileno(), 0, "
            "access=mmap.ACCESS_READ)\"; [ $(stat -c %X f) -gt $old ] && echo mapped: updated; "
            # Following a symbolic link touches the link, even when its target is missing.
            "ln -s f l; ln -s missing dl; touch -h -a -d @$old l dl; cat l > /dev/null; "
            "cat dl 2> /dev/null; [ $(stat -c %X l) -gt $old ] && echo link followed: updated; "
            "[ $(stat -c %X dl) -gt $old ] && echo dangling link followed: updated")
        self.check(sh(script))

    def test_stat(self):
        self.check(sh("cd src && stat -c '%n|%F|%s|%a|%A|%h|%U|%G|%Y|%N' a.txt b.bin empty run.sh "
                      "'with space.txt' sub sub/d.txt d-link dangling a-hardlink && "
                      "stat -L -c '%n %F %s' d-link sub-link && stat -c %s nothing"), setup=tree,
                   expect_status=1)

    def test_write_then_read(self):
        # Files the command itself creates, grows, truncates and reads back.
        self.check(sh("seq 1 20000 > n.txt && wc -l n.txt && head -c 100 n.txt | tail -c 20 && "
                      "sort -rn n.txt | head -3 > top && truncate -s 10 n.txt && cat n.txt top && "
                      "dd if=/dev/zero of=z bs=4096 count=3 seek=2 status=none && "
                      "stat -c '%s' z && md5sum z && touch -d 2020-01-02T03:04:05 z && "
                      f"{LS} z && chmod 640 z && mkdir -p x/y/z && chmod 711 x"), setup=tree)

    def test_owners_modes_attributes(self):
        self.check(sh("chown nobody:nogroup src/a.txt && chown -h 1234:5678 src/d-link && "
                      "chmod 2751 src/sub && chmod u+s,o-r src/run.sh && chmod -R go-w src && "
                      "setfattr -n user.colour -v blue src/b.bin && "
                      "setfattr -n user.empty src/empty && getfattr -d src/b.bin src/empty && "
                      "setfacl -m u:nobody:rw src/a.txt && "
                      "getfacl -c src/a.txt && ls -ln --time-style=long-iso src && "
                      "setfattr -x user.colour src/b.bin && getfattr -d src/b.bin"), setup=tree,
                   expect_status=0)

    def test_special_files(self):
        self.check(sh("mkfifo fifo && mknod null c 1 3 && mknod blk b 7 0 && "
                      # Created during the run: their times differ between the runs.
                      "ls -l --time-style=+ fifo null blk && stat -c '%n %F %t %T' null blk && "
                      "echo through > null && mkdir -m 1777 tmp && ls -ld --time-style=+ tmp && "
                      # An open node's descriptor is the node itself: fstat agrees with stat.
                      "python3 -c \"import os\n"
                      "for name in ('fifo', 'null'):\n"
                      "    fd = os.open(name, os.O_RDWR); a = os.fstat(fd); b = os.stat(name)\n"
                      "    print(name, 'fstat is stat:', (a.st_dev, a.st_ino, a.st_mode, a.st_nlink, "
                      "a.st_uid, a.st_rdev) == (b.st_dev, b.st_ino, b.st_mode, b.st_nlink, "
                      "b.st_uid, b.st_rdev))\" && "
                      "[ \"$(stat -L -c %i - < null)\" = \"$(stat -c %i null)\" ] && "
                      "echo 'stat - < null: the same inode'"),
                   setup=tree, expect_status=0)


if __name__ == "__main__":
    ittest.main()
