"""Steps scripts (see harness.steps): importing this package registers every one."""
from . import c_test_drive  # noqa: F401
