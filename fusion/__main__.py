import sys

from fusion.cli import main

sys.exit(main.main())
