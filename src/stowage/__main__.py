"""Allow ``python -m stowage`` as an alias of the ``stowage`` console script."""

from stowage.cli import main

raise SystemExit(main())
