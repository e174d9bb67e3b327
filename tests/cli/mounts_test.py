"""`amino mounts`: the mount table `amino run` would use. Where mounts come from and in which
order (--mount, --config, $AMINO_CONFIG, the XDG config file, the embedded default), that
listing creates nothing, and that a bad configuration exits 2 with one line naming the file,
line and column (or the --mount argument) at fault."""

import os
import re
import subprocess
import unittest

import clitest

DEFAULT_DURABILITY = "async (default)"


class MountsTest(clitest.TreeTestCase):
    def setUp(self):
        super().setUp()
        self.home = self.path("home")
        os.makedirs(self.home)
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "AMINO_CONFIG")}
        self.env["HOME"] = self.home

    def amino(self, *args, check=None, env=None):
        proc = subprocess.run([clitest.AMINO, "mounts", *args], env=env or self.env,
                              cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=60)
        if check is not None:
            self.assertEqual(proc.returncode, check,
                             f"amino mounts {args}: {proc.stdout!r} {proc.stderr!r}")
        return proc

    def table(self, *args, env=None):
        """The listing as [(mount point, database, durability, origin)], header checked."""
        out = self.amino(*args, check=0, env=env).stdout.decode().splitlines()
        self.assertEqual(re.split(r"  +", out[0]), ["MOUNT POINT", "DATABASE", "DURABILITY",
                                                    "ORIGIN"])
        return [tuple(re.split(r"  +", line)) for line in out[1:]]

    def error(self, *args, env=None):
        """The one line a bad configuration gives, without the 'amino mounts: ' prefix."""
        proc = self.amino(*args, check=2, env=env)
        self.assertEqual(proc.stdout, b"")
        return self.assertOneLineError(proc, "mounts")[len("amino mounts: "):]

    def db(self, name):
        d = self.path(name)
        os.makedirs(d, exist_ok=True)
        return d

    def user_file(self, text, base=None):
        d = os.path.join(base or os.path.join(self.home, ".config"), "amino")
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, "mounts")
        with open(p, "w") as f:
            f.write(text)
        return p

    def test_default_mount_out_of_the_box(self):
        db = os.path.join(self.home, ".local/share/amino/default")
        self.assertEqual(self.table(), [(os.path.join(self.home, "amino"),
                                         db + " (created on first use)", DEFAULT_DURABILITY,
                                         "default")])
        # Listing creates nothing.
        self.assertEqual(os.listdir(self.home), [])
        env = dict(self.env, XDG_DATA_HOME=self.path("data"))
        self.assertEqual(self.table(env=env)[0][1],
                         self.path("data/amino/default") + " (created on first use)")
        # Once the database exists it is listed as it is.
        os.makedirs(db)
        self.assertEqual(self.table()[0][1], db)

    def test_empty_file_keeps_the_default(self):
        self.user_file("# nothing here yet\n\n")
        self.assertEqual(self.table()[0][3], "default")

    def test_file_precedence(self):
        home_file = self.user_file(f"/m/home {self.db('a')} durability=sync\n")
        self.assertEqual(self.table(), [("/m/home", self.path("a"), "sync", home_file + ":1")])

        xdg = self.path("xdg")
        xdg_file = self.user_file(f"# xdg\n/m/xdg {self.db('b')}\n", base=xdg)
        env = dict(self.env, XDG_CONFIG_HOME=xdg)
        self.assertEqual(self.table(env=env),
                         [("/m/xdg", self.path("b"), DEFAULT_DURABILITY, xdg_file + ":2")])

        env_file = self.path("env.mounts")
        with open(env_file, "w") as f:
            f.write(f"/m/env {self.db('c')} create,durability=async\n")
        env["AMINO_CONFIG"] = env_file
        self.assertEqual(self.table(env=env),
                         [("/m/env", self.path("c"), "async", env_file + ":1")])

        flag_file = self.path("flag.mounts")
        with open(flag_file, "w") as f:
            f.write(f"/m/flag {self.db('d')}\n")
        self.assertEqual(self.table("--config", flag_file, env=env),
                         [("/m/flag", self.path("d"), DEFAULT_DURABILITY, flag_file + ":1")])
        # An empty AMINO_CONFIG is as if unset.
        env["AMINO_CONFIG"] = ""
        self.assertEqual(self.table(env=env)[0][0], "/m/xdg")

    def test_command_line_paths_are_checked_too(self):
        self.assertEqual(self.error("--mount", f"/m/x={self.db('a')}", "--mount=~/three=c"),
                         f"--mount '~/three=c': database directory {self.path('c')} does not "
                         f"exist (create it with 'amino mkfs {self.path('c')}')")

    def test_command_line_mounts(self):
        f = self.user_file(f"/m/one {self.db('a')}\n/m/two {self.path('missing')}\n")
        self.db("c")
        rows = self.table("--mount", f"/m/two={self.db('b')}", "--mount=~/three=c")
        # Sorted by mount point; /m/two's line in the file is replaced, so its missing
        # database does not matter.
        self.assertEqual(rows, [
            ("/m/one", self.path("a"), DEFAULT_DURABILITY, f + ":1"),
            ("/m/two", self.path("b"), DEFAULT_DURABILITY, "--mount"),
            (os.path.join(self.home, "three"), self.path("c"), DEFAULT_DURABILITY, "--mount"),
        ])
        # Without the override, the file's missing database is an error.
        self.assertEqual(self.error(),
                         f"{f}:2:8: database directory {self.path('missing')} does not exist "
                         f"(create it with 'amino mkfs {self.path('missing')}', or add the "
                         f"option 'create')")

    def run_quietly(self, *args):
        """`amino run ARGS`: its exit status and stderr lines (stdout must be the command's)."""
        proc = subprocess.run([clitest.AMINO, "run", *args], env=self.env, cwd=self.tmp,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        return proc.returncode, proc.stdout.decode(), proc.stderr.decode().splitlines()

    def test_df_and_statfs_on_a_mount(self):
        # Tools that check a file system's type see Amino's own (statfs's f_type "AMIN"), and
        # df reports the space of the file system holding the database.
        subprocess.run([clitest.AMINO, "mkfs", self.path("db")], check=True,
                       stdout=subprocess.DEVNULL)
        mp = self.path("m")
        status, out, err = self.run_quietly(
            "--mount", f"{mp}={self.path('db')}", "--", "sh", "-c",
            f"stat -f -c %t {mp} {mp}/. && echo made > {mp}/f && stat -f -c %t {mp}/f && "
            f"df -P {mp} | tail -n 1 && df -P {self.path('db')} | tail -n 1")
        self.assertEqual(status, 0, err)
        lines = out.splitlines()
        self.assertEqual(lines[:3], ["414d494e"] * 3)
        served, holder = lines[3].split(), lines[4].split()
        self.assertEqual(served[1], holder[1])  # total 1K-blocks of the database's file system

    def test_run_says_what_it_did_to_the_host_for_a_declared_mount(self):
        subprocess.run([clitest.AMINO, "mkfs", self.path("db")], check=True,
                       stdout=subprocess.DEVNULL)
        # A relative mount point that does not exist: made, and where it is said.
        rc, out, err = self.run_quietly("--mount", "rel=db", "--", "echo", "hi")
        self.assertEqual((rc, out), (0, "hi\n"))
        self.assertEqual(err, [f"amino run: --mount: created mount point {self.path('rel')}"])
        self.assertTrue(os.path.isdir(self.path("rel")))
        # Made once: the next run says nothing.
        self.assertEqual(self.run_quietly("--mount", "rel=db", "--", "true"), (0, "", []))
        # A host directory with files in it: they are hidden, and that is said (empty
        # directories hide nothing).
        os.makedirs(self.path("full", "d", "e"))
        self.assertEqual(self.run_quietly("--mount", "full=db", "--", "true"), (0, "", []))
        for name in ("a", "d/b"):
            open(self.path("full", name), "w").close()
        rc, out, err = self.run_quietly("--mount", "full=db", "--", "ls", self.path("full"))
        self.assertEqual((rc, out), (0, ""))
        self.assertEqual(err, [f"amino run: --mount: the host directory {self.path('full')} holds "
                               f"2 files, hidden while the mount serves it"])
        # The default mount, made on first use, is the README's business: nothing is said.
        rc, out, err = self.run_quietly("--", "true")
        self.assertEqual((rc, err), (0, []))
        self.assertTrue(os.path.isdir(os.path.join(self.home, "amino")))

    def test_file_errors_give_line_and_column(self):
        a, b = self.db("a"), self.db("b")

        def col(line, token):
            return line.index(token) + 1

        cases = [
            (f"/m/x {a} create,bogus\n",
             lambda f: f"1:{col(f'/m/x {a} create,bogus', 'bogus')}: unknown option 'bogus' "
                       "(known: create, durability=async, durability=sync, defaults)"),
            (f"# c\n\n  amino {a}\n",
             lambda f: "3:3: relative mount point 'amino': write an absolute path (or one "
                       "starting with ~/)"),
            (f"/m/x {a}\n/m/x/y {b}\n",
             lambda f: f"2:1: mount point /m/x/y is inside mount point /m/x ({f}:1): nested "
                       "mounts are not supported"),
            (f"/m/x {a}\n/m/y   {a}/\n",
             lambda f: f"2:8: database directory {a} is already mounted at /m/x ({f}:1)"),
            ("/m/x\n",
             lambda f: "1:5: missing database directory after the mount point (expected "
                       "'MOUNTPOINT DBDIR [OPTIONS]')"),
            (f"/m/x {a} durability=never\n",
             lambda f: f"1:{col(f'/m/x {a} durability=never', 'never')}: unknown durability "
                       "'never' (async or sync)"),
            ("/m/x ~bob/db\n",
             lambda f: "1:6: '~user' is not supported: write the path of ~bob out"),
        ]
        for text, message in cases:
            f = self.user_file(text)
            self.assertEqual(self.error(), f"{f}:{message(f)}", text)

    def test_host_errors(self):
        plain = self.path("plain")
        clitest.write(plain, b"a file\n")
        f = self.user_file(f"{plain} {self.db('a')}\n")
        self.assertEqual(self.error(), f"{f}:1:1: mount point {plain} exists and is not a "
                                       f"directory")
        os.remove(f)
        clitest.write(os.path.join(self.home, "amino"), b"where the default goes\n")
        self.assertEqual(self.error(), f"default mount: mount point {self.home}/amino exists "
                                       f"and is not a directory")

    def test_command_line_errors_name_the_argument(self):
        a = self.db("a")
        self.assertEqual(self.error("--mount", "/m/x"), "--mount '/m/x': expected "
                                                        "MOUNTPOINT=DBDIR")
        self.assertEqual(self.error("--mount", f"/m/x={a}", "--mount", f"/m/x/={a}2"),
                         f"--mount '/m/x/={a}2': mount point /m/x is already mounted by "
                         f"--mount '/m/x={a}'")
        self.assertEqual(self.error("--mount", f"/={a}"),
                         f"--mount '/={a}': the root directory cannot be a mount point")
        f = self.user_file(f"/m/x/y {a}\n")
        self.assertEqual(self.error("--mount", f"/m={self.db('b')}"),
                         f"--mount '/m={self.path('b')}': mount point /m contains mount point "
                         f"/m/x/y ({f}:1): nested mounts are not supported")

    def test_missing_named_files(self):
        missing = self.path("nope")
        self.assertEqual(self.error("--config", missing), f"{missing}: No such file or directory")
        env = dict(self.env, AMINO_CONFIG=missing)
        self.assertEqual(self.error(env=env),
                         f"{missing} (from AMINO_CONFIG): No such file or directory")

    def test_help(self):
        out = self.amino("--help", check=0).stdout.decode()
        self.assertIn("Usage: amino mounts", out)
        self.assertIn("--mount MOUNTPOINT=DBDIR", out)
        self.assertIn("--config FILE", out)


if __name__ == "__main__":
    unittest.main()
