"""@task(is_replicated=True): one copy of the call on every node."""
import os

from pycompss.api.api import compss_barrier, compss_wait_on
from pycompss.api.api import compss_wait_on_file
from pycompss.api.parameter import FILE_INOUT, FILE_OUT, IN, INOUT
from pycompss.api.task import task


@task(returns=str, is_replicated=True)
def setup(tag):
    # one file per node agent (the executor's parent), as a node-local setup step would
    with open(f"{tag}-{os.getpid()}-{os.getppid()}", "w"):
        pass
    return "done"


class Cache(object):
    @task(target_direction=IN, isReplicated=True)
    def warm(self):
        return None


class Counter(object):
    def __init__(self):
        self.n = 0


@task(c=INOUT, is_replicated=True, returns=1)
def bump(c, k):
    c.n += k                    # every copy reads the same version
    return c.n


@task(log=FILE_INOUT, fresh=FILE_OUT, is_replicated=True)
def stamp(log, fresh, word):
    with open(log) as f:        # every copy reads the same version...
        text = f.read()
    with open(log, "w") as f:   # ...and writes its own: the first copy's is the new one
        f.write(text + word)
    with open(fresh, "w") as f:
        f.write(word)


@task(returns=1)
def read(c):
    return c.n


if __name__ == "__main__":
    value = compss_wait_on(setup("copy"))
    Cache().warm()
    compss_barrier()
    files = [f for f in os.listdir(".") if f.startswith("copy-")]
    c = Counter()
    bumped = bump(c, 5)
    after = read(c)             # reads the one version every copy made together
    with open("log.txt", "w") as f:
        f.write("hello")
    stamp("log.txt", "fresh.txt", ", copies!")
    compss_wait_on_file("log.txt", "fresh.txt")
    print("RESULT", {"copies": len(files), "agents": len({f.split("-")[2] for f in files}),
                     "value": value, "bumped": compss_wait_on(bumped),
                     "after": compss_wait_on(after), "counter": compss_wait_on(c).n,
                     "files": [open("log.txt").read(), open("fresh.txt").read()]})
