"""A node that installs taskflow itself (``install: true`` in the cluster file).

A newcomer's first SSH run should not need a manual step on every host. With
``install: true`` the master, once connected to the node, looks for a virtual
environment of exactly the code it runs in ``~/.taskflow/venvs/`` there (named
by the distribution, its version and a digest of the package's files, so a
checkout that changed without a new version number gets a new one). Where there
is none, it packs the package it imports into a wheel (once per master, kept in
``~/.cache/taskflow/wheels``), copies it over the node's own SSH connection
(SFTP), and makes the environment with the node's ``python:`` (``python3 -m
venv``, then ``pip install`` of the wheel: its dependencies come from the
node's package index, as pip is configured there). One install per node and
code, under a lock, whatever the number of masters starting at once; the files
are the user's only. The agent's handshake then checks what it runs: taskflow's
version and the Python's major.minor (providers.handle).

The wheel is packed from the imported package rather than built from a source
tree, so an installed taskflow (from a wheel, a checkout or an editable install)
can ship itself the same way.
"""
from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import os
import shlex
import threading
import zipfile
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from .._version import DIST_NAME, __version__
from ..errors import NodeStartError

if TYPE_CHECKING:
    from .sshnode import SSHNode

INSTALL_TIMEOUT = 900.0     # seconds for one node's venv and pip install (a slow index)
_DONE = ".taskflow-complete"    # written last in a venv: an interrupted install is redone
_NO_VENV, _NO_PIP = 90, 91      # the install script's exit codes


@dataclass(frozen=True)
class Wheel:
    """The master's taskflow as a wheel file, and the digest of the code in it."""

    path: str
    digest: str         # sha256 of the package's files (names and contents), hex

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def venv(self, extra: list[str]) -> str:
        """The environment's directory name on a node (under ``~/.taskflow/venvs``), with
        the ``extra`` requirements installed beside taskflow."""
        name = f"{DIST_NAME}-{__version__}-{self.digest[:12]}"
        if extra:
            name += "-" + hashlib.sha256("\n".join(sorted(extra)).encode()).hexdigest()[:8]
        return name


_lock = threading.Lock()
_wheel: Wheel | None = None


def package_files() -> list[tuple[str, str]]:
    """(path inside the wheel, path on disk) of every file of the imported package, in a
    fixed order; byte-code caches left out."""
    import taskflow
    root = os.path.dirname(os.path.abspath(taskflow.__file__))
    base = os.path.dirname(root)
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for f in sorted(files):
            if f.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(d, f)
            out.append((os.path.relpath(full, base).replace(os.sep, "/"), full))
    return out


def _metadata() -> str:
    """The distribution's METADATA (its dependencies among it), or the least a wheel needs."""
    try:
        text = importlib.metadata.distribution(DIST_NAME).read_text("METADATA")
    except importlib.metadata.PackageNotFoundError:
        text = None
    if not text:
        text = f"Metadata-Version: 2.1\nName: {DIST_NAME}\nVersion: {__version__}\n"
    lines = [ln for ln in text.splitlines() if not ln.startswith("Version:")]
    # the version of the code packed (an editable install's metadata may be older)
    return "\n".join([lines[0], f"Version: {__version__}", *lines[1:]]) + "\n"


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(
        b"=").decode()


def master_wheel(cache: str | None = None) -> Wheel:
    """The wheel of the taskflow this process runs (packed once per process and code)."""
    global _wheel
    with _lock:
        if _wheel is not None and os.path.exists(_wheel.path):
            return _wheel
        files = package_files()
        h = hashlib.sha256()
        blobs = []
        for arc, full in files:
            with open(full, "rb") as f:
                data = f.read()
            h.update(arc.encode() + b"\0" + hashlib.sha256(data).digest())
            blobs.append((arc, data))
        digest = h.hexdigest()
        cache = cache or os.path.join(os.path.expanduser("~"), ".cache", "taskflow", "wheels")
        where = os.path.join(cache, digest[:12])
        os.makedirs(where, mode=0o700, exist_ok=True)
        dist = DIST_NAME.replace("-", "_")
        path = os.path.join(where, f"{dist}-{__version__}-py3-none-any.whl")
        if not os.path.exists(path):
            info = f"{dist}-{__version__}.dist-info"
            meta = [(f"{info}/METADATA", _metadata().encode()),
                    (f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: taskflow\n"
                     b"Root-Is-Purelib: true\nTag: py3-none-any\n")]
            record = [f"{arc},{_record_hash(data)},{len(data)}" for arc, data in blobs + meta]
            record.append(f"{info}/RECORD,,")
            tmp = f"{path}.{os.getpid()}.part"
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
                for arc, data in blobs + meta:
                    z.writestr(arc, data)
                z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
            os.chmod(tmp, 0o600)
            os.replace(tmp, path)
        _wheel = Wheel(path, digest)
        return _wheel


