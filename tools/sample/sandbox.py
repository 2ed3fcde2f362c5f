"""The sandbox of a recording: path mapping, output cleaning and the four real tools.

The tools do real work on this machine (the recording is only as fixed as the installed package
versions): ``read_file`` reads site-packages or workspace files, ``run_command`` runs a whitelist of
programs without a shell, ``write_file``/``edit_file`` write into the temporary workspace. Their
names, signatures and docstrings become the recorded ``tools`` schemas, so they are part of the
sample's bytes.
"""

from __future__ import annotations

import os
import shlex
import site
import subprocess
import sys
import tempfile
from pathlib import Path

from langchain_core.tools import BaseTool, StructuredTool

__all__ = ["WORKSPACE", "Sandbox", "make_tools"]

#: read_file / run_command cap their output like real agent harnesses do
MAX_OUTPUT_CHARS = 40_000
MAX_LINE_CHARS = 2_000
COMMAND_TIMEOUT_S = 120
ALLOWED_PROGRAMS = ("ls", "grep", "wc", "head", "tail", "python")
WORKSPACE = "workspace"


def _site_roots() -> list[Path]:
    """Directories that hold the installed packages, the one holding ``langchain`` first."""
    import langchain

    roots = [Path(langchain.__file__).resolve().parent.parent]
    try:
        extra = site.getsitepackages()
    except AttributeError:  # pragma: no cover - unusual interpreters
        extra = []
    for p in [*extra, site.getusersitepackages() if site.ENABLE_USER_SITE else None]:
        if p and Path(p).is_dir() and Path(p).resolve() not in roots:
            roots.append(Path(p).resolve())
    return roots


class Sandbox:
    """Path mapping and output cleaning shared by the tools of one recording."""

    def __init__(self, workspace: Path) -> None:
        self.roots = _site_roots()
        self.site = self.roots[0]
        self.workspace = workspace.resolve()
        replacements: dict[str, str] = {str(self.workspace): WORKSPACE}
        for root in self.roots:
            replacements.setdefault(str(root), "")
        for prefix, label in (
            (sys.prefix, "<venv>"),
            (sys.base_prefix, "<python>"),
            (sys.exec_prefix, "<venv>"),
            (tempfile.gettempdir(), "<tmp>"),
            (str(Path.home()), "~"),
            (os.getcwd(), "<cwd>"),
        ):
            for variant in {prefix, str(Path(prefix).resolve())}:
                if variant and variant != "/":
                    replacements.setdefault(variant, label)
        # longest first, so that a root inside the venv wins over the venv itself
        self._replacements = sorted(replacements.items(), key=lambda kv: len(kv[0]), reverse=True)

    def clean(self, text: str) -> str:
        """Replace every absolute host path prefix by a neutral label."""
        for prefix, label in self._replacements:
            if prefix not in text:
                continue
            text = text.replace(prefix + "/", f"{label}/" if label else "")
            text = text.replace(prefix, label or ".")
        return text

    def resolve_read(self, file_path: str) -> Path | str:
        """The host path of a readable file, or an error message."""
        rel = file_path.strip()
        if rel.startswith(WORKSPACE + "/"):
            return self._inside(self.workspace, rel[len(WORKSPACE) + 1 :], file_path)
        for root in self.roots:
            got = self._inside(root, rel, file_path)
            if isinstance(got, Path) and got.exists():
                return got
        return f"Error: file not found: {file_path}"

    def resolve_write(self, file_path: str) -> Path | str:
        rel = file_path.strip()
        if rel.startswith(WORKSPACE + "/"):
            rel = rel[len(WORKSPACE) + 1 :]
        return self._inside(self.workspace, rel, file_path)

    @staticmethod
    def _inside(root: Path, rel: str, shown: str) -> Path | str:
        if not rel or Path(rel).is_absolute():
            return f"Error: path must be relative: {shown}"
        path = (root / rel).resolve()
        if not path.is_relative_to(root):
            return f"Error: path escapes its root: {shown}"
        return path

    def show(self, path: Path) -> str:
        """How a host path is shown to the model."""
        if path.is_relative_to(self.workspace):
            return f"{WORKSPACE}/{path.relative_to(self.workspace).as_posix()}"
        return self.clean(str(path))


