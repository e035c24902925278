"""Entry script for spark-submit, one component per application.

    spark-submit $(fusion spark-submit-args) --config pipeline.toml --only counter

``fusion spark-submit-args`` prints ``--jars <connector jars> <path of this file>``.
"""

import sys

from fusion.cli import main

if __name__ == "__main__":
    sys.exit(main(["run", "--submitted", *sys.argv[1:]]))