def install_script(python: str, home: str, wheel: Wheel, extra: list[str]) -> str:
    """The shell lines that make the node's environment once (under a lock) and print its
    interpreter's path; exit 90 when ``venv`` fails, 91 when ``pip install`` fails."""
    venvs = f"{home}/.taskflow/venvs"
    v = shlex.quote(f"{venvs}/{wheel.venv(extra)}")
    more = "".join(" " + shlex.quote(r) for r in extra)
    w = shlex.quote(f"{home}/.taskflow/wheels/{wheel.digest[:12]}/{wheel.name}")
    return "\n".join([
        "umask 077",
        f"mkdir -p {shlex.quote(venvs)} || exit {_NO_VENV}",
        # one install at a time on this node (several masters, several runs)
        f"if command -v flock >/dev/null; then exec 9>{shlex.quote(venvs + '/.lock')} && "
        f"flock -w {int(INSTALL_TIMEOUT)} 9; fi",
        f"if [ ! -e {v}/{_DONE} ]; then",
        f"  rm -rf {v}",
        f"  {python} -m venv {v} || exit {_NO_VENV}",
        f"  {v}/bin/python -m pip install --disable-pip-version-check -q {w}{more} 1>&2 "
        f"|| exit {_NO_PIP}",
        f"  : > {v}/{_DONE}",
        "fi",
        f"echo {v}/bin/python",
    ])


Run = Callable[["SSHNode", str, float], "tuple[int, str, str]"]


def ensure(n: SSHNode, run: Run, timeout: float = INSTALL_TIMEOUT) -> str:
    """Make sure node ``n`` (connected) has the master's taskflow in a venv of its own
    (with the requirements ``install:`` lists, when it is a list); returns that venv's
    interpreter, for ``python:``."""
    c = n.cfg
    extra = list(c.install) if isinstance(c.install, list) else []
    wheel = master_wheel()
    python = " ".join(shlex.quote(a) for a in shlex.split(c.python))
    # the node's env: applies here too (a HOME, pip's PIP_INDEX_URL or PIP_FIND_LINKS)
    env = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in c.env.items())
    rc, out, err = run(n, env + f'printf "%s" "$HOME"; test -e "$HOME/.taskflow/venvs/{wheel.venv(extra)}/'
                          f'{_DONE}" && echo " ready"', 60.0)
    home = out.split(" ")[0].strip()
    if not home.startswith("/"):
        raise NodeStartError(f"{n.where}: install: true could not read the home directory "
                             f"there (exit {rc}): {err.strip() or '(no message)'}")
    if not out.rstrip().endswith(" ready"):
        _copy(n, wheel, home)
    rc, out, err = run(n, env + install_script(python, home, wheel, extra), timeout)
    if rc == 0 and out.strip():
        return out.strip().splitlines()[-1]
    tail = "\n    ".join(err.strip().splitlines()[-6:]) or "(no message)"
    if rc == _NO_VENV:
        why = (f"`{c.python} -m venv` failed there: install the venv module (Debian and "
               f"Ubuntu: apt-get install python3-venv) or set python: to an interpreter "
               f"that has it")
    elif rc == _NO_PIP:
        why = ("pip could not install taskflow's wheel and its dependencies there"
               + (f" (with {', '.join(extra)})" if extra else "") + " (is the "
               "node's package index reachable? pip's configuration on the node decides "
               "where it looks); or install taskflow there yourself and drop install: true")
    elif rc == -1:
        why = f"the install did not end within {timeout:g} s"
    else:
        why = f"the install ended with exit code {rc}"
    raise NodeStartError(f"{n.where}: install: true: {why}.\n    {tail}")


def _copy(n: SSHNode, wheel: Wheel, home: str) -> None:
    """The wheel to ``~/.taskflow/wheels/DIGEST/`` on the node (SFTP, user-only)."""
    d = f"{home}/.taskflow/wheels/{wheel.digest[:12]}"
    sftp = n.client.open_sftp()
    try:
        path = ""
        for part in d.strip("/").split("/"):
            path += "/" + part
            try:
                sftp.stat(path)
            except OSError:
                sftp.mkdir(path, 0o700)
        target = f"{d}/{wheel.name}"
        sftp.put(wheel.path, target + ".part")
        sftp.chmod(target + ".part", 0o600)
        sftp.posix_rename(target + ".part", target)
    except OSError as exc:
        raise NodeStartError(f"{n.where}: install: true could not copy taskflow's wheel to "
                             f"{d}: {exc}") from None
    finally:
        sftp.close()
