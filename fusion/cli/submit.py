"""Entry script for spark-submit, one component per application.

    spark-submit $(fusion spark-submit-args) --config pipeline.toml --only counter

``fusion spark-submit-args`` prints ``--jars <connector jars> --py-files <Fusion's
runtime as a zip> <path of this file>``: the executors get the runtime from the zip.
The driver runs the Fusion installed beside this file, command line included:
spark-submit puts the zip first on its path too, so this puts the install first.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from fusion.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["run", "--submitted", *sys.argv[1:]]))
