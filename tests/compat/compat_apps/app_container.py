"""@container under --compat pycompss (issue 37): taskflow's own containers, for a program
(@container above @binary, @binary's older engine=/image= spelling, a @software description's
container section) and for a Python function of the application's module."""
from container_tasks import read_in_image
from pycompss.api.api import compss_wait_on, compss_wait_on_file
from pycompss.api.binary import binary
from pycompss.api.container import container
from pycompss.api.parameter import FILE_OUT
from pycompss.api.software import software
from pycompss.api.task import task

BB = "localhost/taskflow-bb:1"


@container(engine="podman", image=BB)
@binary(binary="sh", args="-c {{script}} sh {{dst}}")
@task(dst=FILE_OUT)
def shell(script, dst):
    pass


@binary(binary="sh", args="-c {{script}}", engine="PODMAN", image=BB, fail_by_exit_value=False)
@task(returns=int)
def exits(script):
    pass


@software(config_file="software_container.json")
def described(script):
    pass


WHERE = "test -e /etc/os-release && echo on the node || echo in the image"

if __name__ == "__main__":
    shell(WHERE + " > $1", "out.txt")
    code = exits("exit 3")
    described_code = described("test -e /etc/os-release; exit $((4 + $?))")
    got = read_in_image("out.txt", 2)
    compss_wait_on_file("out.txt")
    print("RESULT", {"file": open("out.txt").read(), "code": compss_wait_on(code),
                     "described": compss_wait_on(described_code),
                     "python": compss_wait_on(got)})
