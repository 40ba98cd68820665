"""The answer read back by the script: tuned() from tuned.yaml's `best:`."""

import os
import re
import sys

from ._knobs import _apply_threads
from ._params import _APPLIED, Params, _given_defaults, _parse_like, _warn_no_default, params


def tuned(path="tuned.yaml", **defaults):
    """The tuned configuration as ``Params``: tuned.yaml's ``best:`` over the
    defaults, typed like them::

        p = autotune_trial.tuned("tuned.yaml", batch_size=64, grad_accum=4, num_workers=0, pin_memory=False)

    - No file at `path` (relative to the current folder): the defaults (make
      them the baseline, the configuration the script ran before tuning).
      A file whose run found no answer (``best: ~``) gives the defaults too,
      and says so on standard error.
    - Inside a trial (autotune runs the script: AUTOTUNE_TRIAL is set) the
      trial's values, as ``params(**defaults)``: the file is not read, so a
      knob the space leaves out runs at its default in every trial, as it
      will after tuning.
    - A value of the file with no default here is included, typed as the
      file writes it, and said once on standard error (a misspelt knob?).
    - ``threads`` (intra-op threads of this rank) is applied as the trials
      applied it, default or not: ``torch.set_num_threads`` where the script
      has imported torch, and ``OMP_NUM_THREADS`` for the processes it starts
      (its DataLoader workers).

    Reads only the ``best:`` map that autotune writes (a flow or block map
    of scalars: integers, true/false, plain or quoted strings).
    """
    if "AUTOTUNE_TRIAL" in os.environ:
        return params(**defaults)
    _given_defaults(defaults)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return Params(defaults)
    best = read_best(text, path)
    out = Params(defaults)
    if best is None:
        print(f"autotune_trial: {path} holds no answer (best: ~): the defaults", file=sys.stderr, flush=True)
        return out
    for name, value in best.items():
        if name in defaults:
            out[name] = _typed_like(value, defaults[name], name, path)
        else:
            if name not in _APPLIED:
                _warn_no_default(name, f"{path} sets {name}")
            out[name] = value
    _apply_threads(out)
    return out


def _typed_like(value, default, name, path):
    """`value` from the file, typed like `default` (as params() types the
    environment's text: the same text autotune would have set)."""
    if default is None or value is None or type(value) is type(default):
        return value
    if type(default) is float and type(value) is int:
        return float(value)
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    try:
        return _parse_like(text, default, name)
    except ValueError:
        raise ValueError(f"autotune_trial: {path}: best.{name} is {value!r}, but its default here is "
                         f"{default!r} ({type(default).__name__})") from None


# -- A reader for the `best:` of tuned.yaml (standard library only) ----------

_TOP_KEY = re.compile(r"best[ \t]*:(?=[ \t]|$)")
_INT = re.compile(r"[-+]?[0-9]+\Z")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r",
            "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0", "L": "\u2028",
            "P": "\u2029"}
_HEX = {"x": 2, "u": 4, "U": 8}


class _Syntax(ValueError):
    pass


