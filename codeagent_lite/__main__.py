import sys

from .cli import main

# Guarded: verify's worker processes import this module by name on platforms without fork (Windows).
if __name__ == "__main__":
    sys.exit(main())
