"""``python -m skillnb``: the same as the ``skillnb`` command (edge layer)."""

from skillnb.cli.main import main

raise SystemExit(main())
