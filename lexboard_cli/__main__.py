import sys

from lexboard_cli.client import main

sys.exit(main())
