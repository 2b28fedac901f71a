"""The ``skillnb`` command line (edge layer)."""
