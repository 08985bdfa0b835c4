"""What the layer does not provide fails where it is used, naming it; a module that only
defines names imports (the feature fails when it is called)."""
import pycompss.interactive
import pycompss.runtime.management.classes
import pycompss.runtime.management.object_tracker
import pycompss.streams.distro_stream
import pycompss.util.context
import pycompss.util.exceptions
from pycompss.api.task import task

out = {}


def attempt(name, fn):
    try:
        fn()
        out[name] = "no error"
    except Exception as exc:
        out[name] = f"{type(exc).__name__}: {exc}"


def use_decaf():
    from pycompss.api.decaf import decaf
    decaf(df_script="x")


def use_julia():
    from pycompss.api.julia import julia
    julia(script="x.jl")


def use_opencl():
    from pycompss.api.opencl import opencl
    opencl(kernel="k.cl")


def use_external_stream():
    from pycompss.api.parameter import TYPE, Parameter

    @task(ods=Parameter(TYPE.EXTERNAL_STREAM))
    def write(ods):
        pass


def use_storage():
    from pycompss.util.storages.persistent import get_by_id  # noqa: F401


def use_interactive():
    pycompss.interactive.start(storage_conf="storage.cfg")


def use_internals():
    import pycompss.runtime.binding  # noqa: F401


for name, fn in [("decaf", use_decaf), ("julia", use_julia),
                 ("opencl", use_opencl), ("external_stream", use_external_stream),
                 ("storage", use_storage),
                 ("interactive", use_interactive), ("internals", use_internals)]:
    attempt(name, fn)
for k, v in sorted(out.items()):
    print("UNSUPPORTED", k, "|", v)
print("IMPORTED", pycompss.runtime.management.classes.Future.__module__,
      issubclass(pycompss.util.exceptions.PyCOMPSsException, Exception),
      pycompss.util.context.in_master())
