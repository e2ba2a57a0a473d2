import os
import sys

# The package is imported from the source tree, as the process tests run it.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
collect_ignore = ["proc"]
