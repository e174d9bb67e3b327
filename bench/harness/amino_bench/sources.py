"""Real C source trees for the build workload, fetched from Debian and cached.

`apt-get source --download-only PACKAGE` runs with a private apt configuration (its own
sources.list of deb-src lines built from the machine's configured Debian mirrors, its own lists
and cache under the cache directory), so the machine's apt setup is neither needed nor touched.
apt checks the downloaded files against the signed Sources index. Only the upstream tarball
(*.orig.tar.*) is used. Once a package is cached, nothing is fetched again: the harness works
offline.
"""

import glob
import json
import os
import re
import subprocess

APT_SOURCES = ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*"))


class SourceError(RuntimeError):
    pass


def ensure(package, cache_dir, log=print):
    """Returns (tarball path, top directory inside it), fetching the package if not cached."""
    pkg_dir = os.path.join(cache_dir, "src", package)
    manifest = os.path.join(pkg_dir, "manifest.json")
    if os.path.exists(manifest):
        with open(manifest) as f:
            m = json.load(f)
        path = os.path.join(pkg_dir, m["tarball"])
        if os.path.exists(path):
            return path, m["top"]
    os.makedirs(pkg_dir, exist_ok=True)
    log("fetching the Debian source package %s into %s" % (package, pkg_dir))
    opts = _private_apt(cache_dir)
    _apt(["apt-get"] + opts + ["update"], cache_dir)
    _apt(["apt-get"] + opts + ["source", "--download-only", package], pkg_dir)
    tarballs = sorted(glob.glob(os.path.join(pkg_dir, "*.orig.tar.*")))
    tarballs = [t for t in tarballs if not t.endswith(".asc")]
    if not tarballs:
        raise SourceError("apt-get source %s gave no *.orig.tar.* in %s" % (package, pkg_dir))
    tarball = tarballs[-1]
    listing = subprocess.run(["tar", "-tf", tarball], capture_output=True, text=True)
    names = [n for n in listing.stdout.splitlines() if n.strip()]
    tops = {n.lstrip("./").split("/")[0] for n in names}
    if listing.returncode != 0 or len(tops) != 1:
        raise SourceError("%s: cannot find its single top directory" % tarball)
    top = tops.pop()
    with open(manifest, "w") as f:
        json.dump({"tarball": os.path.basename(tarball), "top": top, "files": len(names)}, f)
    return tarball, top


def _private_apt(cache_dir):
    apt = os.path.join(cache_dir, "apt")
    for d in ("lists/partial", "cache/archives/partial", "etc/sources.list.d"):
        os.makedirs(os.path.join(apt, d), exist_ok=True)
    lines = deb_src_lines()
    if not lines:
        raise SourceError("no Debian mirror found in %s" % ", ".join(APT_SOURCES))
    with open(os.path.join(apt, "etc", "sources.list"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return ["-q", "-o", "Dir::Etc::SourceList=" + os.path.join(apt, "etc", "sources.list"),
            "-o", "Dir::Etc::SourceParts=" + os.path.join(apt, "etc", "sources.list.d"),
            "-o", "Dir::State::Lists=" + os.path.join(apt, "lists"),
            "-o", "Dir::Cache=" + os.path.join(apt, "cache"),
            "-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=root"]


def deb_src_lines():
    """deb-src lines for every Debian 'deb' entry the machine is configured with."""
    out = []
    for path in APT_SOURCES:
        if not os.path.isfile(path):
            continue
        with open(path, errors="replace") as f:
            text = f.read()
        if path.endswith(".sources"):
            for stanza in re.split(r"\n\s*\n", text):
                fields = {}
                for line in stanza.splitlines():
                    if ":" in line and not line.startswith((" ", "#")):
                        k, v = line.split(":", 1)
                        fields[k.strip().lower()] = v.strip()
                if "deb" not in fields.get("types", "").split() or fields.get("enabled") == "no":
                    continue
                signed = fields.get("signed-by", "")
                opt = "[signed-by=%s] " % signed if signed.startswith("/") else ""
                for uri in fields.get("uris", "").split():
                    for suite in fields.get("suites", "").split():
                        out.append("deb-src %s%s %s %s" % (opt, uri, suite, fields.get(
                            "components", "main")))
        elif path.endswith(".list"):
            for line in text.splitlines():
                line = line.split("#", 1)[0].strip()
                if line.startswith("deb "):
                    out.append("deb-src " + line[4:])
    return [l for l in out if "debian" in l]


def _apt(argv, cwd):
    r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive", LC_ALL="C"))
    if r.returncode != 0:
        raise SourceError("%s: exit %d: %s" % (" ".join(argv[:1] + argv[-2:]), r.returncode,
                                               r.stderr.strip()[-500:]))
