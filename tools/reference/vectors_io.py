"""Shared input/output for the reference scripts in tools/reference/.

`sample_threshold.py`, `composition.py` and `triehh.py` compute their test vectors independently
of each other; this module holds only what they share around the mathematics:

* the deterministic JSON text the vectors are written in (`JsonFormat`, with the two float styles
  `float_17g` and `float_string`), and
* the command line (`run`): generate the files, print the warnings, then either write the files or,
  with `--check`, compare them with the committed ones and exit 1 on any difference; and
* a script's identity (`Script`): the path written into its vectors and shown in hints, and the
  directory its vectors go to, both derived from the script's own file.

Standard library only (the scripts convert their mpmath / Fraction values through the `to_double`
hook they pass to `JsonFormat`). The scripts import it from their own directory, which Python puts
on `sys.path` when they are run as `python3 tools/reference/NAME.py`.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

# ----------------------------------------------------------------------------------------------
# JSON formatting
# ----------------------------------------------------------------------------------------------


def float_17g(d: float) -> str:
    """A double as a JSON number with 17 significant digits (always round-trips exactly).

    Integral values keep a ".0" so that they still read as floats. Used by sample_threshold.py.
    """
    if not math.isfinite(d):
        raise ValueError(f"non-finite float {d!r} cannot go into JSON")
    s = "%.17g" % d
    if "." not in s and "e" not in s and "n" not in s:
        s += ".0"
    assert float(s) == d
    return s


def float_string(d: float) -> str:
    """A double as a JSON *string* holding its shortest round-trip decimal (Python's repr).

    Strings, not JSON numbers: serde_json's default float parser (without its
    `float_roundtrip` feature) may land one ulp off, and the Rust tests compare to the ulp.
    Used by composition.py and triehh.py.
    """
    if not math.isfinite(d):
        raise ValueError(f"non-finite float {d!r} cannot go into JSON")
    s = repr(d)
    assert float(s) == d
    return json.dumps(s)


class JsonFormat:
    """Deterministic JSON text for one script's vectors.

    float_text:      formats a Python float (`float_17g` or `float_string`).
    number_types:    further number types (e.g. mpmath's mpf, Fraction) that are written as
                     `float_text(to_double(x))`; any other type is a TypeError.
    to_double:       rounds a value of one of `number_types` to a Python float.
    expand_objects:  whether a top-level value that is an object is written one key per line
                     (otherwise it goes on one line, like any other value).
    """

    def __init__(
        self,
        float_text: Callable[[float], str],
        *,
        number_types: tuple[type, ...] = (),
        to_double: Callable[[object], float] | None = None,
        expand_objects: bool = False,
    ) -> None:
        if number_types and to_double is None:
            raise ValueError("number_types needs a to_double")
        self.float_text = float_text
        self.number_types = number_types
        self.to_double = to_double
        self.expand_objects = expand_objects

    def scalar(self, x) -> str:
        """null, true/false, an integer, a float (via float_text) or an ASCII-escaped string."""
        if x is None:
            return "null"
        if isinstance(x, bool):
            return "true" if x else "false"
        if isinstance(x, int):
            return str(x)
        if isinstance(x, float):
            return self.float_text(x)
        if self.number_types and isinstance(x, self.number_types):
            return self.float_text(self.to_double(x))
        if isinstance(x, str):
            return json.dumps(x, ensure_ascii=True)
        raise TypeError(f"cannot format {type(x)}")

    def inline(self, x) -> str:
        """Any value on one line; objects keep their key order."""
        if isinstance(x, dict):
            return "{" + ", ".join(f"{json.dumps(k)}: {self.inline(v)}" for k, v in x.items()) + "}"
        if isinstance(x, (list, tuple)):
            return "[" + ", ".join(self.inline(v) for v in x) + "]"
        return self.scalar(x)

    def document(self, doc: dict) -> str:
        """The whole file: top-level keys one per line, a list of objects one object per line
        (and, with expand_objects, a top-level object one key per line). Checked to parse."""
        lines = ["{"]
        items = list(doc.items())
        for i, (key, value) in enumerate(items):
            comma = "," if i + 1 < len(items) else ""
            if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                lines.append(f"  {json.dumps(key)}: [")
                for j, v in enumerate(value):
                    lines.append("    " + self.inline(v) + ("," if j + 1 < len(value) else ""))
                lines.append("  ]" + comma)
            elif self.expand_objects and isinstance(value, dict):
                lines.append(f"  {json.dumps(key)}: {{")
                sub = list(value.items())
                for j, (k2, v2) in enumerate(sub):
                    lines.append(f"    {json.dumps(k2)}: {self.inline(v2)}" + ("," if j + 1 < len(sub) else ""))
                lines.append("  }" + comma)
            else:
                lines.append(f"  {json.dumps(key)}: {self.inline(value)}{comma}")
        lines.append("}")
        text = "\n".join(lines) + "\n"
        json.loads(text)  # must be valid JSON
        return text


# ----------------------------------------------------------------------------------------------
# Command line: write the files, or check them against the committed ones
# ----------------------------------------------------------------------------------------------

Log = Callable[[str], None]

DIFF_LINES = 40  # at most this many lines of unified diff per differing file
DIFF_WIDTH = 300  # each cut to this many characters


def parse_args(description: str, default_out_dir: Path, argv: list[str] | None = None) -> argparse.Namespace:
    """--check, --out-dir DIR and --quiet."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--check", action="store_true", help="regenerate in memory and compare with the committed files")
    ap.add_argument("--out-dir", type=Path, default=default_out_dir, help=f"output directory (default {default_out_dir})")
    ap.add_argument("--quiet", action="store_true")
    return ap.parse_args(argv)


