
# the factor table and the core plan are measure's (harness.STAGES): their old names here
# keep `from harness.plan import factors` working for code written before the move
from harness.measure import cores, factors, topology  # noqa: E402,F401
