"""What a submission may hold: every string is checked before the service answers.

A run's script, arguments, cluster file and upload names end up on a command
line, in file names and in the service's answers (JSON, UTF-8). So each one is
refused with 422, naming its field, when it holds a NUL character (no path or
argument can: ``execve`` and ``open`` stop there), a lone surrogate (not text:
no UTF-8 file name, file or answer can hold it) or more characters than its
bound. An upload's name is a plain file name that is not ``.`` or ``..`` nor
one of the names the service keeps in a run's directory.
"""
from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

MAX_PATH = 4096          # characters of a path under the workdir
MAX_ARG = 32768          # characters of one argument (Linux takes 128 KiB per argument)
MAX_ARGS = 1000          # arguments after the script
RESERVED = frozenset({"console.log", "journal"})     # what a run's directory holds already


def problem(value: str) -> str | None:
    """Why ``value`` cannot be a path, an argument or a file's text (None: it can)."""
    nul = value.find("\x00")
    if nul >= 0:
        return f"holds a NUL character (at {nul}), which no path or argument can hold"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"holds a lone surrogate (U+{ord(value[exc.start]):04X} at {exc.start}), "
                f"which is not text: send UTF-8")
    return None


def _text(limit: int | None) -> AfterValidator:
    def check(value: str) -> str:
        why = problem(value)
        if why is not None:
            raise ValueError(why)
        if limit is not None and len(value) > limit:
            raise ValueError(f"is {len(value)} characters long; at most {limit}")
        return value
    return AfterValidator(check)


def _name(value: str) -> str:
    if value.strip(".") == "":
        raise ValueError(f"{value!r} is not a file name; use a name like wf.py")
    if value in RESERVED:
        raise ValueError(f"{value!r} is a name the service uses in a run's directory; "
                         f"use another one")
    return value


Path = Annotated[str, _text(MAX_PATH)]
Arg = Annotated[str, _text(MAX_ARG)]
Content = Annotated[str, _text(None)]          # (bounded by the body's limit)
Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,100}$"), AfterValidator(_name)]


class FileIn(BaseModel):
    """A file given to a run: ``path`` under the service's workdir, or its ``content``."""
    model_config = ConfigDict(extra="forbid")
    path: Path | None = Field(None, description="A path under the service's workdir "
                                                 "(relative to it, or absolute inside it).")
    name: Name | None = Field(None, description="File name for uploaded content (letters, "
                                                 "digits, '_', '.', '-'; not '.' or '..').")
    content: Content | None = Field(None, description="The file's text (an upload).")


class RunIn(BaseModel):
    """A run to start: a workflow script, its arguments and options."""
    model_config = ConfigDict(extra="forbid")
    script: FileIn | Path = Field(..., description="The workflow script: a path under the "
                                                   "workdir, or {path} or {name, content}.")
    args: list[Arg] = Field(default_factory=list, max_length=MAX_ARGS,
                            description="Arguments after the script.")
    cluster: FileIn | Path | None = Field(None, description="A cluster file (YAML) for "
                                                            "`taskflow run --cluster`.")
    workers: int | None = Field(None, ge=1, le=4096, description="Executor slots (--workers).")
    nodes: int | None = Field(None, ge=1, le=256, description="Local node agents (--nodes).")
    retries: int | None = Field(None, ge=0, le=100, description="--retries")
    priority: int = Field(0, ge=-1000, le=1000, description="Higher starts first when runs "
                                                            "wait; equal ones by age.")


def stored_problem(script: str, args: list[str], options: dict[str, object]) -> str | None:
    """Why a run kept in the service's record cannot start (one a service before these
    checks accepted); None when it can."""
    for what, value in [("script", script), *((f"args[{i}]", a) for i, a in enumerate(args)),
                        ("cluster", options.get("cluster") or "")]:
        why = problem(value) if isinstance(value, str) else f"is not text ({value!r})"
        if why is not None:
            return f"{what} {why}"
    return None
