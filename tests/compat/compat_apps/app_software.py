"""@software: a task described by a JSON file (binary with prolog/epilog, a Python task)."""
import os

from pycompss.api.api import compss_barrier, compss_wait_on
from pycompss.api.software import software

HERE = os.path.dirname(os.path.abspath(__file__))


@software(config_file=os.path.join(HERE, "software_binary.json"))
def make(work_dir, word, copy):
    pass


@software(config_file=os.path.join(HERE, "software_task.json"))
def size(path):
    return os.path.getsize(path)


if __name__ == "__main__":
    code = compss_wait_on(make("wd", "hello", "copy.txt"))
    compss_barrier()
    open("in.bin", "wb").write(b"12345")
    print("RESULT", {"exit": code, "made": open("wd/made.txt").read().strip(),
                     "copy": open("copy.txt").read().strip(),
                     "size": compss_wait_on(size("in.bin"))})