def _cap(text: str, hint: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    cut = text.rfind("\n", 0, MAX_OUTPUT_CHARS)
    cut = cut if cut > MAX_OUTPUT_CHARS // 2 else MAX_OUTPUT_CHARS
    rest = text[cut:]
    return f"{text[:cut]}\n... [output truncated: {len(rest)} more characters, {rest.count(chr(10))} more lines; {hint}]"


def make_tools(box: Sandbox) -> list[BaseTool]:
    def read_file(file_path: str, offset: int = 1, limit: int = 2000) -> str:
        """Read a text file with line numbers (cat -n style).

        Args:
            file_path: relative to site-packages, or starting with `workspace/`.
            offset: first line to show (1-based).
            limit: maximum number of lines to show.
        """
        path = box.resolve_read(file_path)
        if isinstance(path, str):
            return path
        if path.is_dir():
            return f"Error: {file_path} is a directory; use run_command with ls"
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            return f"Error: cannot read {file_path}: {type(exc).__name__}"
        start = max(int(offset), 1)
        chosen = lines[start - 1 : start - 1 + max(int(limit), 1)]
        if not chosen:
            return f"Error: offset {start} is past the end of {file_path} ({len(lines)} lines)"
        body = "\n".join(
            f"{start + i:6d}\t{line[:MAX_LINE_CHARS]}{' [line truncated]' if len(line) > MAX_LINE_CHARS else ''}"
            for i, line in enumerate(chosen)
        )
        return box.clean(_cap(body, "use offset/limit to read further"))

    def run_command(command: str) -> str:
        """Run one whitelisted command (ls, grep, wc, head, tail, python -c) without a shell.

        Args:
            command: the command line; globs are expanded, `workspace/...` paths map to the workspace.
        """
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            return f"Error: cannot parse command: {exc}"
        if not argv or argv[0] not in ALLOWED_PROGRAMS:
            return f"Error: program not allowed: {argv[0] if argv else '(empty)'}; allowed: {', '.join(ALLOWED_PROGRAMS)}"
        if argv[0] == "python":
            if len(argv) < 3 or argv[1] != "-c":
                return "Error: only `python -c CODE` is allowed"
            argv = [sys.executable, *argv[1:]]
        else:
            expanded: list[str] = [argv[0]]
            for arg in argv[1:]:
                if arg.startswith(WORKSPACE + "/"):
                    arg = str(box.workspace / arg[len(WORKSPACE) + 1 :])
                if any(ch in arg for ch in "*?[") and not arg.startswith("-"):
                    matches = sorted(p.as_posix() for p in Path(box.site).glob(arg))
                    expanded.extend(matches or [arg])
                else:
                    expanded.append(arg)
            argv = expanded
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LC_ALL": "C",
            "LANG": "C",
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONWARNINGS": "ignore",
            "PYTHONIOENCODING": "utf-8",
            "HOME": str(box.workspace),
            "NO_COLOR": "1",
        }
        try:
            proc = subprocess.run(
                argv,
                cwd=box.site,
                env=env,
                capture_output=True,
                text=True,
                encoding="utf-8",
                errors="replace",
                timeout=COMMAND_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"Error: command timed out after {COMMAND_TIMEOUT_S} s"
        out = proc.stdout
        if argv[0] == "grep" and any(a.startswith("-") and ("r" in a or "R" in a) for a in argv[1:]):
            # recursive grep lists files in directory order, which differs between machines
            out = "".join(sorted(out.splitlines(keepends=True), key=lambda line: line.split(":", 1)[0]))
        if proc.stderr.strip():
            out += ("\n" if out and not out.endswith("\n") else "") + "[stderr]\n" + proc.stderr
        if proc.returncode != 0:
            out += ("\n" if out and not out.endswith("\n") else "") + f"[exit code {proc.returncode}]"
        return box.clean(_cap(out.rstrip("\n"), "narrow the command")) or "(no output)"

    def write_file(file_path: str, content: str) -> str:
        """Create or overwrite a file in the workspace.

        Args:
            file_path: path inside the workspace (an optional `workspace/` prefix is accepted).
            content: the full new content.
        """
        path = box.resolve_write(file_path)
        if isinstance(path, str):
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        existed = path.exists()
        path.write_text(content, encoding="utf-8")
        verb = "Overwrote" if existed else "Wrote"
        return f"{verb} {box.show(path)} ({len(content)} characters, {content.count(chr(10)) + 1} lines)"

    def edit_file(file_path: str, old_string: str, new_string: str, replace_all: bool = False) -> str:
        """Replace an exact string in a workspace file.

        Args:
            file_path: path inside the workspace (an optional `workspace/` prefix is accepted).
            old_string: the exact text to replace; must occur once unless replace_all is true.
            new_string: the replacement text.
            replace_all: replace every occurrence.
        """
        path = box.resolve_write(file_path)
        if isinstance(path, str):
            return path
        if not path.exists():
            return f"Error: file not found: {file_path}"
        text = path.read_text(encoding="utf-8")
        count = text.count(old_string)
        if count == 0:
            return f"Error: old_string not found in {box.show(path)}"
        if count > 1 and not replace_all:
            return (
                f"Error: old_string occurs {count} times in {box.show(path)}; add context or set replace_all"
            )
        path.write_text(text.replace(old_string, new_string), encoding="utf-8")
        n = count if replace_all else 1
        return f"Edited {box.show(path)}: replaced {n} occurrence{'s' if n > 1 else ''} ({len(old_string)} -> {len(new_string)} characters)"

    return [StructuredTool.from_function(fn) for fn in (read_file, run_command, write_file, edit_file)]
