"""@local: futures given in *args and **kwargs are waited for, and the program's variables
(locals and globals) that held them hold the values afterwards."""
from pycompss.api.local import local
from pycompss.api.task import task


@task(returns=1)
def inc(v):
    return [x + 1 for x in v]


@local
def count(first, *rest, **named):
    return [first, [r for r in rest], sorted(named.items())]


G = inc([0])


def main():
    u = inc([1, 2])
    w = inc([5])
    got = count(G, u, 7, w=w)
    return {"got": got, "u": u, "w": w, "G": G}


if __name__ == "__main__":
    out = main()
    print("RESULT", out)
