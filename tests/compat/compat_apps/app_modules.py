"""An application split into modules: tasks, classes and binaries imported from compat_helpers."""
from compat_helpers import Acc, echo_params, path_of, split_pair, write

from pycompss.api.api import compss_barrier, compss_set_wall_clock, compss_wait_on
from pycompss.api.api import compss_wait_on_file

if __name__ == "__main__":
    acc = Acc()
    acc.add(1)
    acc.add(2)
    acc = compss_wait_on(acc)
    pair = compss_wait_on(split_pair(42))
    write("w.txt", "written")
    echo_params("x", "y", "echo.txt")
    returned = compss_wait_on(path_of("some/path.txt"))
    compss_barrier()
    compss_wait_on_file("w.txt", "echo.txt")
    print("RESULT", {"acc": acc.items, "pair": pair, "returned": returned,
                     "file": open("w.txt").read(), "params": open("echo.txt").read().strip()})
    if sys.argv[1:] == ["limit"]:  # noqa: F821 - the launcher's globals
        import time
        from compat_helpers import split_pair as sp
        compss_set_wall_clock(1)
        sp(1)
        time.sleep(30)
        print("not reached")
