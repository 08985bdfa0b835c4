"""A run as a Workflow Run Crate (RO-Crate; the Workflow Run and Provenance Run Crate
profiles), made from its journal with the ``rocrate`` package: ``taskflow crate RUN``,
``taskflow run --crate`` (:mod:`.build`; the files' digests: :mod:`.digests`; the
programs the tasks ran: :mod:`.software`)."""