def read_best(text, path="tuned.yaml"):
    """tuned.yaml's top-level ``best:`` as a dict (None for ``best: ~``).
    Raises ValueError naming the file and line where it cannot be read."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _TOP_KEY.match(line)
        if not m:
            continue
        try:
            return _best_at(lines, i, m.end())
        except _Syntax as e:
            raise ValueError(f"autotune_trial: {path}:{e}") from None
    raise ValueError(f"autotune_trial: {path}: no top-level `best:` (not a tuned.yaml autotune wrote?)")


def _best_at(lines, i, col):
    rest = _Scanner(lines[i], col, i + 1)
    rest.skip_space()
    if rest.at_end():  # a block map below
        return _block_map(lines, i + 1)
    if rest.peek() == "{":
        # A flow map may run over several lines: read on until it closes.
        scanner = _Scanner("\n".join(lines[i:]), col, i + 1)
        scanner.skip_space()
        out = scanner.flow_map()
        scanner.expect_end_of_line()
        return out
    value = rest.scalar(flow=False)
    rest.expect_end_of_line()
    if value is None:
        return None
    raise _Syntax(f"{i + 1}: best is {value!r}, not a map")


def _block_map(lines, start):
    out, indent = {}, None
    for n in range(start, len(lines)):
        line = lines[n]
        stripped = line.lstrip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        here = len(line) - len(stripped)
        if here == 0:
            break
        if indent is None:
            indent = here
        elif here != indent:
            raise _Syntax(f"{n + 1}: indentation {here}, expected {indent} (only a map of scalars is read)")
        s = _Scanner(line, here, n + 1)
        key = s.scalar(flow=False, key=True)
        s.expect(":")
        s.skip_space()
        out[str(key)] = s.scalar(flow=False)
        s.expect_end_of_line()
    if indent is None:
        return None  # `best:` with nothing under it reads as null
    return out


class _Scanner:
    def __init__(self, text, pos, line):
        self.text, self.pos, self.first_line = text, pos, line

    def where(self):
        line = self.first_line + self.text.count("\n", 0, self.pos)
        col = self.pos - (self.text.rfind("\n", 0, self.pos) + 1) + 1
        return f"{line}:{col}"

    def fail(self, why):
        raise _Syntax(f"{self.where()}: {why}")

    def peek(self):
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def at_end(self):
        return self.pos >= len(self.text) or self.text[self.pos] in "\n#"

    def skip_space(self, newlines=False):
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if c in " \t" or (newlines and c in "\r\n"):
                self.pos += 1
            elif c == "#" and (self.pos == 0 or self.text[self.pos - 1] in " \t\n") and newlines:
                while self.pos < len(self.text) and self.text[self.pos] != "\n":
                    self.pos += 1
            else:
                return

    def expect(self, c):
        self.skip_space()
        if self.peek() != c:
            self.fail(f"expected {c!r}, found {self.peek() or 'the end'!r}")
        self.pos += 1

    def expect_end_of_line(self):
        self.skip_space()
        if self.peek() == "#" and (self.pos == 0 or self.text[self.pos - 1] in " \t"):
            return
        if self.peek() not in ("", "\n"):
            self.fail(f"unexpected {self.text[self.pos:].splitlines()[0]!r}")

    def flow_map(self):
        self.expect("{")
        out = {}
        self.skip_space(newlines=True)
        if self.peek() == "}":
            self.pos += 1
            return out
        while True:
            self.skip_space(newlines=True)
            key = self.scalar(flow=True, key=True)
            self.skip_space(newlines=True)
            if self.peek() != ":":
                self.fail(f"expected ':' after {key!r}")
            self.pos += 1
            self.skip_space(newlines=True)
            out[str(key)] = self.scalar(flow=True)
            self.skip_space(newlines=True)
            c = self.peek()
            self.pos += 1
            if c == "}":
                return out
            if c != ",":
                self.pos -= 1
                self.fail(f"expected ',' or '}}', found {c or 'the end'!r}")

    def scalar(self, flow, key=False):
        c = self.peek()
        if c == '"':
            return self._double_quoted()
        if c == "'":
            return self._single_quoted()
        if c in ("{", "[", "&", "*", "!", "|", ">", "%", "@", "`"):
            self.fail(f"{c!r}: only scalars are read")
        start = self.pos
        while self.pos < len(self.text):
            c = self.text[self.pos]
            nxt = self.text[self.pos + 1] if self.pos + 1 < len(self.text) else ""
            if c == "\n" or (c == ":" and (nxt in " \t\n" or nxt == "" or (flow and nxt in ",}"))):
                break
            if flow and c in ",}":
                break
            if c == "#" and self.pos > start and self.text[self.pos - 1] in " \t":
                break
            self.pos += 1
        plain = self.text[start:self.pos].strip()
        if key:
            return plain
        return _plain_value(plain)

    def _double_quoted(self):
        self.pos += 1
        out = []
        while True:
            if self.pos >= len(self.text):
                self.fail("a double-quoted string is not closed")
            c = self.text[self.pos]
            self.pos += 1
            if c == '"':
                return "".join(out)
            if c != "\\":
                out.append(c)
                continue
            e = self.peek()
            self.pos += 1
            if e in _ESCAPES:
                out.append(_ESCAPES[e])
            elif e in _HEX:
                digits = self.text[self.pos:self.pos + _HEX[e]]
                if len(digits) != _HEX[e] or not all(d in "0123456789abcdefABCDEF" for d in digits):
                    self.fail(f"bad escape \\{e}{digits}")
                out.append(chr(int(digits, 16)))
                self.pos += _HEX[e]
            else:
                self.fail(f"unknown escape \\{e}")

    def _single_quoted(self):
        self.pos += 1
        out = []
        while True:
            if self.pos >= len(self.text):
                self.fail("a single-quoted string is not closed")
            c = self.text[self.pos]
            self.pos += 1
            if c == "'":
                if self.peek() == "'":
                    out.append("'")
                    self.pos += 1
                    continue
                return "".join(out)
            out.append(c)


def _plain_value(s):
    """A plain scalar, typed as YAML's core schema types what autotune writes
    plain: integers, true/false, null; everything else is a string (the
    emitter quotes a string that any YAML reader would type otherwise)."""
    if s in ("", "~", "null", "Null", "NULL"):
        return None
    if s in ("true", "True", "TRUE"):
        return True
    if s in ("false", "False", "FALSE"):
        return False
    if _INT.match(s):
        return int(s)
    if _FLOAT.match(s):
        return float(s)
    return s
