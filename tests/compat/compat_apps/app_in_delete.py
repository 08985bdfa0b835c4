"""IN_DELETE: the task reads the value; the runtime then forgets the object."""
from pycompss.api.api import compss_wait_on
from pycompss.api.parameter import COLLECTION_IN_DELETE, IN_DELETE, INOUT
from pycompss.api.task import task
from pycompss.runtime.management.object_tracker import OT


@task(returns=1, bag=IN_DELETE)
def total(bag):
    return sum(bag)


@task(bag=INOUT)
def push(bag, v):
    bag.append(v)


@task(returns=1, bags=COLLECTION_IN_DELETE)
def sizes(bags):
    return [len(b) for b in bags]


if __name__ == "__main__":
    fresh = [1, 2]
    first = compss_wait_on(total(fresh))             # never followed: nothing to forget
    kept = [10]
    push(kept, 5)                                    # followed now (INOUT)...
    followed = OT.get_object_id(kept) != ""
    read = total(kept)                               # ...this reads the task's version,
    after = OT.get_object_id(kept)                   # then the runtime forgets it
    a, b = [1], [2, 3]
    push(b, 4)
    lens = sizes([a, b])
    print("RESULT", {"first": first, "fresh": OT.get_object_id(fresh), "followed": followed,
                     "read": compss_wait_on(read), "after": after,
                     "pending": after in OT.pending_to_synchronize,
                     "sizes": compss_wait_on(lens), "b_after": OT.get_object_id(b)})
