"""`python -m jetson_env`: the `jetson-env` command."""

import sys

from jetson_env.head_start import main

sys.exit(main())
