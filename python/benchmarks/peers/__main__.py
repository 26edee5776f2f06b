import sys

from benchmarks.peers.cli import main

sys.exit(main())
