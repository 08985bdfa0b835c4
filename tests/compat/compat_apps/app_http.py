"""@http: REST calls as tasks, to the services the resources file lists (--resources)."""
from pycompss.api.api import compss_wait_on
from pycompss.api.http import http
from pycompss.api.parameter import INOUT
from pycompss.api.task import task


@http(service_name="service_1", request="GET", resource="length/{{message}}")
@task(returns=str)
def raw(message):
    pass


@http(service_name="service_1", request="GET", resource="length/{{message}}",
      produces="{'length': '{{return_0}}'}")
@task(returns=int)
def length(message):
    pass


@http(service_name="service_1", request="POST", resource="echo", payload="{{payload}}",
      produces="{'got': {'a': '{{return_0}}', 'b': '{{return_1}}'}}")
@task(returns=2)
def post(payload):
    pass


@http(service_name="service_1", request="GET", resource="length/{{word}}",
      produces="{'length': '{{n}}'}", updates="{{event}}.size = {{n}}")
@task(event=INOUT)
def annotate(event, word):
    pass


@http(service_name="service_1", request="GET", resource="missing")
@task(returns=str)
def missing():
    pass


if __name__ == "__main__":
    out = {"raw": compss_wait_on(raw("hello")), "length": compss_wait_on(length("abcd")),
           "post": compss_wait_on(post({"a": 1, "b": [2, 3]}))}
    ev = {"name": "e"}
    annotate(ev, "xyz")
    out["updates"] = compss_wait_on(ev)
    try:
        compss_wait_on(missing())
        out["error"] = "no error"
    except Exception as exc:
        out["error"] = "404" in str(exc)
    print("RESULT", sorted(out.items()))
