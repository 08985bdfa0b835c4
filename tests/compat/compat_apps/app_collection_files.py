"""COLLECTION_FILE_OUT / _INOUT: each file is an output that later tasks read in the same run,
into directories that do not exist yet; Keep_rename on a file collection."""
import os

from pycompss.api.api import compss_wait_on, compss_wait_on_file
from pycompss.api.parameter import (COLLECTION_FILE_IN, COLLECTION_FILE_INOUT,
                                    COLLECTION_FILE_OUT, Keep_rename, Type)
from pycompss.api.task import task


@task(paths=COLLECTION_FILE_OUT)
def write(paths, text):
    for i, p in enumerate(paths):
        with open(p, "w") as f:
            f.write(f"{text}{i}")


@task(paths=COLLECTION_FILE_INOUT)
def append(paths, text):
    for p in paths:
        with open(p, "a") as f:
            f.write(text)


@task(returns=1, paths=COLLECTION_FILE_IN)
def read(paths):
    return [(os.path.basename(p), open(p).read()) for p in paths]


@task(returns=1, paths={Type: COLLECTION_FILE_OUT, Keep_rename: True})
def write_renamed(paths):
    for p in paths:
        with open(p, "w") as f:
            f.write("kr")
    return [os.path.basename(p).endswith(".IT") for p in paths]


if __name__ == "__main__":
    files = ["one/a.txt", "two/b.txt"]
    write(files, "x")
    append(files, "+")
    got = read(files)
    renamed = write_renamed(["three/c.txt"])
    again = read(["three/c.txt"])
    compss_wait_on_file(*files, "three/c.txt")
    print("RESULT", {"read": compss_wait_on(got), "renamed": compss_wait_on(renamed),
                     "again": compss_wait_on(again),
                     "on_disk": [open(p).read() for p in files + ["three/c.txt"]]})
