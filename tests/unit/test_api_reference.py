"""The Python API reference (docs/reference/api.md) cannot lose its types or its examples.

Every name of ``taskflow.__all__`` that is a function or a class has a docstring with an
``Example::`` section (Python that compiles; the reference renders it as a code block),
and none of its public parameters is typed ``Any`` or left without a type: a parameter
that takes any object says ``object``. Where ``Any`` is really meant, ``ANY_MEANT`` says
so, with the reason. A constant (a direction, an ``on_failure`` value, a key of the
dictionary form) is named in the reference's table of names, and the module that
defines the directions has an example.
"""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import taskflow
from support import paths

API_MD = Path(paths.ROOT) / "docs" / "reference" / "api.md"

# The methods of each public class the reference shows (docs/reference/api.md ``members``);
# a class's constructor is always checked. Future's other methods are the runtime's.
MEMBERS = {
    "Executor": ("submit", "map", "shutdown"),
    "Future": ("result", "exception", "done", "running", "cancelled", "cancel",
               "add_done_callback"),
    "Stream": ("publish", "publish_list", "close", "poll", "is_closed"),
    "FileStream": ("publish", "publish_list"),
    "TaskGroup": (),
    "Runtime": (),
}

# (name, function, parameter) -> why ``Any`` is the type meant there.
ANY_MEANT = {
    ("Executor", "submit", "args"): "concurrent.futures.Executor.submit's signature "
                                    "(a ParamSpec there): the arguments of fn, whatever it takes",
    ("Executor", "submit", "kwargs"): "as args: fn's keyword arguments",
}

# "Example::" or "Example (how to run it)::", then the indented code
_EXAMPLE = re.compile(r"^Examples?(?: \([^\n]*\))?::?[ \t]*\n((?:[ \t]*\n)*(?:(?:    .*)?\n)+)",
                      re.MULTILINE)


def _public() -> list[tuple[str, object]]:
    return [(name, getattr(taskflow, name)) for name in taskflow.__all__]


def _documented() -> list[tuple[str, object]]:
    return [(n, o) for n, o in _public() if inspect.isclass(o) or inspect.isroutine(o)]


def _examples(doc: str) -> list[str]:
    return [inspect.cleandoc("\n" + m.group(1)) for m in _EXAMPLE.finditer(doc + "\n")]


@pytest.mark.parametrize("name,obj", _documented(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_public_function_and_class_has_an_example(name, obj):
    doc = inspect.getdoc(obj) or ""
    assert doc, f"taskflow.{name} has no docstring"
    found = _examples(doc)
    assert found, f"taskflow.{name}'s docstring has no 'Example::' section followed by code"
    for code in found:
        compile(code, f"<example of taskflow.{name}>", "exec")


def _signatures(name: str, obj: object) -> list[tuple[str, inspect.Signature]]:
    if not inspect.isclass(obj):
        return [(name, inspect.signature(obj))]   # type: ignore[arg-type]
    out = []
    if "__init__" in vars(obj) or not issubclass(obj, BaseException):
        out.append(("__init__", inspect.signature(obj.__init__)))
    for member in MEMBERS.get(name, ()):
        out.append((member, inspect.signature(getattr(obj, member))))
    return out


def _untyped(name: str, obj: object) -> list[str]:
    bad = []
    for fn, sig in _signatures(name, obj):
        for p in sig.parameters.values():
            if p.name in ("self", "cls") or p.name.startswith("_"):
                continue
            ann = p.annotation
            text = ann if isinstance(ann, str) else inspect.formatannotation(ann)
            if ann is inspect.Parameter.empty:
                text = "(none)"
            elif not re.search(r"\bAny\b", text):
                continue
            if (name, fn, p.name) not in ANY_MEANT:
                bad.append(f"{name}.{fn}({p.name}: {text})")
    return bad


def test_no_public_parameter_is_typed_any_or_untyped():
    bad = [b for name, obj in _documented() for b in _untyped(name, obj)]
    assert not bad, ("public parameters typed Any or not at all (give the real type, "
                     "`object` for anything, or say why in ANY_MEANT): " + ", ".join(bad))


def test_the_allow_list_names_only_parameters_that_exist():
    for name, fn, param in ANY_MEANT:
        obj = getattr(taskflow, name)
        target = obj if fn == name else getattr(obj, fn)
        assert param in inspect.signature(target).parameters, (name, fn, param)


def test_every_constant_is_in_the_reference_table():
    text = API_MD.read_text()
    consts = [n for n, o in _public() if not (inspect.isclass(o) or inspect.isroutine(o))]
    assert consts, "taskflow.__all__ lost its constants?"
    missing = [n for n in consts if f"`{n}`" not in text]
    assert not missing, f"docs/reference/api.md's table does not name {missing}"
    from taskflow.api import parameter
    assert _examples(parameter.__doc__ or ""), "taskflow.api.parameter's docstring has no example"
