"""The documentation: the site builds, its examples run as written, its install lines are right.

- ``mkdocs build --strict`` (mkdocs.yml, docs/): a broken link, a missing page, a page
  left out of the nav or an API reference to a name that is gone fails the build, and
  the failure quotes mkdocs's warnings, which name the page. Skipped, saying why, only
  when the ``docs`` extra is not installed (``make test`` installs it: it is part of
  the ``test`` extra).
- README.md's 20-line example and its quickstart commands run as written, in a temporary
  directory, with this checkout's taskflow.
- Every code block of docs/getting-started.md runs as written, in order, in a copy of
  the checkout, in a new virtual environment: its ``pip install`` lines install this
  checkout (offline: the dependencies are lent from this interpreter, build isolation
  and dependency resolution are turned off through pip's environment variables, the
  command lines are untouched), and its workflow runs with the taskflow they installed.
  A ``text`` block after a ``bash`` block lists lines the output must hold (``<...>``
  matches anything).
- Every line of README.md and docs/ that installs taskflow names this distribution (from
  pyproject.toml) in a form that works from this checkout.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from support import paths

ROOT = Path(paths.ROOT).resolve()
DOCS = ROOT / "docs"
DOCS_MODULES = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python", "mkdocs_click")
KEPT = ("architecture.md", "security.md", "errors.md", "compat-pycompss.md")


def _pyproject() -> dict:
    try:
        import tomllib
    except ImportError:          # Python 3.10
        tomllib = pytest.importorskip("tomli")
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


DIST = _pyproject()["name"]                         # taskflow-hpc
WHEEL_PREFIX = re.sub(r"[-_.]+", "_", DIST).lower()   # taskflow_hpc (the wheel's file name)
EXTRAS = set(_pyproject()["optional-dependencies"])


# --- fenced code blocks -------------------------------------------------------------------

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)[ \t]*(?P<lang>[\w+-]*)(?P<attrs>[^\n]*)$")


def fences(text: str) -> list[dict]:
    """The fenced code blocks of a markdown text, in order: lang, title, body, line."""
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = m.group("indent"), m.group("fence")
        title = re.search(r'title="([^"]+)"', m.group("attrs"))
        body = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
            j += 1
        out.append({"lang": m.group("lang"), "title": title.group(1) if title else None,
                    "body": "\n".join(body) + "\n", "line": i + 1})
        i = j + 1
    return out


def section(text: str, heading: str) -> str:
    """The text of one ``## heading`` section."""
    start = text.index(heading)
    nxt = re.search(r"^## ", text[start + len(heading):], re.MULTILINE)
    return text[start:start + len(heading) + nxt.start()] if nxt else text[start:]


def expect_lines(expected: str, output: str, where: str) -> None:
    """Each line of ``expected`` is a line of ``output`` (``<...>``: anything)."""
    got = [line.strip() for line in output.splitlines()]
    for want in expected.splitlines():
        if not want.strip():
            continue
        pat = re.escape(want.strip())
        pat = re.sub(r"<[^>]*?>", ".+?", pat.replace(r"\<", "<").replace(r"\>", ">"))
        assert any(re.fullmatch(pat, g) for g in got), \
            f"{where}: the output has no line like {want.strip()!r}:\n{output[-3000:]}"


def run_bash(body: str, cwd: Path, env: dict, where: str, timeout: float = 300) -> str:
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", body], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=timeout)
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"{where} failed (exit {r.returncode}):\n{body}\n--- output:\n{out[-4000:]}"
    return out


def run_blocks(path: Path, cwd: Path, env: dict) -> list[str]:
    """Run a page's blocks in order: write titled python blocks, run bash blocks, check text."""
    ran = []
    last = ""
    for b in fences(path.read_text()):
        where = f"{path.relative_to(ROOT)}:{b['line']}"
        if b["lang"] == "python":
            assert b["title"], f"{where}: a python block of this page needs title=\"file.py\""
            (cwd / b["title"]).write_text(b["body"])
        elif b["lang"] in ("bash", "sh", "shell"):
            last = run_bash(b["body"], cwd, env, where)
            ran.append(b["body"])
        elif b["lang"] == "text":
            assert last, f"{where}: an output block must follow a bash block"
            expect_lines(b["body"], last, where)
        else:
            pytest.fail(f"{where}: a block of {path.name} must be python (with a title), bash "
                        f"(run) or text (the output of the bash block before it), not "
                        f"{b['lang'] or 'plain'!r}")
    return ran


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "TASKFLOW_RUN_DIR", "TASKFLOW_WORKERS", "VIRTUAL_ENV")}
    env.update(extra)
    return env


