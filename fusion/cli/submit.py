"""Entry script for spark-submit, one component per application.

    spark-submit $(fusion spark-submit-args) --config pipeline.toml --only counter

``fusion spark-submit-args`` prints ``--jars <connector jars> --py-files <Fusion's
code as a zip> <path of this file>``: the executors get Fusion from the zip.
"""

import sys

from fusion.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["run", "--submitted", *sys.argv[1:]]))
