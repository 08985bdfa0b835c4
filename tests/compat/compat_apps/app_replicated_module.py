"""A replicated task method of a class from the application's own module, on two nodes."""
from pycompss.api.api import compss_wait_on
from replica_model import Model

if __name__ == "__main__":
    m = Model()
    built = m.build(21)
    print("RESULT", {"built": compss_wait_on(built), "ready": compss_wait_on(m.ask()),
                     "model": compss_wait_on(m).ready})
