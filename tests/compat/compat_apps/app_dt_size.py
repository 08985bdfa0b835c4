"""@dt FILE_TO_COLLECTION with size=N: the task gets the first N values the function gives."""
from pycompss.api.api import compss_wait_on
from pycompss.api.data_transformation import FILE_TO_COLLECTION, dt
from pycompss.api.parameter import COLLECTION_IN
from pycompss.api.task import task


def words(path):
    with open(path) as f:
        return f.read().split()


@dt(target="data", function=words, type=FILE_TO_COLLECTION, size=3)
@task(returns=1, data=COLLECTION_IN)
def joined(data):
    return "-".join(data)


if __name__ == "__main__":
    with open("words.txt", "w") as f:
        f.write("a b c d e")
    print("RESULT", {"joined": compss_wait_on(joined("words.txt"))})
