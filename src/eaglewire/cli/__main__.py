import sys

from eaglewire.cli.app import main

sys.exit(main())
