#!/usr/bin/env python3
"""Run the README's shell and Python blocks as written, top to bottom.

Every fenced ```sh and ```python block of README.md runs in order, from a scratch directory
holding a copy of the clone's files (so `data/...`, `crates/...`, `cargo` and `pip install ./`
find what they would find in a fresh clone, and whatever the blocks write stays out of the
clone; builds reuse the clone's `target/`). Shell blocks run with `bash -e -o pipefail`, one script per block;
Python blocks with the given interpreter. Both find `tally` in `--tally-dir` first on `PATH`
(the README has it installed by `cargo install`), then the virtual environment's `bin/`.

A command that serves (`tally serve`, `tally relay`: the README's "terminals") runs in the
background until its block ends, and the next line waits until its `--listen` port accepts
connections. A line given with `--skip` is not run, and the run says so and why (the CI runs
`cargo test --workspace` as its own step). Every repository path the README names (`data/...`,
`tools/...`, `examples/...`, `python/...`, `crates/...`) must exist.

Exits non-zero at the first block that fails, naming it.

Usage: python3 tools/docs/run_readme.py --tally-dir target/debug --venv VENV
       [--skip 'cargo test --workspace=WHY'] [--list] [--only N,...]
"""

import argparse
import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

FENCE = re.compile(r"^```(?P<language>\w*)\s*$")
RUN = ("sh", "python")
# A repository path in the README's text: it must exist.
REPO_PATH = re.compile(r"(?<![\w./-])(?:data|tools|examples|python|crates)/[\w.*/-]*[\w*]")
SERVER = re.compile(r"^(?:\w+=(?:\$\([^)]*\)|\S+)\s+)*tally\s+(?:serve|relay)\b")
LISTEN = re.compile(r"--listen\s+(?P<host>[\w.]+):(?P<port>\d+)")


def blocks(readme):
    """The README's runnable blocks: (language, first line number, text)."""
    found = []
    language = None
    lines = []
    start = 0
    for number, line in enumerate(readme.splitlines(), 1):
        fence = FENCE.match(line)
        if fence and language is None:
            language = fence["language"]
            lines = []
            start = number + 1
        elif line.strip() == "```" and language is not None:
            if language in RUN:
                found.append((language, start, "\n".join(lines) + "\n"))
            language = None
        elif language is not None:
            lines.append(line)
    if language is not None:
        sys.exit(f"README.md: the block opened at line {start - 1} is never closed")
    return found


def commands(text):
    """A shell block's logical lines: continuation lines joined, comments and blanks kept."""
    out = []
    pending = ""
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append(pending + line)
        pending = ""
    if pending:
        out.append(pending)
    return out


def shell_script(text, skipped):
    """A block as the script bash runs: servers in the background, each waited for."""
    script = [
        "set -e -o pipefail",
        # Stop the block's servers when it ends, however it ends.
        "trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true' EXIT",
        "wait_listening() {",
        "    for _ in $(seq 600); do",
        '        (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && return 0',
        "        sleep 0.1",
        "    done",
        '    echo "nothing listens on $1:$2 after 60 s" >&2; return 1',
        "}",
    ]
    for line in commands(text):
        command = line.strip()
        if command in skipped:
            script.append(f"echo {shlex.quote('skipped: ' + command + ' (' + skipped[command] + ')')}")
        elif SERVER.match(command):
            listen = LISTEN.search(command)
            if listen is None:
                sys.exit(f"README.md: a server without --listen HOST:PORT: {command}")
            script.append(f"{command} &")
            script.append(f"wait_listening {listen['host']} {listen['port']}")
        else:
            script.append(line)
    return "\n".join(script) + "\n"


def scratch_directory(root):
    """A scratch directory holding a copy of the clone's files (those git tracks, and new ones
    it does not ignore), as a fresh clone would have them. (Copies, not links: the wheel's
    build does not follow a linked `python/`.)"""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\0")
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="tally-readme-"))
    for path in filter(None, listed):
        source = root / path
        if not source.is_file():
            continue  # deleted in the working tree
        (scratch / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, scratch / path)
    return scratch


