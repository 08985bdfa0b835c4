"""``@prolog`` / ``@epilog``: a program before / after a task, on its node."""
from __future__ import annotations

from typing import Any

from ..errors import UsageError
from ..wire.invocation import HookProgram
from ..wire.template import PLACEHOLDER, check, template_words
from .external import fail_by_exit_value, normalize
from .calls.taskfn import CompatTaskFunction, task_function


def add_hook(target: Any, which: str, kwargs: dict[str, Any],
             fail_default: bool) -> CompatTaskFunction:
    kw = normalize(which, kwargs, ("binary", "args", "params", "fail_by_exit_value",
                                   "working_dir"))
    if not kw.get("binary"):
        raise UsageError(f"@{which}: the binary argument is mandatory.")
    tf = task_function(target, f"@{which}")
    spec = tf.spec
    args = kw.get("args", kw.get("params"))
    names = list(spec.signature.parameters)
    for n in PLACEHOLDER.findall(args or ""):
        if n not in names:
            raise UsageError(f"@{which} on {spec.name}: args names {{{{{n}}}}}, which is not a "
                             f"parameter of {spec.name}({', '.join(names)}).")
    why = check(PLACEHOLDER.sub("x", args or ""))
    if why:
        raise UsageError(f"@{which} on {spec.name}: args={args!r}: {why}.")
    hook = HookProgram(kw["binary"], args, kw.get("working_dir"),
                       fail_by_exit_value(kw.get("fail_by_exit_value"), which, fail_default),
                       bash=True)
    if "$" not in "".join(v for v in (args, kw["binary"], kw.get("working_dir")) if v):
        # nothing to expand per call: read once (runtime.calltime reads the others per call)
        hook = hook._replace(words=template_words(args or "", {}))
    if which == "prolog":
        spec.add_hooks(prolog=hook)
    else:
        spec.add_hooks(epilog=hook)
    return tf
