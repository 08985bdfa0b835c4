"""Building an external program's argv from a task call (node side).

Never a shell string: the template is split on whitespace first and the
parameter values are put into the pieces, so a value with spaces (or
``"; rm -rf ~"``) stays one harmless argv entry. ``$VAR`` was already
expanded in the template on the master at call time; values are used as
they are.
"""
from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING, Any

from ....wire.invocation import CommandLine
from ....wire.template import PLACEHOLDER as TEMPLATE, REDIRECT
from ..programs import STATE

if TYPE_CHECKING:
    import inspect

FILE_KINDS = ("file", "directory")


_SIGNATURES: dict[Any, inspect.Signature] = {}    # task function -> its signature
# task function -> (its parameter names, their defaults) when every parameter is a plain
# one (positional or keyword, no *args / **kwargs); None: bind through its signature
_PLAIN: dict[Any, tuple[tuple[str, ...], dict[str, Any]] | None] = {}
_RESOLVED: dict[tuple[str, str, str | None], str] = {}   # (binary, cwd, PATH) -> program


def _signature(func: Any) -> inspect.Signature:
    sig = _SIGNATURES.get(func)
    if sig is None:
        import inspect      # (a program task's first call here: the agent never needs it)
        if len(_SIGNATURES) > 1024:
            _SIGNATURES.clear()
        sig = _SIGNATURES[func] = inspect.signature(func)
    return sig


def _plain(func: Any) -> tuple[tuple[str, ...], dict[str, Any]] | None:
    """The names and defaults of ``func``'s parameters when all of them are plain ones."""
    try:
        return _PLAIN[func]
    except KeyError:
        pass
    except TypeError:          # an unhashable callable
        return None
    try:
        params = _signature(func).parameters.values()
    except (TypeError, ValueError):
        plain = None
    else:
        kinds = {p.kind for p in params}
        if kinds - {1}:        # inspect.Parameter.POSITIONAL_OR_KEYWORD is 1
            plain = None
        else:
            plain = (tuple(p.name for p in params),
                     {p.name: p.default for p in params if p.default is not p.empty})
    if len(_PLAIN) > 1024:
        _PLAIN.clear()
    _PLAIN[func] = plain
    return plain