def missing_paths(root, readme):
    """The repository paths the README names that do not exist."""
    missing = []
    for path in sorted(set(REPO_PATH.findall(readme))):
        if "*" in path:
            if not list(root.glob(path)):
                missing.append(path)
        elif not (root / path).exists():
            missing.append(path)
    return missing


def run_block(command, directory, environment, timeout):
    """Runs a block in a process group of its own; its status, or None if it ran past
    `timeout` seconds (its whole group is then killed)."""
    process = subprocess.Popen(command, cwd=directory, env=environment, start_new_session=True)
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).parents[2])
    parser.add_argument("--tally-dir", type=pathlib.Path, help="a directory holding `tally`")
    parser.add_argument("--venv", type=pathlib.Path, help="the virtual environment to run in")
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="LINE=WHY",
        help="a command line not to run, and why (repeatable)",
    )
    parser.add_argument(
        "--timeout", type=int, default=1200, help="seconds a block may run (default 1200)"
    )
    parser.add_argument("--list", action="store_true", help="print the blocks and stop")
    parser.add_argument(
        "--only",
        type=lambda text: {int(n) for n in text.split(",")},
        metavar="N[,N...]",
        help="run these blocks only (1-based; later ones may need files earlier ones make)",
    )
    args = parser.parse_args()
    root = args.root.resolve()
    readme = (root / "README.md").read_text(encoding="utf-8")
    missing = missing_paths(root, readme)
    if missing:
        sys.exit("README.md names paths that do not exist: " + ", ".join(missing))
    found = blocks(readme)
    if not found:
        sys.exit("README.md has no sh or python block")
    if args.list:
        for index, (language, line, text) in enumerate(found, 1):
            print(f"block {index} ({language}, line {line}):\n{text}")
        return
    skipped = {}
    for item in args.skip:
        line, separator, why = item.partition("=")
        if not separator or not why:
            sys.exit(f"--skip {item!r}: give LINE=WHY")
        skipped[line.strip()] = why
    environment = dict(os.environ)
    path = environment.get("PATH", "")
    python = sys.executable
    if args.venv is not None:
        venv = args.venv.resolve()
        path = f"{venv / 'bin'}{os.pathsep}{path}"
        environment["VIRTUAL_ENV"] = str(venv)
        python = str(venv / "bin" / "python")
    if args.tally_dir is not None:
        tally_dir = args.tally_dir.resolve()
        if not (tally_dir / "tally").is_file():
            sys.exit(f"--tally-dir {tally_dir}: no `tally` there")
        path = f"{tally_dir}{os.pathsep}{path}"
    environment["PATH"] = path
    # Builds in the scratch directory reuse the clone's target directory.
    environment.setdefault("CARGO_TARGET_DIR", str(root / "target"))
    scratch = scratch_directory(root)
    unused = set(skipped)
    try:
        for index, (language, line, text) in enumerate(found, 1):
            if args.only is not None and index not in args.only:
                continue
            unused -= {command.strip() for command in commands(text)} if language == "sh" else set()
            started = time.monotonic()
            print(f"== README.md block {index} ({language}, line {line})", flush=True)
            if language == "sh":
                run = [
                    "bash",
                    "-c",
                    shell_script(text, skipped),
                ]
            else:
                run = [python, "-c", text]
            status = run_block(run, scratch, environment, args.timeout)
            if status is None:
                sys.exit(f"README.md block {index} (line {line}) ran past {args.timeout} s")
            if status != 0:
                sys.exit(f"README.md block {index} (line {line}) failed with status {status}")
            print(f"   ok in {time.monotonic() - started:.0f} s", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if args.only is None and unused:
        sys.exit("--skip names lines the README does not have: " + ", ".join(sorted(unused)))


if __name__ == "__main__":
    main()
