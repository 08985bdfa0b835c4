"""``pycompss.streams``: PyCOMPSs's distributed streams (object and file streams).

The classes of :mod:`.distro_stream` are taskflow's own streams
(:mod:`taskflow.wire.streams`) under PyCOMPSs's names and signatures: a task
declares them ``STREAM_OUT`` / ``STREAM_IN``; the master keeps them (no Kafka,
no stream server). docs/guide/streams.md says what differs.
"""
