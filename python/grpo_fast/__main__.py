"""``python -m grpo_fast``: the ``grpo-fast`` command line."""

import sys

from grpo_fast.cli import main

if __name__ == "__main__":
    sys.exit(main())
