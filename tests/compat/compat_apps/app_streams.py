"""Streams as PyCOMPSs's documentation shows them: an object stream with a producer task
and two consumer tasks, the main program polling one, and a @binary filling a file stream
that a task consumes."""
import os
import sys

from pycompss.api.api import compss_wait_on
from pycompss.api.binary import binary
from pycompss.api.parameter import IN, STREAM_IN, STREAM_OUT
from pycompss.api.task import task
from pycompss.streams.distro_stream import FileDistroStream, ObjectDistroStream

HERE = os.path.dirname(os.path.abspath(__file__))


@task(ods=STREAM_OUT, n=IN)
def write_objects(ods, n):
    for i in range(n):
        ods.publish({"id": i})
    ods.close()


@task(ods=STREAM_IN, returns=list)
def read_objects(ods):
    got = []
    while not ods.is_closed():
        got.extend(o["id"] for o in ods.poll())
    got.extend(o["id"] for o in ods.poll())     # one last time, as PyCOMPSs's apps do
    return got


@binary(binary=os.path.join(HERE, "write_stream_files.sh"))
@task(fds=STREAM_OUT)
def write_files(fds, n):
    pass


@task(fds=STREAM_IN, returns=list)
def read_files(fds):
    got = []
    while not fds.is_closed():
        for path in fds.poll():
            with open(path) as f:
                got.append(f.read().strip())
    return sorted(got)


def main():
    ods = ObjectDistroStream()
    a, b = read_objects(ods), read_objects(ods)
    write_objects(ods, 50)
    a, b = compss_wait_on(a), compss_wait_on(b)

    mine = ObjectDistroStream(alias="to-main")
    write_objects(ObjectDistroStream(alias="to-main"), 5)   # the same stream, by its alias
    seen = []
    while not mine.is_closed():
        seen.extend(o["id"] for o in mine.poll(timeout=100))

    fds = FileDistroStream(base_dir=os.path.join(os.getcwd(), "stream-dir"))
    files = read_files(fds)
    write_files(fds, 4)
    files = compss_wait_on(files)
    print("RESULT", {"objects": sorted(a + b), "each_in_order": a == sorted(a) and b == sorted(b),
                     "main": seen, "files": files, "type": fds.get_stream_type()})
    sys.stdout.flush()


if __name__ == "__main__":
    main()
