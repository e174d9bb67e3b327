"""sqlite3 under `amino run`: a database built in a transaction, queried, checked and modified
gives the same answers and the same database file as natively, with a rollback journal and in
WAL mode."""

import ittest
from ittest import write


def sql(journal_mode):
    rows = "\n".join(f"INSERT INTO t(name, v) VALUES ('row {i}', {i * 1.5});"
                     for i in range(1000))
    return f"""
PRAGMA journal_mode={journal_mode};
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT NOT NULL, v REAL);
CREATE INDEX t_name ON t(name);
BEGIN;
{rows}
COMMIT;
SELECT count(*), sum(id), sum(v), min(name), max(name) FROM t;
SELECT * FROM t WHERE id % 250 = 0;
PRAGMA integrity_check;
BEGIN;
DELETE FROM t;
SELECT count(*) FROM t;
ROLLBACK;
SELECT count(*) FROM t;
UPDATE t SET v = -v WHERE id <= 10;
DELETE FROM t WHERE id > 900;
CREATE TABLE big(b BLOB);
INSERT INTO big VALUES (zeroblob(300000)), (X'00ff10');
SELECT count(*), sum(v), sum(length(b)) FROM t, big WHERE t.id = 1;
VACUUM;
PRAGMA integrity_check;
PRAGMA page_count;
"""


def db_setup(journal_mode):
    def setup(root):
        write(root, "script.sql", sql(journal_mode))
        write(root, "check.sql", "SELECT count(*) FROM t;\nPRAGMA integrity_check;\n"
              "PRAGMA journal_mode;\n")
    return setup


BUILD_AND_CHECK = ("sqlite3 db.sqlite < script.sql && sqlite3 db.sqlite < check.sql && "
                   "sqlite3 db.sqlite .dump | md5sum && ls")


class SqliteTest(ittest.ScenarioTest):
    def test_rollback_journal(self):
        self.check(["/bin/sh", "-c", BUILD_AND_CHECK],
                   setup=db_setup("DELETE"), timeout=300, expect_status=0)

    def test_wal(self):
        self.check(["/bin/sh", "-c", BUILD_AND_CHECK],
                   setup=db_setup("WAL"), timeout=300, expect_status=0)

    def test_two_processes(self):
        # A reader in a second process sees only committed rows, in WAL mode.
        # Markers order the steps, never sleeps: the writer holds its transaction open until
        # the reader has looked.
        script = ("sqlite3 db.sqlite < script.sql; "
                  "(echo 'BEGIN; INSERT INTO t(name) VALUES (1);'; echo '.shell touch began'; "
                  "while [ ! -e done ]; do sleep 0.05; done; echo 'COMMIT;') | sqlite3 db.sqlite & "
                  "while [ ! -e began ]; do sleep 0.05; done; "
                  "sqlite3 db.sqlite 'SELECT count(*) FROM t'; touch done; wait; "
                  "sqlite3 db.sqlite 'SELECT count(*) FROM t'; rm began done")
        self.check(["/bin/sh", "-c", script], setup=db_setup("WAL"), timeout=300, expect_status=0)


if __name__ == "__main__":
    ittest.main()