def make_log(quiet: bool) -> Log:
    """Progress messages go to stderr, unless quiet."""

    def log(msg: str) -> None:
        if not quiet:
            print(msg, file=sys.stderr)

    return log


def print_warnings(warnings: Iterable[str]) -> None:
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)


def check_files(files: dict[str, str], out_dir: Path, script: str) -> int:
    """Compare the generated texts with the files in out_dir; 0 if they all match, else 1.

    Reports each missing file, each differing file (with an excerpt of the unified diff) and each
    *.json file in out_dir that the script did not generate.
    """
    bad = False
    for name, text in files.items():
        path = out_dir / name
        if not path.exists():
            print(f"MISSING: {path}", file=sys.stderr)
            bad = True
            continue
        old = path.read_text(encoding="utf-8")
        if old != text:
            bad = True
            print(f"DIFFERS: {path}", file=sys.stderr)
            diff = difflib.unified_diff(old.splitlines(), text.splitlines(), "committed", "regenerated", n=0, lineterm="")
            for i, line in enumerate(diff):
                if i >= DIFF_LINES:
                    print("  ...", file=sys.stderr)
                    break
                print("  " + line[:DIFF_WIDTH], file=sys.stderr)
    extra = sorted(p.name for p in out_dir.glob("*.json") if p.name not in files) if out_dir.exists() else []
    for name in extra:
        print(f"UNEXPECTED FILE (not generated by this script): {out_dir / name}", file=sys.stderr)
        bad = True
    if bad:
        print(f"test vectors are out of date: run python3 {script}", file=sys.stderr)
        return 1
    print(f"OK: {len(files)} files in {out_dir} match the reference", file=sys.stderr)
    return 0


def write_files(files: dict[str, str], out_dir: Path, log: Log) -> int:
    """Write every generated text to out_dir (created if needed); returns 0."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (out_dir / name).write_text(text, encoding="utf-8")
        log(f"wrote {out_dir / name}")
    return 0


REPO_ROOT = Path(__file__).resolve().parents[2]


class Script:
    """A reference script: `Script(__file__)` at its top, `main(...)` at its bottom.

    `generated_by` is the script's path from the repository root (written into its vectors and
    shown in the "run python3 ..." hint); `out_dir` is where its vectors go, by default
    `crates/tally-accounting/tests/test_vectors/<the script's name>`.
    """

    def __init__(self, file: str, out_dir: str | None = None) -> None:
        path = Path(file).resolve()
        self.generated_by = path.relative_to(REPO_ROOT).as_posix()
        default = Path("crates/tally-accounting/tests/test_vectors") / path.stem
        self.out_dir = REPO_ROOT / (out_dir or default)

    def main(self, doc: str, generate: Callable[[Log], dict[str, str]], **options) -> None:
        """Runs the script (`run`, described by the first line of `doc`) and exits with its code."""
        sys.exit(
            run(
                description=doc.splitlines()[0],
                default_out_dir=self.out_dir,
                script=self.generated_by,
                generate=generate,
                **options,
            )
        )


def run(
    *,
    description: str,
    default_out_dir: Path,
    script: str,
    generate: Callable[[Log], dict[str, str]],
    warnings: Iterable[str] = (),
    after_generate: Callable[[], int] | None = None,
    argv: list[str] | None = None,
) -> int:
    """A script's whole main(): returns its exit code.

    generate(log) returns {file name: text}. Then `warnings` (read after generating, so a list
    the generation appends to) are printed, and `after_generate()` may end the run with a
    non-zero exit code of its own. Otherwise the files are checked (`--check`) or written.
    `script` is the path shown in the "run python3 ..." hint.
    """
    args = parse_args(description, default_out_dir, argv)
    log = make_log(args.quiet)
    files = generate(log)
    print_warnings(warnings)
    if after_generate is not None:
        code = after_generate()
        if code:
            return code
    if args.check:
        return check_files(files, args.out_dir, script)
    return write_files(files, args.out_dir, log)