def bind(func: Any, args: list[Any], kw: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    """Parameter name -> value as the task sees it (files are version paths by now);
    ``order``: the parameter names, for a function whose signature cannot be read.

    A function of plain parameters binds without ``inspect`` (a program task's call
    costs as much as its ``Signature.bind`` otherwise): the same names in the same
    order, defaults applied; anything else goes through the signature."""
    plain = _plain(func)
    if plain is not None:
        names, defaults = plain
        n = len(args)
        if n <= len(names):
            out = dict(zip(names, args))
            if not kw and n == len(names):
                return out
            used = 0
            for name in names[n:]:
                if name in kw:
                    out[name] = kw[name]
                    used += 1
                elif name in defaults:
                    out[name] = defaults[name]
                else:
                    break               # a value missing: inspect says which
            else:
                if used == len(kw):     # (else a keyword unknown, or given twice)
                    return out
    try:
        b = _signature(func).bind(*args, **kw)
        b.apply_defaults()
        return dict(b.arguments)
    except (TypeError, ValueError):
        out = dict(zip(order, args))
        out.update(kw)
        return out


def _text(v: Any, prefix: str | None) -> str:
    s = v if isinstance(v, str) else os.fspath(v) if isinstance(v, os.PathLike) else str(v)
    return prefix + s if prefix else s


def _entries(v: Any, prefix: str | None) -> list[str]:
    if v is None:
        return []
    if isinstance(v, (list, tuple)):
        out: list[str] = []
        for x in v:
            out.extend(_entries(x, prefix))
        return out
    return [_text(v, prefix)]


def build_args(line: CommandLine, values: dict[str, Any], env: dict[str, str] | None = None,
               cwd: str = ".") -> tuple[list[str], dict[str, tuple[str, str]]]:
    """Return (argv after the program, {stream: (path, direction)}).

    With ``line.words`` (PyCOMPSs's programs: the template read as bash reads
    it, on the master) each value is one argument wherever its placeholder
    stands (:func:`.words.fill`).
    """
    params = line.params
    streams: dict[str, tuple[str, str]] = {}
    for pname, (_kind, direction, stream, _prefix) in params.items():
        if stream is not None and values.get(pname) is not None:
            streams[stream] = (os.fspath(values[pname]), direction)
    skip = {p for p, (_, _, stream, _) in params.items() if stream is not None}
    prefix = {p: pre for p, (_, _, _, pre) in params.items() if pre}
    if line.words is not None:
        from .words import fill, redirects

        def entries(n: str) -> list[str]:
            return [] if n in skip else _entries(values.get(n), prefix.get(n))
        argv = fill(line.words, values, entries, cwd)
        if any(w.startswith(REDIRECT) for w in line.words):    # > f, 2>&1, < f
            streams.update(redirects(line.words, entries, cwd))
        return argv, streams
    tmpl = line.args
    out: list[str] = []
    if tmpl is None:
        varargs, varkw = line.varargs, line.varkw
        for name, v in values.items():
            if name in skip or name == varkw:
                continue
            if name == varargs:
                for x in v:
                    out.extend(_entries(x, prefix.get(name)))
            else:
                out.extend(_entries(v, prefix.get(name)))
        return out, streams
    for tok in tmpl.split():
        m = TEMPLATE.fullmatch(tok)
        if m:
            out.extend(_entries(values.get(m.group(1)), prefix.get(m.group(1))))
            continue
        out.append(TEMPLATE.sub(lambda m: " ".join(_entries(values.get(m.group(1)),
                                                            prefix.get(m.group(1)))), tok))
    return out, streams


def substitute(template: str, values: dict[str, Any]) -> str:
    """``{{name}}`` -> the parameter's value as text (working directories, HTTP resources)."""
    return TEMPLATE.sub(lambda m: " ".join(_entries(values.get(m.group(1)), None)), template)


def resolve_binary(binary: str, cwd: str, env: dict[str, str]) -> str:
    """The program to run: absolute, relative to the working directory, or on PATH.

    A name found once is not looked up again (a PATH search is ~30 us of
    stat calls) while it stays an executable file.
    """
    key = (binary, cwd, env.get("PATH"))
    found = _RESOLVED.get(key)
    if found is not None and os.access(found, os.X_OK):
        return found
    found = _resolve(binary, cwd, env)
    if len(_RESOLVED) > 1024:
        _RESOLVED.clear()
    _RESOLVED[key] = found
    return found


def _resolve(binary: str, cwd: str, env: dict[str, str]) -> str:
    if os.sep in binary:
        path = binary if os.path.isabs(binary) else os.path.abspath(os.path.join(cwd, binary))
        if not os.path.exists(path):
            raise FileNotFoundError(f"binary {path} does not exist on node "
                                    f"{os.uname().nodename}")
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            raise PermissionError(f"binary {path} is not executable (chmod +x it)")
        return path
    found = shutil.which(binary, path=env.get("PATH"))
    if found is None:
        raise FileNotFoundError(f"binary '{binary}' was not found on PATH "
                                f"({env.get('PATH', '')}) on node {os.uname().nodename}")
    return found


def working_dir(wd: str | None, values: dict[str, Any] | None = None) -> str:
    """The program's working directory (made if missing); ``{{name}}``: a parameter."""
    if not wd or wd == "[unassigned]":
        here = STATE.here = os.getcwd()     # (spawn starts a program given it here)
        return here
    if values is not None and "{{" in wd:
        wd = substitute(wd, values)
    wd = os.path.abspath(wd)
    os.makedirs(wd, exist_ok=True)
    return wd
