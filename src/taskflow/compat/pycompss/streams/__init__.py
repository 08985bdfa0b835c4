"""``pycompss.streams``: distributed streams (Kafka, object and file streams) are not supported."""
from ...unsupported import module

module("pycompss.streams", "distributed streams: Kafka, object and file streams",
       "exchange the data through files (FILE_OUT / FILE_IN) or task results")