# --- the site -----------------------------------------------------------------------------

def test_the_nav_has_every_part_the_issue_asks_for():
    with open(ROOT / "mkdocs.yml") as f:
        cfg = yaml.safe_load(f)

    def pages(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for x in node:
                yield from pages(x)
        elif isinstance(node, dict):
            for v in node.values():
                yield from pages(v)

    nav = list(pages(cfg["nav"]))
    assert len(nav) >= 15, nav
    for kept in KEPT:
        assert kept in nav, f"docs/{kept} must stay in the nav at its path"
    for p in nav:
        assert (DOCS / p).is_file(), f"the nav names docs/{p}, which does not exist"
    tops = [next(iter(x)) if isinstance(x, dict) else x for x in cfg["nav"]]
    for part in ("Getting started", "Tutorial", "User guide", "Reference", "How it works",
                 "Benchmarks"):
        assert part in tops, f"the nav has no {part!r} section: {tops}"
    assert cfg["theme"]["name"] == "material"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built once with ``mkdocs build --strict``: warnings fail it, naming the pages."""
    missing = [m for m in DOCS_MODULES if importlib.util.find_spec(m.split(".")[0]) is None
               or importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"the docs extra is not installed here ({', '.join(missing)} missing): "
                    f"pip install -e '.[docs]' (make test installs it)")
    site = tmp_path_factory.mktemp("docs") / "site"
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                       cwd=ROOT, env=clean_env(NO_MKDOCS_2_WARNING="1"), capture_output=True,
                       text=True, timeout=600)
    out = r.stdout + r.stderr
    problems = [line for line in out.splitlines() if re.match(r"(WARNING|ERROR)\b", line)]
    pages = sorted(set(re.findall(r"'([\w./-]+\.md)'", "\n".join(problems))))
    assert r.returncode == 0 and not problems, (
        f"mkdocs build --strict failed{' on ' + ', '.join(pages) if pages else ''}:\n"
        + "\n".join(problems or out.splitlines()[-30:]))
    return site


def test_mkdocs_build_strict(site):
    # the command reference is generated from click: every subcommand is on the page
    from taskflow.cli import main
    cli = (site / "reference" / "cli.html").read_text()
    for name in main.commands:
        assert f"taskflow {name}" in cli, f"reference/cli.md lacks taskflow {name}"
    api = (site / "reference" / "api.html").read_text()
    for name in ("wait_on", "barrier_group", "TaskError", "Runtime", "container", "mpi"):
        assert name in api, f"reference/api.md lacks {name}"


def test_the_site_shows_the_pictures_the_tests_made(site):
    """At least 6 pictures of docs/images/ (tests/surfaces/test_doc_pictures.py makes them)
    are on the pages, and every one the pages show is in the built site."""
    shown: set[str] = set()
    for page in site.rglob("*.html"):
        for src in re.findall(r'<img[^>]+src="([^"]+)"', page.read_text(encoding="utf-8")):
            if "images/" in src:
                target = (page.parent / src).resolve()
                assert target.is_file(), f"{page.relative_to(site)} shows {src}, which is not built"
                shown.add(target.name)
    made = {p.name for p in (DOCS / "images").glob("*.png")}
    assert len(shown & made) >= 6, f"the pages show {sorted(shown)} of {sorted(made)}"


def test_the_site_opened_from_disk_searches(site):
    """site/index.html opened as a file (no server, no network): the search box is there and
    finds pages (Material's offline plugin, and the iframe-worker shim kept in docs/)."""
    index = (site / "index.html").read_text(encoding="utf-8")
    scripts = re.findall(r'<script src="([^"]+)"', index)
    assert scripts and not [s for s in scripts if "://" in s], scripts     # nothing from a CDN
    assert (site / "search" / "search_index.js").is_file()
    from support import browser
    with browser.page(1400, 900) as pg:
        pg.goto((site / "index.html").as_uri())
        box = pg.locator("input.md-search__input")
        box.click()
        box.press_sequentially("resume", delay=20)
        pg.wait_for_selector(".md-search-result__item")
        assert "matching document" in pg.inner_text(".md-search-result__meta")
        assert pg.errors == []


def test_the_kept_pages_are_linked_from_the_other_pages():
    text = "\n".join(p.read_text() for p in DOCS.rglob("*.md") if p.name not in KEPT)
    for kept in KEPT:
        assert re.search(rf"\]\((\.\./)*{re.escape(kept)}(#[\w-]+)?\)", text), \
            f"no page links to docs/{kept}"


# --- README -------------------------------------------------------------------------------

@pytest.fixture
def checkout_bin(tmp_path):
    """A bin directory whose ``python`` and ``taskflow`` are this interpreter and checkout."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    # a script, not a symlink: a symlink to a venv's interpreter is not that venv (Python
    # looks for pyvenv.cfg beside the link), which on a Debian python3 has no packages
    py = bindir / "python"
    py.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    py.chmod(0o755)
    tf = bindir / "taskflow"
    tf.write_text(f"#!/bin/sh\nexec {sys.executable} -m taskflow \"$@\"\n")
    tf.chmod(0o755)
    return clean_env(PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
                     PYTHONPATH=str(ROOT / "src"))


def test_readme_is_a_front_door():
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) <= 12 * 1024, f"README.md is {len(text.encode())} bytes (at most 12 KB)"
    commands = fences(section(text, "## The two commands"))[0]["body"]
    assert "make demo" in commands and "make test" in commands
    for peer in ("PyCOMPSs", "Dask", "Parsl", "HyperQueue"):
        assert peer in section(text, "## Compared with its peers")
    assert "not on the package index" in text


def test_the_readme_example_runs_as_written(tmp_path, checkout_bin):
    text = (ROOT / "README.md").read_text()
    (block,) = [b for b in fences(section(text, "## A 20-line example")) if b["lang"] == "python"]
    assert 15 <= len(block["body"].strip().splitlines()) <= 25
    work = tmp_path / "work"
    work.mkdir()
    (work / "script.py").write_text(block["body"])           # "Run it with python script.py"
    out = run_bash("python script.py", work, checkout_bin, "README.md's example")
    expected = block["body"].strip().splitlines()[-1].split("#", 1)[1].strip()   # 328350 7
    assert out.strip().splitlines()[-1] == expected, out
    assert (work / "sum.txt").read_text() == "328350\n"
    out = run_bash("taskflow run script.py", work, checkout_bin, "taskflow run of README's example")
    assert expected in out and "103 tasks, 103 done, 0 failed" in out, out


def test_the_readme_quickstart_commands_run_as_written(tmp_path, checkout_bin):
    text = (ROOT / "README.md").read_text()
    blocks = [b for b in fences(section(text, "## A 20-line example")) if "taskflow run" in b["body"]]
    assert blocks
    shutil.copytree(ROOT / "examples" / "quickstart", tmp_path / "examples" / "quickstart")
    out = run_bash(blocks[0]["body"], tmp_path, checkout_bin, "README.md's quickstart commands")
    assert "sum of squares: 328350" in out, out
    assert (tmp_path / "report.html").stat().st_size > 0
    # its file where it ran, not in /tmp
    assert (tmp_path / "quickstart-report.txt").read_text() == "sum of squares = 328350\n"


# --- Getting started ----------------------------------------------------------------------

def _lend_dependencies(venv_python: Path, farm: Path) -> None:
    """Make this interpreter's packages (not taskflow itself) importable in a new venv."""
    purelib = Path(sysconfig.get_paths()["purelib"])
    farm.mkdir()
    for entry in purelib.iterdir():
        name = entry.name.lower()
        if name.startswith(("taskflow", "__editable__")) or name.endswith(".pth") \
                or name == "__pycache__":
            continue
        (farm / entry.name).symlink_to(entry)
    site = subprocess.run([str(venv_python), "-c",
                           "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "zz_lent_dependencies.pth").write_text(f"{farm}\n")


@pytest.mark.timeout(900)
def test_every_block_of_getting_started_runs_as_written(tmp_path):
    page = DOCS / "getting-started.md"
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT, checkout, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "site", "build", "dist", "*.egg-info", "__pycache__", "test-artifacts",
        ".taskflow", "run", "bin", "obj"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    # an old setuptools that ensurepip puts in new venvs (Python < 3.12) cannot build this
    # pyproject.toml; the build uses the lent one (the test extra's setuptools>=77)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "uninstall", "-y", "-q", "setuptools"],
                   capture_output=True, timeout=300)
    _lend_dependencies(venv / "bin" / "python", tmp_path / "lent")
    env = clean_env(
        PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", VIRTUAL_ENV=str(venv),
        # offline and quick, with the pip lines as written: no index, no dependency
        # resolution (they are lent above), no isolated build environment
        PIP_NO_INDEX="1", PIP_NO_DEPS="1", PIP_NO_BUILD_ISOLATION="0",
        PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PIP_NO_WARN_SCRIPT_LOCATION="1")
    ran = run_blocks(page, checkout, env)
    text = "\n".join(ran)
    for needed in ("pip install .", f"pip install ./dist/{WHEEL_PREFIX}-*.whl", "python first.py",
                   "taskflow run first.py"):
        assert needed in text, f"getting-started.md no longer runs {needed!r}"
    # the workflow ran with the taskflow the page installed, not the checkout's sources
    where = subprocess.run(["python", "-c", "import taskflow; print(taskflow.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True)
    assert where.stdout.startswith(str(venv)), where.stdout + where.stderr
    assert (checkout / "sum.txt").read_text() == "328350\n"


# --- install lines ------------------------------------------------------------------------

_PIP = re.compile(r"pip3? install\s+(?P<args>[^`#\n]*)")


def _install_targets(args: str) -> list[str]:
    """The requirement arguments of one ``pip install`` line (options dropped)."""
    import shlex
    try:
        words = shlex.split(args.replace("$(", "").replace(")", ""))
    except ValueError:
        words = args.split()
    return [w for w in words if not w.startswith("-") and w not in ("&&", ";", "|")]


def _check_target(t: str) -> str | None:
    """None when ``t`` installs taskflow from this checkout or its wheel; else what is wrong."""
    m = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", t)              # . / .[extras]
    if m is None:
        m = re.fullmatch(r"(?:echo )?[\w./]*?/?" + WHEEL_PREFIX + r"-(?:\*|[\w.]+-py3-none-any)\.whl"
                         r"(?:\[([\w,-]+)\])?", t)
    if m is not None:
        unknown = set(filter(None, (m.group(1) or "").split(","))) - EXTRAS
        return f"unknown extra(s) {sorted(unknown)}" if unknown else None
    if re.fullmatch(rf"{re.escape(DIST)}==(VERSION|[\d.]+)", t):
        return None      # the node start-up message's advice, quoted (guide/ssh.md)
    if "taskflow" in t.lower() or t.startswith("."):
        return f"{t!r} is not this checkout (.) nor its wheel (./dist/{WHEEL_PREFIX}-*.whl)"
    return None          # another package (paramiko, hyperqueue, ...)


def test_install_lines_name_this_distribution_and_work_from_the_checkout():
    files = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    bad = []
    checked = 0
    for f in files:
        for n, line in enumerate(f.read_text().splitlines(), 1):
            if re.search(r"[Dd]o (\*\*)?not(\*\*)? `pip install taskflow`", line):
                continue          # the warning about OpenStack's TaskFlow
            if re.search(r"'[^' ]*\*[^' ]*\.whl[^' ]*'", line):
                bad.append(f"{f.relative_to(ROOT)}:{n}: a quoted wheel glob is not expanded "
                           f"by the shell, and pip does not expand it: {line.strip()}")
            for m in _PIP.finditer(line):
                for t in _install_targets(m.group("args")):
                    checked += 1
                    why = _check_target(t)
                    if why:
                        bad.append(f"{f.relative_to(ROOT)}:{n}: {why}: {line.strip()}")
    assert checked >= 10
    assert not bad, "\n".join(bad)


def test_the_install_line_checks_catch_the_old_mistakes():
    assert _check_target("taskflow[serve]")                  # OpenStack's TaskFlow
    assert _check_target("taskflow")
    assert _check_target("taskflow-hpc")                     # not on the index yet
    assert _check_target("./dist/taskflow-*.whl")            # not the wheel's file name
    assert _check_target(".[nonsense]")
    assert _check_target(".[ssh]") is None and _check_target(".") is None
    assert _check_target(f"./dist/{WHEEL_PREFIX}-*.whl") is None
    assert _check_target("hyperqueue") is None
