"""Two FileDistroStreams without an alias on one directory, one after the other (the
first closed, the directory emptied and made again): each is a stream of its own, as in
PyCOMPSs, so the second takes producers and sees only its own files."""
import os
import shutil

from pycompss.api.api import compss_wait_on
from pycompss.api.parameter import STREAM_IN, STREAM_OUT
from pycompss.api.task import task
from pycompss.streams.distro_stream import FileDistroStream


@task(fds=STREAM_OUT)
def write(fds, where, tag, n):
    for i in range(n):
        with open(os.path.join(where, f"{tag}-{i}"), "w") as f:
            f.write(tag)
    fds.close()


@task(fds=STREAM_IN, returns=list)
def read(fds):
    got = []
    while not fds.is_closed():
        got.extend(os.path.basename(p) for p in fds.poll())
    return sorted(got)


if __name__ == "__main__":
    where = os.path.join(os.getcwd(), "stream-dir")
    seen = []
    for tag, n in (("first", 3), ("second", 2)):
        shutil.rmtree(where, ignore_errors=True)
        os.mkdir(where)
        fds = FileDistroStream(base_dir=where)
        write(fds, where, tag, n)
        seen.append(compss_wait_on(read(fds)))
    print("RESULT", {"seen": seen})
