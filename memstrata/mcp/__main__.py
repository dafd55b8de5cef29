"""``python -m memstrata.mcp ARGS`` is ``memstrata mcp ARGS``."""

import sys

from memstrata.cli import main

if __name__ == "__main__":
    main(["mcp", *sys.argv[1:]], prog_name="memstrata")
