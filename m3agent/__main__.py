import sys

from m3agent.cli import main

sys.exit(main())
