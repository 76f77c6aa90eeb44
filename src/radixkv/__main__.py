"""``python -m radixkv``: the same as the ``radixkv`` command."""

from __future__ import annotations

import sys

from radixkv.cli import main

if __name__ == "__main__":
    sys.exit(main())
