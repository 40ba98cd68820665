"""The commands README.md and docs/*.md show run as shown.

What runs: every fenced ```sh block, in the order the file shows them, one
command line at a time (a line ending in a backslash goes on with the next),
with bash, from a scratch folder that stands for the repository root: each
top-level folder of the repository is linked into it, and `build` is a link
to the folder of the binary under test ($AUTOTUNE_BINARY, else the
checkout's build/), so `build/autotune ...` and `configs/...` resolve as in
a checkout while what the commands write (tuned.yaml, journals, report.html)
stays out of it. State carries from block to block within a file, as for a
user who types them in one folder; every docs page gets a folder of its own.

Each line must exit 0, or the status its comment names: a line whose
comment says "exits N" (`build/autotune --budget 6   # exits 2: ...`) must
exit N.

What does not run:
- blocks in any other language (```text, ```yaml, ```python, ```console):
  output and templates, never commands to paste as they are;
- a ```sh block preceded (blank lines aside) by the marker
      <!-- not run by tests/python/test_readme.py: REASON -->
  The README marks its two set-up commands (scripts/run.sh installs
  packages; scripts/test.sh runs this suite) and the install into ~/.local;
  docs mark what needs a Slurm allocation, a GPU, a CUDA toolkit or a long
  benchmark. The reason is required.

PATH starts with /usr/bin: the commands that start `python3` want Debian's
python3, where python3-torch is (a pyenv or venv python3 earlier on PATH
usually has none; the examples still run without torch, on their
pure-Python stand-in).
"""
import glob
import os
import re
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
MARKER = re.compile(r"<!--\s*not run by tests/python/test_readme\.py:\s*(\S.*?)\s*-->")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
EXITS = re.compile(r"#.*\bexits (\d+)\b")
COMMAND_TIMEOUT_S = 300


def blocks(path):
    """(language, first line number, lines, skip reason or None) for each
    fenced block of a Markdown file."""
    out = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    i = 0
    last_text = ""  # the last non-blank line outside a block
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            if lines[i].strip():
                last_text = lines[i]
            i += 1
            continue
        fence, lang, start = m.group(2), m.group(3).lower(), i + 1
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        marker = MARKER.search(last_text)
        out.append((lang, start, body, marker.group(1) if marker else None))
        last_text = ""
    return out


def commands(body):
    """The command lines of a shell block: continuations joined, blank
    lines and whole-line comments dropped."""
    out, pending = [], ""
    for line in body:
        if pending:
            line = pending + "\n" + line
            pending = ""
        if line.rstrip().endswith("\\"):
            pending = line
            continue
        if line.strip() and not line.strip().startswith("#"):
            out.append(line)
    if pending:
        out.append(pending)
    return out


def expected_status(command):
    m = EXITS.search(command.splitlines()[-1])
    return int(m.group(1)) if m else 0


def binary_dir():
    binary = os.environ.get("AUTOTUNE_BINARY") or os.path.join(ROOT, "build", "autotune")
    return os.path.dirname(os.path.abspath(binary))


def scratch_root():
    """A folder that stands for the repository root (see the module's doc)."""
    d = tempfile.mkdtemp(prefix="autotune-readme-")
    for name in os.listdir(ROOT):
        src = os.path.join(ROOT, name)
        if name.startswith(".") or name.startswith("build") or not os.path.isdir(src):
            continue
        os.symlink(src, os.path.join(d, name))
    os.symlink(binary_dir(), os.path.join(d, "build"))
    return d


def environment():
    env = dict(os.environ)
    env["PATH"] = "/usr/bin:/bin:" + env.get("PATH", "")
    for key in [k for k in env if k.startswith("AUTOTUNE_") and k != "AUTOTUNE_BINARY"]:
        del env[key]  # a trial's own variables would change what the commands do
    return env


class Runs:
    """Runs the shell blocks of Markdown files; a mixin for the test classes."""

    def run_file(self, path):
        ran = 0
        folder = scratch_root()
        try:
            for lang, line_no, body, skip in blocks(path):
                if lang != "sh" or skip:
                    continue
                for command in commands(body):
                    self.run_command(path, line_no, command, folder)
                    ran += 1
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return ran

    def run_command(self, path, line_no, command, folder):
        want = expected_status(command)
        where = f"{os.path.relpath(path, ROOT)}:{line_no}"
        try:
            p = subprocess.run(["bash", "-c", command], cwd=folder, env=environment(), capture_output=True,
                               text=True, timeout=COMMAND_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            self.fail(f"{where}: `{command}` ran past {COMMAND_TIMEOUT_S} s")
        self.assertEqual(p.returncode, want,
                         f"{where}: `{command}` exited {p.returncode}, expected {want}\n"
                         f"--- stdout (tail)\n{p.stdout[-3000:]}\n--- stderr (tail)\n{p.stderr[-3000:]}")


class Parsing(unittest.TestCase):
    def test_blocks_markers_continuations_and_statuses(self):
        text = "\n".join([
            "Intro.", "",
            "<!-- not run by tests/python/test_readme.py: installs things -->", "",
            "```sh", "scripts/run.sh", "```",
            "```sh", "# a comment", "build/autotune a.yaml \\", "  --budget 4", "",
            "build/autotune a.yaml   # exits 2: an earlier run", "```",
            "```text", "build/autotune never", "```",
        ])
        with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
            f.write(text)
        try:
            found = blocks(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual([(b[0], b[3]) for b in found], [("sh", "installs things"), ("sh", None), ("text", None)])
        cmds = commands(found[1][2])
        self.assertEqual(cmds, ["build/autotune a.yaml \\\n  --budget 4", "build/autotune a.yaml   # exits 2: an earlier run"])
        self.assertEqual([expected_status(c) for c in cmds], [0, 2])


class Readme(Runs, unittest.TestCase):
    def test_every_command_runs_as_shown(self):
        readme = os.path.join(ROOT, "README.md")
        self.assertGreater(self.run_file(readme), 5, "README.md shows fewer commands than expected")

    def test_only_the_set_up_is_left_out(self):
        skipped = [c for lang, _, body, skip in blocks(os.path.join(ROOT, "README.md"))
                   if lang == "sh" and skip for c in commands(body)]
        for c in skipped:
            self.assertRegex(c, r"^(scripts/(run|test)\.sh|cmake )", "only the set-up may be left out of the test")


class Docs(Runs, unittest.TestCase):
    def test_every_command_runs_as_shown(self):
        pages = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
        self.assertTrue(pages, "no docs/*.md")
        for page in pages:
            with self.subTest(page=os.path.basename(page)):
                self.run_file(page)


# A source path in backticks: a folder of the repository, then more.
SOURCE_PATH = re.compile(r"`((?:core|proc|search|workloads|tuner|python|tests|bench|configs|scripts)/[^`\s]*)`")


class CodeMaps(unittest.TestCase):
    """The pages that map the code name only paths that exist."""

    def test_every_source_path_named_exists(self):
        for name in ("tour.md", "design.md"):
            with open(os.path.join(ROOT, "docs", name), encoding="utf-8") as f:
                text = f.read()
            named = SOURCE_PATH.findall(text)
            self.assertGreater(len(named), 10, name)
            for path in named:
                with self.subTest(page=name, path=path):
                    self.assertTrue(glob.glob(os.path.join(ROOT, path.rstrip("/"))), f"docs/{name} names {path}")


if __name__ == "__main__":
    unittest.main()
