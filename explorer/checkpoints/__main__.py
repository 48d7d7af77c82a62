import sys

from explorer.checkpoints.conversion import main

sys.exit(main())
