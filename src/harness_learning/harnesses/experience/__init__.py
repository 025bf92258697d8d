"""The experience library: judged changes kept across runs, with what each did where it was
tried (`entry`), stored (`library`: a directory, `sqlite_library`, or a PostgreSQL database,
`postgres_library`), made safe to share (`redact`), and ranked for a new run by
their measured effect on similar tasks (`choice`)."""

# imported to register the backends in library.BACKENDS
from harness_learning.harnesses.experience import postgres_library, sqlite_library  # noqa: F401
from harness_learning.harnesses.experience.entry import (
    EDIT,
    OPERATOR,
    SCHEMA_VERSION,
    Entry,
    Outcome,
    Signature,
)
from harness_learning.harnesses.experience.library import (
    Library,
    LibraryError,
    check_location,
    give_location,
)

__all__ = ["EDIT", "OPERATOR", "SCHEMA_VERSION", "Entry", "Library", "LibraryError", "Outcome",
           "Signature", "check_location", "give_location"]
