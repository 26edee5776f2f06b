import sys

from benchmarks.peers.runner import main

sys.exit(main())
